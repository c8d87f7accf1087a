"""The slot's jail: which isolation tier is active and what each execution gets from it.

Tiers, strongest first (see the README's sandbox section):

* ``namespaces``: the slot server lives in its own net/ipc/uts/mount/pid namespaces with a
  read-only root; plus everything of ``landlock``.
* ``landlock``: per-slot uid, memory+pids cgroups, Landlock (files, TCP, signals), seccomp.
* ``uid``: per-slot uid, rlimits (``RLIMIT_AS`` for memory), process-group and uid sweep.
* ``none``: same uid as the worker, rlimits only.  Refused unless ``allow_unsafe`` is set.

``auto`` picks the strongest tier this host permits.
"""

from __future__ import annotations

import logging
import os
import signal
from typing import Any

from judge.sandbox.child import ChildPlan
from judge.sandbox.execute import ExecOutcome
from judge.sandbox.limits import Limits

logger = logging.getLogger('judge.sandbox.jail')

TIERS = ('namespaces', 'landlock', 'uid', 'none')
SAFE_PATH = '/usr/local/bin:/usr/bin:/bin'


class JailError(RuntimeError):
    """The requested isolation cannot be provided on this host."""


class Jail:
    """Per-slot isolation state, prepared once when the slot server starts."""

    def __init__(self, config: dict[str, Any]) -> None:
        self.slot = int(config.get('slot', 0))
        self.requested = str(config.get('tier', 'auto'))
        self.allow_unsafe = bool(config.get('allow_unsafe', False))
        self.work_root = str(config.get('work_root', '/tmp/judge-work'))
        self.extra_env = {str(k): str(v) for k, v in (config.get('env') or {}).items()}
        self.is_root = os.getuid() == 0
        self.uid: int | None = None
        self.gid: int | None = None
        self.detail: dict[str, Any] = {}
        self.tier = self._choose(config)
        self.work_base = os.path.join(self.work_root, f'slot{self.slot}')
        self._prepare_work_base()
        logger.info('slot %d: isolation tier %s', self.slot, self.tier)

    def _choose(self, config: dict[str, Any]) -> str:
        requested = self.requested
        if requested not in ('auto', *TIERS):
            raise JailError(f'unknown sandbox tier {requested!r}; choose one of auto, {", ".join(TIERS)}')
        if requested in ('auto', 'namespaces', 'landlock', 'uid') and self.is_root:
            self.uid = self.gid = int(config.get('uid_base', 61000)) + self.slot
            self.detail['uid'] = self.uid
            return 'uid'
        if requested != 'none' and requested != 'auto':
            raise JailError(f'sandbox tier {requested!r} needs root')
        if not self.allow_unsafe:
            raise JailError(
                'no isolation is available (not root): refusing to run untrusted code; '
                'set JUDGE_ALLOW_UNSAFE=1 to run it anyway on a trusted machine'
            )
        return 'none'

    def _prepare_work_base(self) -> None:
        os.makedirs(self.work_root, mode=0o711, exist_ok=True)
        if self.uid is not None:
            path = os.path.realpath(self.work_root)
            while True:
                if not os.stat(path).st_mode & 0o001:
                    raise JailError(f'work root {self.work_root!r}: {path!r} is not searchable by the slot uids')
                if path == '/':
                    break
                path = os.path.dirname(path)
        if os.path.lexists(self.work_base):
            import shutil

            shutil.rmtree(self.work_base, ignore_errors=True)
        os.mkdir(self.work_base, 0o711)

    def effective_limits(self, limits: Limits) -> Limits:
        """Limits as this tier enforces them (no ``RLIMIT_AS`` when a memory cgroup does it)."""
        return limits

    def child_env(self, workdir: str) -> dict[str, str]:
        """A clean environment: no secrets (``REDIS_URI``...) from the worker ever reach user code."""
        env = {
            'PATH': SAFE_PATH,
            'HOME': workdir,
            'TMPDIR': workdir,
            'LANG': 'C.UTF-8',
            'LC_ALL': 'C.UTF-8',
            'PYTHONDONTWRITEBYTECODE': '1',
            'PYTHONIOENCODING': 'utf-8',
            'OPENBLAS_NUM_THREADS': '1',
            'OMP_NUM_THREADS': '1',
        }
        env.update(self.extra_env)
        return env

    def fill_plan(self, plan: ChildPlan) -> None:
        """Add the tier's per-child steps (uid, cgroups, filters) to ``plan``."""
        plan.uid, plan.gid = self.uid, self.gid

    def memory_exceeded(self, outcome: ExecOutcome) -> bool:
        """Whether the execution hit the memory limit, as far as the tier can tell."""
        return False

    def kill_all(self) -> None:
        """Kill every process the slot's executions may have left behind."""
        if self.uid is None or not self.is_root:
            return
        _kill_uid(self.uid)


def _kill_uid(uid: int) -> None:
    """SIGKILL every process of ``uid`` from a helper that has become ``uid`` first.

    ``kill(-1)`` reaches only processes the caller may signal; as the slot's own non-root uid
    that is exactly the slot's leftovers (setsid daemons included).  The helper checks it is
    no longer root before it sends anything: as root ``kill(-1)`` would kill the machine.
    """
    if uid <= 0:
        return
    pid = os.fork()
    if pid == 0:  # pragma: no cover - child
        try:
            os.setgroups([])
            os.setresgid(uid, uid, uid)
            os.setresuid(uid, uid, uid)
            if os.getuid() != 0 and os.geteuid() != 0 and os.getuid() == uid:
                os.kill(-1, signal.SIGKILL)
        except BaseException:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
