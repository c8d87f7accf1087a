"""Where live sessions keep their files and who they are: families, uids, work dirs, Landlock layers.

A *family* is a session made from nothing and every session forked from it: one uid of the host's
own range (no slot, no other family shares it) and one size-limited tmpfs, ``<work base>/f<random>``
(root's, mode 0711, not listable).  Each member has a *container* of random name (root's, 0711) holding
its work dir ``w`` (the family uid's, 0700); a fork's containers are made inside its parent's.  Each
member runs under a Landlock layer of its own (`layer`): read-only system paths and its container,
nothing else, with signals and abstract unix sockets scoped to its domain.  So a member reaches
neither its parent's files nor its siblings' (outside its layer), and its parent cannot find its
container (not listable, not a mount, a random name); the parent moves into a new domain at the fork.
"""

from __future__ import annotations

import os
import stat
import threading

from judge.sandbox.kernel import landlock, namespaces
from judge.sandbox.server.files.cleanup import remove_entry, remove_tree

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Family:
    """One family's uid and tmpfs, and how many live members use them."""

    def __init__(self, uid: int, root: str) -> None:
        self.uid = uid
        self.root = root
        self.members = 0


class Spaces:
    """The host's families (see the module's doc)."""

    def __init__(
        self,
        work_base: str,
        uid_base: int,
        max_families: int,
        readable: list[str],
        disk_mb: int,
        mounts: bool,
        scope: bool,
    ) -> None:
        self.work_base = work_base
        self.readable = readable
        self.disk_mb = disk_mb
        self.mounts = mounts
        """Whether each family gets a tmpfs of its own (not without mount rights: plain directories)."""
        self.scope = scope
        self._free = list(range(uid_base + max_families - 1, uid_base - 1, -1))
        self._lock = threading.Lock()
        self._held = landlock.HeldPaths()
        """The read paths opened once (``O_PATH``): a layer per member is made on every fork."""

    def new_family(self) -> Family:
        """A family with a free uid and an empty tmpfs."""
        with self._lock:
            if not self._free:
                raise OSError('no free session uid: too many live session families')
            uid = self._free.pop()
        root = os.path.join(self.work_base, f'f{os.urandom(8).hex()}')
        os.mkdir(root, 0o711)
        if self.mounts:
            namespaces.mount_tmpfs(root, self.disk_mb, mode=0o711, inodes=16384)
        return Family(uid, root)

    def new_member(self, family: Family, parent: str | None = None) -> tuple[str, str]:
        """A member's container (inside ``parent``'s, or at the family's root) and its empty work dir."""
        container = os.path.join(parent or family.root, os.urandom(12).hex())
        os.mkdir(container, 0o711)
        workdir = os.path.join(container, 'w')
        os.mkdir(workdir, 0o700)
        if os.getuid() == 0:
            os.chown(workdir, family.uid, family.uid)
        family.members += 1
        return container, workdir

    def layer(self, container: str) -> int:
        """A Landlock ruleset fd for a member: read the system, write only beneath ``container``."""
        return landlock.build_ruleset(self.readable, [container, '/dev/null'], scope=self.scope, held=self._held)

    def drop_member(self, family: Family, container: str) -> None:
        """Remove a member's work dir (its processes are dead; its forks' containers, inside its own,
        stay); the family's tmpfs goes with its last member."""
        family.members -= 1
        if family.members <= 0:
            self.drop_family(family)
            return
        remove_tree(os.path.join(container, 'w'), keep_root=False)

    def drop_family(self, family: Family) -> None:
        """Unmount and remove the family's tmpfs and give its uid back."""
        if self.mounts:
            try:
                namespaces.umount2(family.root, namespaces.MNT_DETACH)
            except OSError:
                remove_tree(family.root, keep_root=True)
        else:
            remove_tree(family.root, keep_root=True)
        remove_entry(family.root)
        with self._lock:
            self._free.append(family.uid)


def copy_tree(src: str, dst: str, uid: int) -> None:
    """Copy the work dir ``src`` into the empty ``dst`` as ``uid``'s files (regular files, dirs and
    symlinks; never following a link).  The source's session is frozen while this runs."""
    src_fd, dst_fd = os.open(src, _DIR), os.open(dst, _DIR)
    try:
        _copy_into(src_fd, dst_fd, uid)
    finally:
        os.close(src_fd)
        os.close(dst_fd)


def _copy_into(src_fd: int, dst_fd: int, uid: int) -> None:
    with os.scandir(src_fd) as entries:
        for entry in entries:
            st = entry.stat(follow_symlinks=False)
            name, mode = entry.name, stat.S_IMODE(st.st_mode)
            if stat.S_ISDIR(st.st_mode):
                os.mkdir(name, 0o700, dir_fd=dst_fd)
                inner_src = os.open(name, _DIR, dir_fd=src_fd)
                inner_dst = os.open(name, _DIR, dir_fd=dst_fd)
                try:
                    _copy_into(inner_src, inner_dst, uid)
                    os.fchmod(inner_dst, mode)
                    _own(inner_dst, uid)
                finally:
                    os.close(inner_src)
                    os.close(inner_dst)
            elif stat.S_ISREG(st.st_mode):
                fin = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=src_fd)
                fout = os.open(
                    name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=dst_fd
                )
                try:
                    left = os.fstat(fin).st_size
                    while left > 0:
                        done = os.copy_file_range(fin, fout, left)
                        if done <= 0:
                            break
                        left -= done
                    os.fchmod(fout, mode)
                    _own(fout, uid)
                finally:
                    os.close(fin)
                    os.close(fout)
            elif stat.S_ISLNK(st.st_mode):
                os.symlink(os.readlink(name, dir_fd=src_fd), name, dir_fd=dst_fd)
                if os.getuid() == 0:
                    os.chown(name, uid, uid, dir_fd=dst_fd, follow_symlinks=False)


def _own(fd: int, uid: int) -> None:
    if os.getuid() == 0:
        os.fchown(fd, uid, uid)
