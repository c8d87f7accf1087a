"""The programs of ``toolkit.bench wrapped``: each kind's calls, plain and in the template (pure logic)."""

from __future__ import annotations

import base64
import re

from toolkit.bench.mathcalls import math_case
from toolkit.bench.wrapped import KINDS, cases_of


def _payload(program: str) -> str:
    found = re.findall(r'b64decode\("([A-Za-z0-9+/=]+)"', program)
    assert len(found) == 1, program
    return base64.b64decode(found[0]).decode()


def test_each_wrapped_kind_carries_its_plain_twin() -> None:
    assert set(KINDS) == {f'{g}_{f}' for g in ('math', 'trivial', 'mixed') for f in ('plain', 'wrapped')}
    for group in ('math', 'trivial', 'mixed'):
        plain, wrapped = cases_of(f'{group}_plain', 12), cases_of(f'{group}_wrapped', 12)
        assert [want for _, want in plain] == [want for _, want in wrapped]
        assert [_payload(program) for program, _ in wrapped] == [code for code, _ in plain]


def test_mixed_calls_alternate_math_and_trivial() -> None:
    mixed = cases_of('mixed_plain', 8)
    assert mixed[0::2] == [math_case(i) for i in range(4)]
    assert [code for code, _ in mixed[1::2]] == [f'print(sum(range({i})))' for i in (1, 3, 5, 7)]
