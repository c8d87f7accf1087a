"""Kernel interfaces through ctypes and cgroupfs: namespaces, Landlock, seccomp, cgroups.

Import-light: the warm parents and their children use them."""
