"""Which isolation tier a slot runs, and what its programs see of the host: paths and environment.

Tiers, strongest first (docs/sandbox.md, "Tiers"):

* ``namespaces``: the slot server lives in its own net/ipc/uts/mount/pid namespaces, with a
  read-only root, a fresh ``/proc``, the project and home directories hidden, and private
  size-limited tmpfs work and ``/dev/shm`` dirs; plus everything of ``landlock``.
* ``landlock``: a per-slot uid, memory+pids cgroups, Landlock (files, TCP, signals), seccomp.
* ``uid``: a per-slot uid, rlimits (``RLIMIT_AS`` for memory), seccomp, process-group and uid sweep.
* ``none``: the worker's own uid, rlimits only.  Refused unless ``allow_unsafe`` is set.

``auto`` picks the strongest tier this host permits; asking for a tier the host cannot provide
is an error, never a silent downgrade.  Setting a tier up is `judge.sandbox.server.jail`'s job.
"""

from __future__ import annotations

import glob
import os
import sys

from judge.sandbox.errors import JailError
from judge.sandbox.kernel import cgroups, landlock, namespaces

TIERS = ('namespaces', 'landlock', 'uid', 'none')
SAFE_PATH = '/usr/local/bin:/usr/bin:/bin'
NS_FLAGS = (
    namespaces.CLONE_NEWNS
    | namespaces.CLONE_NEWPID
    | namespaces.CLONE_NEWNET
    | namespaces.CLONE_NEWIPC
    | namespaces.CLONE_NEWUTS
)
READ_PATHS = (
    '/usr',
    '/lib',
    '/lib64',
    '/lib32',
    '/bin',
    '/sbin',
    '/etc/ld.so.cache',
    '/etc/localtime',
    '/etc/alternatives',
    '/etc/passwd',
    '/etc/group',
    '/etc/nsswitch.conf',
    '/sys/devices/system/cpu',
    '/dev/null',
    '/dev/zero',
    '/dev/urandom',
    '/dev/random',
    '/opt',
)
THREAD_VARS = (
    'OMP_NUM_THREADS',
    'OPENBLAS_NUM_THREADS',
    'MKL_NUM_THREADS',
    'BLIS_NUM_THREADS',
    'VECLIB_MAXIMUM_THREADS',
    'NUMEXPR_NUM_THREADS',
    'NUMBA_NUM_THREADS',
)
"""Thread-count variables of BLAS/OpenMP/numexpr/numba, all set to 1 in the programs' environment."""


def available_tiers() -> list[str]:
    """Tiers this process could run, strongest first."""
    tiers = []
    if os.getuid() == 0:
        if cgroups.SlotCgroup.available() and landlock.abi_version() >= 1:
            if namespaces.probe_unshare(NS_FLAGS):
                tiers.append('namespaces')
            tiers.append('landlock')
        tiers.append('uid')
    tiers.append('none')
    return tiers


def choose_tier(requested: str, allow_unsafe: bool) -> str:
    """The tier to run for ``requested`` (a tier's name or ``auto``); `JailError` when this host
    cannot provide it, or when it is ``none`` without ``allow_unsafe``."""
    if requested not in ('auto', *TIERS):
        raise JailError(f'unknown sandbox tier {requested!r}; choose one of auto, {", ".join(TIERS)}')
    tiers = available_tiers()
    if requested == 'auto':
        requested = tiers[0]
    if requested not in tiers:
        raise JailError(f'sandbox tier {requested!r} is not available here (available: {", ".join(tiers)})')
    if requested == 'none' and not allow_unsafe:
        raise JailError(
            'no isolation is available (not root): refusing to run untrusted code; '
            'set JUDGE_ALLOW_UNSAFE=1 to run it anyway on a trusted machine'
        )
    return requested


def read_paths(extra: list[str]) -> list[str]:
    """What programs may read of the host: system paths, the JDK's configuration, ``extra`` and the
    interpreter's prefixes."""
    prefixes = {sys.prefix, sys.base_prefix, os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))}
    jdk_conf = sorted(glob.glob('/etc/java-*-openjdk'))  # Debian's JDK config (java.security, jvm.cfg)
    return [*READ_PATHS, *jdk_conf, *extra, *sorted(p for p in prefixes if p not in ('/', '/usr'))]


def child_env(extra: dict[str, str]) -> dict[str, str]:
    """A clean environment: no secrets (``REDIS_URI``...) from the worker ever reach user code.

    ``HOME`` and ``TMPDIR`` are added by each child: they are its work dir.
    """
    env = {
        'PATH': SAFE_PATH,
        'LANG': 'C.UTF-8',
        'LC_ALL': 'C.UTF-8',
        'PYTHONDONTWRITEBYTECODE': '1',
        'PYTHONIOENCODING': 'utf-8',
        # One BLAS/OpenMP thread per submission: the slot's CPU share is one core.
        **dict.fromkeys(THREAD_VARS, '1'),
    }
    env.update(extra)
    return env
