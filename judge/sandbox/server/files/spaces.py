"""What an execution may leave for the next one in its slot, and how each execution gets its own.

In the ``namespaces`` tier a slot's namespaces live as long as its server, so every counter and
object they hold could carry bits from one execution to the next.  Each one is made fresh or
unguessable here:

* **the work dir and ``/dev/shm``**: each execution gets its own tmpfs, mounted on the slot's fixed
  space directory (`Jail.space_dir`, root's, mode 0711), holding ``x<random>/w`` (the work dir, the
  slot uid's), its done FIFO ``w.done``, and ``shm``, where the slot's ``/dev/shm`` links
  (`judge.sandbox.server.mounts.private_dev`); its inode numbers and contents start from nothing
  every time.  Programs cannot list the space's root nor the work base, so the random name is not
  found.  An execution's tmpfs is not unmounted when it ends: the next one is mounted over it, on a
  small holder tmpfs (`Jail.hold_dir`), and every `STACK_MAX` executions the holder is unmounted with
  everything on it, in one unmount (an unmount waits for an expedited RCU grace period, an
  interrupt to every busy CPU).  A spare discarded before it ran anything gives its work dir to the
  next spare (`Spaces.recycle`), so the slot mounts one tmpfs per execution and unmounts every
  `STACK_MAX`, whatever the programs did: nothing a program sees (its tmpfs's device number
  included) depends on what an earlier one did.  A covered tmpfs that still
  holds more than a few files or data is emptied before the next mount covers it, so hidden tmpfs
  hold little memory;
* **the pid counter**: before each spare is forked, the pid namespace's last pid is set to a random
  value (``/proc/sys/kernel/ns_last_pid``, through a descriptor opened before ``/proc`` turned
  read-only), so a program's pid says nothing of how many processes earlier executions made;
* POSIX message queues and SysV IPC are refused by the seccomp filter (`judge.sandbox.kernel.seccomp`).

Other tiers share the host's namespaces: there the work dir only gets a random name, and it is removed
entry by entry (`judge.sandbox.server.files.cleanup.remove_tree`).
"""

from __future__ import annotations

import os

from judge.sandbox.kernel import namespaces
from judge.sandbox.lazylog import get_logger
from judge.sandbox.server.files.cleanup import remove_tree
from judge.sandbox.server.files.workdir import done_path, give_to
from judge.sandbox.server.jail import WORK_TMPFS_INODES, WORK_TMPFS_MB, Jail
from judge.sandbox.server.phases import PhaseClock

logger = get_logger('judge.sandbox.server.files.spaces')

STACK_MAX = 32
"""Executions whose tmpfs stay mounted, one over the other, until the holder is unmounted."""
LEFT_INODES = 16
LEFT_BYTES = 64 * 1024
"""A covered tmpfs with more entries or data than these is emptied before the next mount (an
execution's own entries and its source fit), so hidden tmpfs hold at most `STACK_MAX` times as much."""
PID_FLOOR = 300
"""Random pids start above the pids of the slot's own processes (its server, warm parents and their
renewals)."""


def _random_below(bound: int) -> int:
    return int.from_bytes(os.urandom(8), 'little') % bound


class Spaces:
    """A slot's work dirs, pid counter and ``/dev/shm``, fresh for each execution (see the module's doc)."""

    def __init__(self, jail: Jail, phases: PhaseClock) -> None:
        self.ids = jail
        self.phases = phases
        self.work_base = jail.work_base
        self.own = jail.tier == 'namespaces'
        self.space_dir = jail.space_dir
        self.hold_dir = jail.hold_dir
        self._holder = False
        self._stacked = 0
        """Execution tmpfs on the mounted holder."""
        self._recycled: str | None = None
        """A discarded spare's work dir, untouched by any program: the next spare's."""
        self._mount_space = namespaces.TmpfsMount(self.space_dir, WORK_TMPFS_MB, mode=0o711, inodes=WORK_TMPFS_INODES)
        self._last_pid_fd = jail.last_pid_fd
        self._pid_span = 0
        if self.own:
            os.makedirs(self.hold_dir, 0o711, exist_ok=True)
        if self._last_pid_fd >= 0:
            try:
                with open('/proc/sys/kernel/pid_max') as f:
                    self._pid_span = max(0, min(int(f.read()), 1 << 22) - PID_FLOOR - 65536)
            except (OSError, ValueError):
                self._pid_span = 0

    def new_workdir(self) -> str:
        """A fresh, empty work dir of random name, the slot uid's (with own namespaces: on a tmpfs of its
        own, whose ``shm`` is ``/dev/shm``; one at a time: drop the last one first)."""
        name = os.urandom(8).hex()
        if not self.own:
            path = os.path.join(self.work_base, f'w{name}')
            os.mkdir(path, 0o700)
            give_to(self.ids, path)
            return path
        if self._recycled is not None:
            path, self._recycled = self._recycled, None
            return path
        if not self._holder:
            namespaces.mount_tmpfs(self.hold_dir, 1, mode=0o711, inodes=8)
            self._holder = True
            os.mkdir(self.space_dir, 0o711)
        self._mount_space()
        self.phases.lap('workdir: tmpfs')
        self._stacked += 1
        top = os.path.join(self.space_dir, f'x{name}')
        os.mkdir(top, 0o711)
        path = os.path.join(top, 'w')
        os.mkdir(path, 0o700)
        give_to(self.ids, path)
        shm = os.path.join(self.space_dir, 'shm')
        os.mkdir(shm)
        os.chmod(shm, 0o1777)  # past the umask
        return path

    def drop_workdir(self, path: str) -> None:
        """Remove a work dir, its done FIFO and everything in it (raises `CleanupError` when it cannot)."""
        if not self.own:
            remove_tree(path)
            try:
                os.unlink(done_path(path))
            except FileNotFoundError:  # not warm Python
                pass
            return
        if path == self._recycled:
            self._recycled = None
        if self._stacked >= STACK_MAX:
            self.release()
        elif self._holder and _holds_something(self.space_dir):
            remove_tree(self.space_dir, keep_root=True)

    def recycle(self, path: str) -> None:
        """Drop the work dir of a spare that ran no program: with own namespaces, keep it for the next
        spare (without the done FIFO a request may have made); else remove it."""
        if not self.own:
            self.drop_workdir(path)
            return
        try:
            os.unlink(done_path(path))
        except FileNotFoundError:
            pass
        self._recycled = path

    def release(self) -> None:
        """Unmount the holder and every execution tmpfs on it (own namespaces only)."""
        if not self._holder:
            return
        self._holder, self._stacked, self._recycled = False, 0, None
        try:
            namespaces.umount2(self.hold_dir, namespaces.MNT_DETACH)
        except OSError:  # not mounted (a failed mount): remove what is there
            remove_tree(self.hold_dir, keep_root=True)

    def randomize_pids(self) -> None:
        """The next process of the slot's pid namespace gets a random pid (own namespaces only)."""
        if not self._pid_span:
            return
        try:
            os.pwrite(self._last_pid_fd, str(PID_FLOOR + _random_below(self._pid_span)).encode(), 0)
        except OSError as e:
            logger.warning('cannot set the pid namespace last pid (%s); pids stay sequential', e)
            self._pid_span = 0


def _holds_something(path: str) -> bool:
    """Whether the tmpfs at ``path`` holds more than `LEFT_INODES` entries or `LEFT_BYTES` of data."""
    st = os.statvfs(path)
    return st.f_files - st.f_ffree > LEFT_INODES or (st.f_blocks - st.f_bfree) * st.f_frsize > LEFT_BYTES
