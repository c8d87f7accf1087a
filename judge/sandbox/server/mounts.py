"""The filesystem view of the ``namespaces`` tier, set up once by the slot server as pid 1 of its
fresh namespaces: a read-only root, a fresh ``/proc`` that shows a program only its own processes,
host directories hidden, and private, bounded scratch space."""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Sequence

from judge.sandbox.kernel import namespaces

HIDDEN_DIRS = ('/root', '/home', '/var/lib', '/var/log', '/var/cache', '/srv', '/mnt', '/media', '/run', '/boot')
SCRATCH_DIRS = ('/tmp', '/var/tmp')
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
SHM_TMPFS_MB = 16
SHM_TMPFS_INODES = 4096
"""An execution's ``/dev/shm``: its size and entries (`judge.sandbox.server.files.spaces`)."""
DEV_NODES = ('null', 'zero', 'full', 'random', 'urandom')
"""The host's device nodes a slot's ``/dev`` shows (Landlock allows reading only some of them)."""
DEV_LINKS = {
    'fd': '/proc/self/fd',
    'stdin': '/proc/self/fd/0',
    'stdout': '/proc/self/fd/1',
    'stderr': '/proc/self/fd/2',
}
NS_LAST_PID = '/proc/sys/kernel/ns_last_pid'


def mount_private_proc() -> None:
    """A ``/proc`` of the slot's pid namespace where each uid sees only its own processes.

    A program then cannot read the slot server's or the zygote's command line, status or maps.
    """
    try:
        namespaces.mount_proc('/proc', 'hidepid=invisible')
    except OSError as e:  # kernels before 5.8 know only the numeric form
        if e.errno != errno.EINVAL:
            raise
        namespaces.mount_proc('/proc', 'hidepid=2')


def enter_filesystem(
    work_base: str, keep_writable: Sequence[str], visible: Sequence[str], hide: Sequence[str], shm: str
) -> int:
    """Make the mount namespace the slot's own (call as pid 1 of fresh mount and pid namespaces); a
    descriptor that sets the pid namespace's last pid (-1 when it cannot be had: `judge.sandbox.server.files.spaces`).

    ``keep_writable`` mount points stay writable (cgroup hierarchies, the compile cache: written by
    the root server only); ``visible`` paths stay reachable inside hidden or scratch directories;
    ``/dev/shm`` leads to ``shm``, a directory of each execution's own tmpfs.
    """
    namespaces.make_mounts_private()
    os.makedirs(work_base, exist_ok=True)
    mount_private_proc()
    writable_files = []
    try:  # a mount of its own, kept writable below (root's only: DAC and Landlock keep programs out)
        namespaces.mount(NS_LAST_PID, NS_LAST_PID, None, namespaces.MS_BIND)
        writable_files.append(NS_LAST_PID)
    except OSError:
        pass
    private_dev(shm)
    for path in keep_writable:
        os.makedirs(path, mode=0o755, exist_ok=True)
        if not os.path.ismount(path):
            namespaces.mount(path, path, None, namespaces.MS_BIND)
    # Device nodes stay usable (/dev/null, /dev/urandom); DAC keeps the rest root-only.
    namespaces.remount_readonly_recursive('/', keep_writable=[*keep_writable, *writable_files], nodev=False)
    # The interpreter's prefixes (the submission runtime) stay visible, read-only, wherever they
    # live; the directories around them are hidden all the same.
    prefixes = {sys.prefix, sys.base_prefix} - {'/', '/usr'}
    shown = sorted({work_base, *visible, *prefixes})
    for path in (*HIDDEN_DIRS, PROJECT_DIR, *hide):
        if os.path.isdir(path):
            hide_keeping(path, [p for p in shown if inside(p, path)])
    # Scratch space the host cannot see: empty, so no host Unix socket or file is reachable.
    for path in SCRATCH_DIRS:
        if os.path.isdir(path):
            hide_keeping(path, [p for p in shown if inside(p, path)])
    os.makedirs(work_base, exist_ok=True)
    try:
        return os.open(NS_LAST_PID, os.O_WRONLY | os.O_CLOEXEC)
    except OSError:
        return -1


def private_dev(shm: str) -> None:
    """A ``/dev`` of the slot's own: a few of the host's device nodes (bound), the usual links, and
    ``shm`` a link to ``shm`` (a directory of the work space, so each execution can get its own; a
    mount on the host's ``/dev/shm`` would lie outside the Landlock rules)."""
    handles = {}
    for name in DEV_NODES:
        try:
            handles[name] = os.open(f'/dev/{name}', os.O_PATH | os.O_CLOEXEC)
        except FileNotFoundError:
            continue
    try:
        namespaces.mount_tmpfs('/dev', 1, mode=0o755)
        for name, fd in handles.items():
            os.close(os.open(f'/dev/{name}', os.O_CREAT | os.O_WRONLY | os.O_CLOEXEC, 0o666))
            namespaces.mount(f'/proc/self/fd/{fd}', f'/dev/{name}', None, namespaces.MS_BIND)
    finally:
        for fd in handles.values():
            os.close(fd)
    for name, target in {**DEV_LINKS, 'shm': shm}.items():
        os.symlink(target, f'/dev/{name}')


def hide_keeping(path: str, keep: list[str]) -> None:
    """Cover ``path`` with an empty tmpfs, then bind the directories in ``keep`` back at their places."""
    handles = {p: os.open(p, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC) for p in keep if os.path.isdir(p)}
    try:
        if handles:
            namespaces.mount_tmpfs(path, 1, mode=0o755)
            for target, fd in handles.items():
                os.makedirs(target, mode=0o755, exist_ok=True)
                namespaces.mount(f'/proc/self/fd/{fd}', target, None, namespaces.MS_BIND | namespaces.MS_REC)
            namespaces.mount(
                None,
                path,
                None,
                namespaces.MS_REMOUNT | namespaces.MS_RDONLY | namespaces.MS_NOSUID | namespaces.MS_NODEV,
            )
        else:
            namespaces.hide_path(path)
    finally:
        for fd in handles.values():
            os.close(fd)


def inside(path: str, parent: str) -> bool:
    """Whether ``path`` is ``parent`` or beneath it (lexically)."""
    parent = parent.rstrip('/') + '/'
    return (path.rstrip('/') + '/').startswith(parent)
