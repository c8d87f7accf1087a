"""Output checkers (`judge.checker`): strip, exact, tokens and float tolerances."""

from __future__ import annotations

import pytest

from judge.checker import check_exact, check_strip, check_tokens, get_checker


@pytest.mark.parametrize(
    'checker,out,exp,ok',
    [
        (check_strip, '  45 \n', '\n45\n\n', True),
        (check_strip, '4 5', '45', False),
        (check_exact, '45\n', '45\n', True),
        (check_exact, '45', '45\n', False),
        (check_tokens, '1  2\n3', '1 2 3', True),
        (check_tokens, '1 2', '1 2 3', False),
    ],
)
def test_checkers(checker, out: str, exp: str, ok: bool) -> None:  # type: ignore[no-untyped-def]
    assert checker(out, exp) is ok


def test_float_checker() -> None:
    check = get_checker('float:1e-6')
    assert check('0.3333333 x', '0.33333334 x')
    assert not check('0.34', '0.33')
    assert not check('a', '1.0')
    with pytest.raises(ValueError):
        get_checker('nope')
