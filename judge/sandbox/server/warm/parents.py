"""A slot's warm parents (zygotes), by kind, and which one a program needs.

Parents are grouped by *kind*: each kind is a lineage with its own zygote, renewed after a bounded
number of executions or time (`judge.sandbox.server.warm.lineage`).  ``lean`` imports the
light preload list (`JUDGE_PYTHON_PRELOAD`), serves Python programs that import nothing heavy and
forks the other languages' children; ``scientific`` also imports the scientific stack
(`JUDGE_PYTHON_SCIENTIFIC_PRELOAD`: sympy and numpy by default) and runs a warm-up
(`judge.sandbox.zygote.prepare`); ``bare`` imports nothing beyond what the warm parents need to fork
(`judge.sandbox.fdio`), so that programs with no ``import`` at all fork from, and tear down, a
parent about half the lean one's size.  Which one serves a program is the slot server's choice.
"""

from __future__ import annotations

from collections.abc import Callable

from judge.sandbox.errors import ZygoteLost
from judge.sandbox.lazylog import get_logger
from judge.sandbox.server.warm.lineage import RENEW_EXECS, RENEW_S, SCIENTIFIC_RENEW_EXECS, Lineage
from judge.sandbox.server.warm.shapes import Shapes, shown_payloads
from judge.sandbox.server.warm.zygotes import Zygote
from judge.sandbox.zygote.prepare import SCIENTIFIC_NAMES, uses_scientific
from judge.sandbox.zygote.upgrade import OBSERVE, OFFER

logger = get_logger('judge.sandbox.server.warm.parents')

DEFAULT_KIND = LEAN = 'lean'
SCIENTIFIC = 'scientific'
BARE = 'bare'
KINDS = (LEAN, SCIENTIFIC, BARE)


class WarmParents:
    """All lineages of a slot, by kind."""

    def __init__(
        self,
        start: Callable[[str], Zygote],
        renew_execs: int = RENEW_EXECS,
        renew_s: float = RENEW_S,
        scientific: list[str] | None = None,
        bare: bool = True,
        scientific_renew_execs: int = SCIENTIFIC_RENEW_EXECS,
    ) -> None:
        self._start = start
        self.renew_execs = max(1, renew_execs)
        """The bound on executions per zygote of the lean and bare kinds."""
        self.scientific_renew_execs = max(1, scientific_renew_execs)
        """The scientific kind's, higher: each of its renewals costs a sympy and numpy start."""
        self.renew_s = max(1.0, renew_s)
        self.lineages: dict[str, Lineage] = {}
        self.scientific_names = SCIENTIFIC_NAMES | {m.split('.')[0] for m in scientific} if scientific else frozenset()
        """Words that send a program to the scientific parent (none: the slot has no scientific parent)."""
        self.bare = bare
        """Whether programs without imports go to a bare parent (not when the lean one preloads nothing)."""
        self.shapes = Shapes()
        """Which sources that hide their imports turned out to need the scientific parent."""
        self._shown: tuple[str, str] = ('', '')
        """The last source `choose` scanned and what its payloads showed (`shown_payloads`)."""

    def choose(self, source: str | None, asked: object = None) -> tuple[str, bool]:
        """The kind of parent a request needs, and whether exactly that one (``asked``: the request's
        ``parent``; `ValueError` for one this slot does not have).

        Warm Python goes to the scientific parent when it, or the text its base64 payloads decode to
        (`judge.sandbox.server.warm.shapes.shown_payloads`), mentions a package that parent preloads or
        that builds on them (`judge.sandbox.zygote.prepare.uses_scientific`); else, when ``import`` appears
        nowhere in it (not even ``__import__`` or in a comment), to the bare parent, which any other
        child may stand in for (the program sees fewer preloaded modules there, never more); else to
        exactly the lean parent (a scientific child would show the program its modules and warning
        filters).  The scientific and bare parents are started by the first program that needs them,
        in the background: until they are ready, such programs go to the lean parent (and import what
        they need themselves).  Anything else (an ``argv``, which execs) may use any parent.
        """
        if asked is not None:
            if asked not in KINDS:
                raise ValueError(f'unknown parent {asked!r}; choose one of {", ".join(KINDS)}')
            if asked == SCIENTIFIC and not self.scientific_names:
                raise ValueError('this slot has no scientific parent (JUDGE_PYTHON_SCIENTIFIC_PRELOAD is empty)')
            if asked == BARE and not self.bare:  # the lean parent preloads nothing: it is the bare one
                return LEAN, True
            return str(asked), True
        if source is None:
            return LEAN, False
        if self.scientific_names:
            if uses_scientific(source, self.scientific_names):
                return self._when_ready(SCIENTIFIC)
            self._shown = (source, shown_payloads(source))  # read again by `hidden_imports`
            if uses_scientific(self._shown[1], self.scientific_names):
                return self._when_ready(SCIENTIFIC)
        if self.bare and 'import' not in source:
            return self._when_ready(BARE)
        return LEAN, True

    def hidden_imports(self, source: str, kind: str) -> tuple[str, int]:
        """For warm Python the scan sent to the lean or bare parent (``kind``): where it starts, and the
        plan for its first lookup of a scientific package (`judge.sandbox.zygote.upgrade`): ``OFFER`` the
        scientific parent when it is ready; else ``OBSERVE``; a program whose shape needed it lately
        starts there instead (`judge.sandbox.server.warm.shapes`), unless its payloads showed its code
        (which names no scientific package: that program most likely needs none)."""
        if not self.scientific_names:
            return kind, 0
        if not self.lineage(SCIENTIFIC).ready():
            return kind, OBSERVE
        shown = self._shown[1] if self._shown[0] is source else shown_payloads(source)
        if not shown and self.shapes.guess_scientific(source):
            return SCIENTIFIC, 0
        return kind, OFFER

    def _when_ready(self, kind: str) -> tuple[str, bool]:
        """``kind`` if its zygote can fork now; else the lean parent, while ``kind``'s starts in the background."""
        lineage = self.lineage(kind)
        if lineage.ready():
            return kind, False
        lineage.start_background()
        return LEAN, False

    def lineage(self, kind: str = DEFAULT_KIND) -> Lineage:
        """The lineage of ``kind`` (created on first use)."""
        found = self.lineages.get(kind)
        if found is None:
            execs = self.scientific_renew_execs if kind == SCIENTIFIC else self.renew_execs
            found = self.lineages[kind] = Lineage(kind, self._start, execs, self.renew_s)
        return found

    def zygotes(self) -> list[Zygote]:
        """Every zygote of the slot."""
        return [z for lineage in self.lineages.values() for z in lineage.zygotes()]

    def watched(self) -> list[Zygote]:
        """Zygotes whose messages the server should read while idle (starting and retired ones)."""
        return [z for lineage in self.lineages.values() for z in (lineage.standby, *lineage.retired) if z is not None]

    def due_in_s(self) -> float | None:
        """Seconds until some zygote is due for renewal by age (None: none is)."""
        times = [t for t in (lineage.due_in_s() for lineage in self.lineages.values()) if t is not None]
        return min(times) if times else None

    def ask_reap(self) -> None:
        """Ask every zygote to reap what has exited; a dead one is dropped."""
        for lineage in self.lineages.values():
            for zygote in lineage.zygotes():
                try:
                    zygote.ask_reap()
                    zygote.poll()
                except ZygoteLost:
                    logger.error('a %s zygote died', lineage.kind)
                    lineage.drop(zygote)

    def close(self) -> None:
        """Stop every zygote."""
        for lineage in self.lineages.values():
            lineage.close()
