"""The warm parent (zygote) and what its forked children do before the program runs.

Import-light: only the small C-backed standard modules that `judge.sandbox.fdio` lists."""
