"""Moving a session's forks into their cgroups without waiting for an RCU grace period each time.

Every move of a process between cgroups takes the kernel's global thread-group semaphore for writing.
When nobody has written for a grace period, the first writer waits for one (8 to 20 ms on a 2-CPU VM,
most of the work of forking a session into 16); writers that follow within a grace period do not.
`Primed` starts that wait early: from the moment a session is asked to fork, a thread moves the
parent into the cgroup it is already in (no change for the process) every `INTERVAL_S`, so the wait
overlaps the forks themselves, and stops once the host has moved the children
(`judge.sandbox.server.sessions.forking`).  Each move holds the semaphore for microseconds; a fork in
progress meanwhile waits that long.
"""

from __future__ import annotations

import os
import threading

from judge.sandbox.kernel.hierarchy import write_control

INTERVAL_S = 0.002


class Primed:
    """Keeps cgroup moves cheap until `stop`: a no-op move of ``pid`` into ``cgroup_dir`` (its own)."""

    def __init__(self, cgroup_dir: str, pid: int) -> None:
        self._procs = os.path.join(cgroup_dir, 'cgroup.procs')
        self._pid = str(pid)
        self._stopped = threading.Event()
        self.moves = 0
        """No-op moves made so far."""
        self._thread = threading.Thread(target=self._run, name='primed-cgroup-moves', daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stopped.is_set():
            try:
                write_control(self._procs, self._pid)
                self.moves += 1
            except OSError:  # the process or its cgroup is gone: the moves will just wait
                return
            self._stopped.wait(INTERVAL_S)

    @property
    def active(self) -> bool:
        """Whether the thread still primes."""
        return self._thread.is_alive()

    def stop(self) -> None:
        """Stop priming (idempotent); returns once the thread has ended."""
        self._stopped.set()
        self._thread.join()
