"""A slot's executions before and after: the child waiting for the next request, and the clean-up.

The children are forked ahead of their request by the slot's warm parents (`judge.sandbox.server.warm.parents`,
fresh interpreters renewed in the background), so the slot server itself never forks again.

After every execution, before anything else runs in the slot, `SlotLife.finish` kills what the
execution started, waits until every one of its processes is reaped (the slot's pids cgroup is
empty), removes what it wrote (work dir, ``/dev/shm``) and raises if the slot cannot be made clean;
the slot server (`judge.sandbox.server.main`) then exits and the worker starts a new one.
"""

from __future__ import annotations

import os
import time
from typing import Any

from judge.sandbox.errors import SlotUnhealthy, ZygoteLost
from judge.sandbox.kernel import namespaces
from judge.sandbox.lazylog import get_logger
from judge.sandbox.server.execute import Spare, kill_process, kill_process_group, reap_orphans
from judge.sandbox.server.files.spaces import Spaces
from judge.sandbox.server.jail import Jail
from judge.sandbox.server.phases import NoPhases, PhaseClock
from judge.sandbox.server.warm.lineage import RENEW_EXECS, RENEW_S, SCIENTIFIC_RENEW_EXECS
from judge.sandbox.server.warm.parents import BARE, LEAN, SCIENTIFIC, WarmParents
from judge.sandbox.server.warm.zygotes import Zygote, spawn_zygote

logger = get_logger('judge.sandbox.server.lifecycle')
PACKAGE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BARE_RUN = 4
"""Consecutive programs without imports after which the next spares come from the bare parent (a
lean program then finds a bare spare and has it replaced: in a mixed stream lean spares serve all)."""
MISS_LIMIT = 0.5
"""When more than this share of recent requests found the spare forked ahead of them of the wrong kind
(a stream alternating between parents), spares are forked when their request comes instead of ahead:
a wrong spare costs its fork, set-up and exit for nothing.  The guess is still scored meanwhile, so
forking ahead resumes when the stream settles."""
MISS_WEIGHT = 0.125
"""Weight of the newest request in the running share of misses."""
SETTLE_S = 3.0
"""How long the end of an execution may take to kill and reap all its processes before the slot is
declared broken (and the server exits to be replaced)."""


class SpareGuess:
    """How often the kind of spare forked ahead suited the request that came (`MISS_LIMIT`)."""

    def __init__(self) -> None:
        self.misses = 0.0
        """Running share of requests the spare forked (or not forked) ahead of them did not suit."""
        self.held_back = False
        """Whether the slot was left without a spare for the next request."""

    def fork_ahead(self) -> bool:
        """Whether to fork the next spare now; if not, the next request scores the guess all the same."""
        self.held_back = self.misses > MISS_LIMIT
        return not self.held_back

    def score(self, missed: bool) -> None:
        """A request found the guessed kind of spare (or would have) wrong or right."""
        self.misses += MISS_WEIGHT * ((1.0 if missed else 0.0) - self.misses)
        self.held_back = False


class SlotLife:
    """One slot's jail, warm parents and waiting spare, and the clean-up after each execution."""

    def __init__(self, config: dict[str, Any]) -> None:
        # before the jail hides the project directory: the zygotes import the package through it
        self.package_fd = os.open(PACKAGE_ROOT, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
        self.jail = Jail(config)
        self.phases = PhaseClock() if config.get('phase_costs') else NoPhases()
        self.spaces = Spaces(self.jail, self.phases)
        self.prep = self.jail.child_prep()
        self.prep.server_pid = os.getpid()
        if os.getpid() != 1:  # outside a pid namespace: orphans of a dead zygote come back to us
            namespaces.set_child_subreaper(True)
        self.counter = 0
        self.spare: Spare | None = None
        self.spare_kind = LEAN
        """The kind of warm parent that forked `spare`."""
        self.next_kind = LEAN
        """The kind of the next spare: that of the last Python program (`note_program`, `refill`)."""
        self._bare_run = 0
        """Python programs without imports in a row (`note_program`)."""
        self.guess = SpareGuess()
        self.parents = WarmParents(
            self._start_zygote,
            int(config.get('renew_execs', RENEW_EXECS)),
            float(config.get('renew_s', RENEW_S)),
            self.prep.scientific,
            bare=bool(self.prep.preload),
            scientific_renew_execs=int(config.get('scientific_renew_execs', SCIENTIFIC_RENEW_EXECS)),
        )
        self.prep.watch = sorted(self.parents.scientific_names)
        self._leftover: str | None = None
        """The last execution's work dir, until `finish` has removed it."""
        self._exiting: Spare | None = None
        """The last execution's child when it reported its end before exiting, until `finish`."""

    def _start_zygote(self, kind: str) -> Zygote:
        return spawn_zygote(self.prep, self.package_fd, kind)

    def _fork_spare(self, kind: str = LEAN) -> Spare:
        lineage = self.parents.lineage(kind)
        for attempt in (0, 1):
            workdir = self.spaces.new_workdir()
            self.phases.lap('workdir')
            try:
                self.spaces.randomize_pids()
                self.phases.lap('pid')
                spare = lineage.spare(workdir)
                self.phases.lap('fork')
                self.spare_kind = kind
                return spare
            except ZygoteLost:  # the lineage dropped the dead zygote: the next try starts a new one
                self.spaces.recycle(workdir)
                if attempt:
                    raise
                logger.error('a %s zygote died; starting a new one', kind)
        raise AssertionError('unreachable')

    def _take_spare(self, kind: str = LEAN, exact: bool = False) -> Spare:
        """The waiting spare if it suits ``kind`` (`_suits`), else a new one of ``kind``; a request's
        first spare scores the guess that chose its kind (`SpareGuess`)."""
        spare, self.spare = self.spare, None
        if spare is not None:
            suits = self._suits(self.spare_kind, kind, exact)
            self.guess.score(not suits)
            if suits and spare.alive():
                return spare
            self._discard(spare)
        elif self.guess.held_back:
            self.guess.score(not self._suits(self.next_kind, kind, exact))
        return self._fork_spare(kind)

    def _suits(self, have: str, want: str, exact: bool) -> bool:
        """Whether a spare of kind ``have`` may serve a request for ``want``: the same kind; else, unless
        ``exact`` or ``want`` is the scientific parent (whose warmth is the point), a bare or lean spare,
        or a scientific one where ``RLIMIT_AS`` does not bound memory (its address space is larger)."""
        if have == want:
            return True
        if exact or want == SCIENTIFIC:
            return False
        return have != SCIENTIFIC or self.jail.cgroup is not None

    def note_program(self, kind: str) -> None:
        """Remember the kind of parent a Python program asked for: the next spare's kind (`refill`).

        Programs without imports make the next spares bare only after `BARE_RUN` of them in a row."""
        self._bare_run = self._bare_run + 1 if kind == BARE else 0
        if kind != BARE or self._bare_run >= BARE_RUN:
            self.next_kind = kind

    def _discard(self, spare: Spare) -> None:
        try:
            spare.discard()
        except ZygoteLost:
            pass
        self.spaces.recycle(spare.workdir)

    def refill(self) -> None:
        """Fork the next execution's child ahead of its request (off the critical path), from the
        parent the last Python program needed (while it is ready); not while that guess misses too
        often (`MISS_LIMIT`)."""
        if self.spare is None and self.guess.fork_ahead():
            lineage = self.parents.lineage(self.next_kind)
            ready = lineage.ready()
            if not ready:
                lineage.start_background()
            self.spare = self._fork_spare(self.next_kind if ready else LEAN)

    def finish(self) -> None:
        """Kill, reap and remove what the last execution left, off the reply's path.

        Waits until every process of the execution is gone and reaped (so its memory and its place
        in the slot's process budget are free again) before the slot runs anything else.  Raises
        when the slot cannot be made clean.
        """
        spare, self._exiting = self._exiting, None
        workdir, self._leftover = self._leftover, None
        if spare is None and workdir is None:
            return
        if spare is not None:
            # it is exiting already, unless its report was a lie (it may even have left its process group);
            # its pid cannot be reused before the zygote has reaped it, and only by the execution's own
            kill_process_group(spare.pid)
            kill_process(spare.pid)
            try:
                spare.reap(spare.pid)  # first: the slot's cgroup is only empty once it is gone
            except ZygoteLost:  # the reply went out fine: the next spare comes from a new zygote
                self._drop_zygote(spare.parent)
        self._settle()
        self.phases.lap('settle')
        if workdir is not None:
            self.spaces.drop_workdir(workdir)
            self.phases.lap('drop')

    def _settle(self) -> None:
        """Kill everything left in the slot and wait until every one of its processes is reaped."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            tasks = self.jail.slot_tasks()
            if not tasks:
                return
            self.jail.kill_all()
            self.parents.ask_reap()  # the zygotes reap their children and adopted orphans
            reap_orphans()  # ours: orphans of a zygote that died
            if time.monotonic() >= deadline:
                raise SlotUnhealthy(f'{tasks} processes of the last execution are still in the slot')
            time.sleep(0.002)

    def _drop_zygote(self, pid: int) -> None:
        for lineage in self.parents.lineages.values():
            for zygote in lineage.zygotes():
                if zygote.pid == pid:
                    lineage.drop(zygote)
                    return

    def _kill_all(self, pid: int) -> None:
        if pid:
            kill_process_group(pid)
        self.jail.kill_all()

    def maintain(self) -> None:
        """Renew warm parents when due; a spare of a replaced parent is replaced too (off the critical path)."""
        for kind, lineage in list(self.parents.lineages.items()):
            promoted = lineage.maintain()
            spare = self.spare
            current = getattr(lineage.current, 'pid', 0)
            if promoted and spare is not None and self.spare_kind == kind and spare.parent != current:
                self.spare = None
                self._discard(spare)
                lineage.close_drained()
        self.phases.lap('maintain')

    def close(self) -> None:
        """Stop the warm parents (their children die with them)."""
        self.parents.close()
