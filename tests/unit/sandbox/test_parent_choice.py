"""Which warm parent runs a program (`judge.sandbox.server.parents`, `judge.sandbox.zygote.prepare`): the
scan of its imports and the choice while a parent starts (pure logic, no process)."""

from __future__ import annotations

from judge.sandbox.server.parents import WarmParents
from judge.sandbox.zygote.prepare import SCIENTIFIC_NAMES, uses_scientific


def test_the_scan_picks_scientific_for_the_stack_and_lean_otherwise() -> None:
    names = SCIENTIFIC_NAMES
    assert uses_scientific('import sympy as sp', names) and uses_scientific('from numpy.linalg import det', names)
    assert uses_scientific('import os, scipy.special', names) and uses_scientific("__import__('mpmath')", names)
    assert not uses_scientific('import itertools\nprint(1)', names)
    assert not uses_scientific('import numpyish\nmy_sympy = 1', names), 'whole words only'


class _Started:
    """A zygote as `WarmParents` sees one that is ready as soon as it is started (pure logic, no process)."""

    ready = True

    def poll(self) -> None:
        pass


def test_the_parent_is_chosen_by_the_source_and_stands_in_while_one_starts() -> None:
    parents = WarmParents(lambda kind: _Started(), scientific=['sympy', 'numpy'])  # type: ignore[arg-type,return-value]
    assert parents.choose('print(1)') == ('lean', False), 'the bare parent starts; the lean one serves meanwhile'
    assert parents.choose('import sympy') == ('lean', False)
    assert parents.choose('print(1)') == ('bare', False)
    assert parents.choose('import sympy') == ('scientific', False)
    for source in ('import re\nprint(1)', 'x = __import__("re")', 'from math import pi', '# import nothing\nprint(1)'):
        assert parents.choose(source) == ('lean', True), source
    assert parents.choose(None) == ('lean', False), 'an argv execs: any parent will do'
    assert parents.choose('print(1)', 'lean') == ('lean', True)
    assert parents.choose('import sympy', 'bare') == ('bare', True)
    no_preload = WarmParents(lambda kind: _Started(), bare=False)  # type: ignore[arg-type,return-value]
    assert no_preload.choose('print(1)') == ('lean', True), 'a lean parent that preloads nothing is the bare one'
    assert no_preload.choose('print(1)', 'bare') == ('lean', True)
