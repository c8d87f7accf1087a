"""Namespace, prctl and mount helpers (ctypes; Python 3.11 has no ``os.unshare``).

The mount helpers change the caller's mount namespace: call them only after
``unshare(CLONE_NEWNS)`` followed by `make_mounts_private`, otherwise they modify the host's mounts.
Read-only remounts are always per-mount (``mount_setattr`` or ``MS_REMOUNT|MS_BIND``), never of the
superblock, so they cannot affect other mount namespaces.
"""

from __future__ import annotations

import _signal
import ctypes
import errno
import os
import stat

from judge.sandbox.kernel import libc
from judge.sandbox.kernel.libc import set_no_new_privs as set_no_new_privs  # re-exported: the prctl helpers live here
from judge.sandbox.lazylog import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the warm parents: see `judge.sandbox.fdio`
    from collections.abc import Sequence

logger = get_logger('judge.sandbox.kernel.namespaces')

CLONE_NEWNS = 0x00020000
CLONE_NEWCGROUP = 0x02000000
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000
CLONE_NEWNET = 0x40000000

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_NOEXEC = 0x8
MS_REMOUNT = 0x20
MS_NOATIME = 0x400
MS_NODIRATIME = 0x800
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 0x40000
MS_RELATIME = 0x200000
MS_STRICTATIME = 0x1000000
MNT_DETACH = 0x2

SYS_MOUNT_SETATTR = 442  # x86_64 and aarch64
AT_FDCWD = -100
AT_RECURSIVE = 0x8000
MOUNT_ATTR_RDONLY = 0x1
MOUNT_ATTR_NOSUID = 0x2
MOUNT_ATTR_NODEV = 0x4

# per-mount options in /proc/self/mountinfo that a bind remount must keep (locked flags would EPERM)
_KEEP_FLAGS = {
    'nosuid': MS_NOSUID,
    'nodev': MS_NODEV,
    'noexec': MS_NOEXEC,
    'noatime': MS_NOATIME,
    'nodiratime': MS_NODIRATIME,
    'relatime': MS_RELATIME,
    'strictatime': MS_STRICTATIME,
}


class _MountAttr(ctypes.Structure):
    _fields_ = [
        ('attr_set', ctypes.c_uint64),
        ('attr_clr', ctypes.c_uint64),
        ('propagation', ctypes.c_uint64),
        ('userns_fd', ctypes.c_uint64),
    ]


_unshare = libc.libc.unshare
_unshare.argtypes = [ctypes.c_int]
_mount = libc.libc.mount
_mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]
_umount2 = libc.libc.umount2
_umount2.argtypes = [ctypes.c_char_p, ctypes.c_int]


def _encode(value: str | None) -> bytes | None:
    return None if value is None else os.fsencode(value)


# --- namespaces ----------------------------------------------------------------------------------


def unshare(flags: int) -> None:
    """unshare(2) with CLONE_NEW* *flags*; raises OSError."""
    libc.check(_unshare(flags), f'unshare({flags:#x})')


def probe_unshare(flags: int) -> bool:
    """Whether unshare(*flags*) is permitted, tried in a throw-away forked child."""
    pid = os.fork()
    if pid == 0:  # child: try it and leave at once, whatever happens
        code = 1
        try:
            code = 0 if _unshare(flags) == 0 else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


# --- prctl ---------------------------------------------------------------------------------------


def set_pdeathsig(sig: int) -> None:
    """Deliver *sig* to the caller when its parent thread exits (0 clears it)."""
    libc.check(libc.prctl(PR_SET_PDEATHSIG, sig, 0, 0, 0), 'prctl(PR_SET_PDEATHSIG)')


def default_signals() -> None:
    """Every signal unblocked, and SIGINT, SIGQUIT, SIGPIPE and SIGXFSZ at their default action, as in a
    process a shell starts in the foreground.  A worker started in the background by a script ignores
    SIGINT and SIGQUIT, and what it ignores, every program it starts would ignore too: a warm child
    would not see ``KeyboardInterrupt``, a session's cell could not be interrupted."""
    _signal.pthread_sigmask(_signal.SIG_SETMASK, [])
    for sig in (_signal.SIGINT, _signal.SIGQUIT, _signal.SIGPIPE, _signal.SIGXFSZ):
        _signal.signal(sig, _signal.SIG_DFL)


def set_child_subreaper(enabled: bool = True) -> None:
    """Make the caller adopt (and so have to reap) orphaned descendants."""
    libc.check(libc.prctl(PR_SET_CHILD_SUBREAPER, int(enabled), 0, 0, 0), 'prctl(PR_SET_CHILD_SUBREAPER)')


# --- mounts (only inside a private mount namespace) ----------------------------------------------


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    """mount(2); raises OSError."""
    result = _mount(_encode(source), _encode(target), _encode(fstype), flags, _encode(data))
    libc.check(result, f'mount({source!r}, {target!r}, {fstype!r}, {flags:#x})')


def umount2(target: str, flags: int = 0) -> None:
    """umount2(2); raises OSError."""
    libc.check(_umount2(_encode(target), flags), f'umount2({target!r})')


def make_mounts_private() -> None:
    """Stop mount events propagating between this mount namespace and the host (MS_REC|MS_PRIVATE on /)."""
    mount(None, '/', None, MS_REC | MS_PRIVATE)


def _mount_points() -> list[tuple[str, set[str]]]:
    """(mount point, per-mount options) in /proc/self/mountinfo order (parents before children)."""
    import re  # here: the warm parents import this module (see `judge.sandbox.fdio`)

    result = []
    with open('/proc/self/mountinfo', encoding='utf-8', errors='surrogateescape') as f:
        for line in f:
            fields = line.split(' - ')[0].split()
            if len(fields) >= 6:
                point = re.sub(r'\\([0-7]{3})', lambda m: chr(int(m.group(1), 8)), fields[4])
                result.append((point, set(fields[5].split(','))))
    return result


def _remount_fallback(path: str, readonly: bool = True, nodev: bool = True) -> None:
    """Bind-remount every mount at or beneath *path* nosuid, nodev and (un)readonly (pre-5.12 kernels)."""
    base = os.path.normpath(path)
    prefix = base.rstrip('/') + '/'
    failed: list[str] = []
    for point, options in _mount_points():
        if point != base and not point.startswith(prefix):
            continue
        flags = MS_REMOUNT | MS_BIND | MS_NOSUID | (MS_NODEV if nodev else 0) | (MS_RDONLY if readonly else 0)
        for name, flag in _KEEP_FLAGS.items():
            if name in options:
                flags |= flag
        try:
            mount(None, point, None, flags)
        except OSError as exc:
            if exc.errno != errno.ENOENT:  # a vanished or over-mounted point is not an error
                logger.warning('bind remount of %s failed: %s', point, exc)
                failed.append(point)
    if failed:
        raise OSError(errno.EPERM, f'could not remount {"read-only" if readonly else "writable"}: {", ".join(failed)}')


def _mount_setattr(path: str, attr_set: int, attr_clr: int) -> int:
    """mount_setattr(2) with AT_RECURSIVE on *path*; returns 0 or the errno."""
    attr = _MountAttr(attr_set, attr_clr, 0, 0)
    result = libc.syscall(
        ctypes.c_long(SYS_MOUNT_SETATTR),
        ctypes.c_int(AT_FDCWD),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.c_uint(AT_RECURSIVE),
        ctypes.byref(attr),
        ctypes.c_size_t(ctypes.sizeof(attr)),
    )
    return 0 if result == 0 else ctypes.get_errno()


def remount_readonly_recursive(path: str = '/', *, keep_writable: Sequence[str] = (), nodev: bool = True) -> None:
    """Make the mount at *path* (a mount point) and every mount beneath it read-only, nosuid, nodev.

    The mount points in *keep_writable* (and the mounts beneath them) are made writable again, e.g. the
    cgroup hierarchies, so that a child can still join the slot's cgroups.  Uses
    ``mount_setattr(AT_RECURSIVE)`` (Linux >= 5.12), else bind-remounts each mount in turn.
    """
    err = _mount_setattr(path, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | (MOUNT_ATTR_NODEV if nodev else 0), 0)
    if err == errno.ENOSYS:
        logger.debug('mount_setattr unavailable; bind-remounting each mount under %s', path)
        _remount_fallback(path, readonly=True, nodev=nodev)
        for point in keep_writable:
            _remount_fallback(point, readonly=False, nodev=nodev)
        return
    if err:
        raise OSError(err, f'mount_setattr({path!r}): {os.strerror(err)}')
    for point in keep_writable:
        err = _mount_setattr(point, 0, MOUNT_ATTR_RDONLY)
        if err:
            raise OSError(err, f'mount_setattr({point!r}, clear RDONLY): {os.strerror(err)}')


class TmpfsMount:
    """A nosuid,nodev tmpfs mount on one directory, its arguments encoded once, to be made again and
    again (each call mounts a fresh tmpfs over the last)."""

    def __init__(
        self,
        path: str,
        size_mb: int,
        mode: int = 0o755,
        uid: int = 0,
        gid: int = 0,
        *,
        noexec: bool = False,
        inodes: int | None = None,
    ) -> None:
        self.path = path
        self._target = os.fsencode(path)
        self._flags = MS_NOSUID | MS_NODEV | (MS_NOEXEC if noexec else 0)
        options = f'size={size_mb}m,mode={mode:o},uid={uid},gid={gid}' + (f',nr_inodes={inodes}' if inodes else '')
        self._data = options.encode()

    def __call__(self) -> None:
        """Mount a fresh tmpfs on the directory (which must exist); raises OSError."""
        if _mount(b'tmpfs', self._target, b'tmpfs', self._flags, self._data) != 0:
            libc.raise_errno(f'mount(tmpfs, {self.path!r})')


def mount_tmpfs(
    path: str,
    size_mb: int,
    mode: int = 0o755,
    uid: int = 0,
    gid: int = 0,
    *,
    noexec: bool = False,
    inodes: int | None = None,
) -> None:
    """Mount a fresh nosuid,nodev tmpfs of *size_mb* MiB (and at most *inodes* entries) on *path*."""
    os.makedirs(path, exist_ok=True)
    TmpfsMount(path, size_mb, mode, uid, gid, noexec=noexec, inodes=inodes)()


def mount_proc(path: str = '/proc', options: str | None = None) -> None:
    """Mount procfs for the caller's pid namespace on *path* (call it from pid 1 of a new pid namespace).

    *options* is passed as mount data, e.g. ``'hidepid=invisible'``.
    """
    mount('proc', path, 'proc', MS_NOSUID | MS_NODEV | MS_NOEXEC, options)


def hide_path(path: str) -> bool:
    """Cover the directory *path* with an empty read-only tmpfs; False when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        raise NotADirectoryError(errno.ENOTDIR, 'hide_path only covers directories', path)
    mount('tmpfs', path, 'tmpfs', MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, 'size=4k,nr_inodes=1,mode=555')
    return True
