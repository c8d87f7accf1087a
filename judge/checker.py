"""Output comparison.  Upstream's rule (`strip`) compares both sides with surrounding whitespace removed."""

from __future__ import annotations

from collections.abc import Callable

Checker = Callable[[str, str], bool]
CHECKERS = ('exact', 'strip', 'lines', 'tokens', 'yesno', 'float:<tolerance>')
"""The checker names (`get_checker`)."""


def check_strip(output: str, expected: str) -> bool:
    """Upstream code-judge's rule: equal after stripping both sides."""
    return output.strip() == expected.strip()


def check_exact(output: str, expected: str) -> bool:
    """Byte-for-byte equal text."""
    return output == expected


def check_tokens(output: str, expected: str) -> bool:
    """Equal as whitespace-separated tokens."""
    return output.split() == expected.split()


def check_lines(output: str, expected: str) -> bool:
    """Equal line by line, each line's trailing whitespace and trailing blank lines aside (Judge0's rule)."""

    def norm(text: str) -> str:
        return '\n'.join(line.rstrip() for line in text.split('\n')).rstrip()

    return norm(output) == norm(expected)


def check_yesno(output: str, expected: str) -> bool:
    """Equal as whitespace-separated tokens, the words yes and no in any case (Codeforces' usual rule)."""

    def fold(token: str) -> str:
        return token.upper() if token.lower() in ('yes', 'no') else token

    return [fold(t) for t in output.split()] == [fold(t) for t in expected.split()]


def make_float_checker(tolerance: float) -> Checker:
    """Tokens equal, numbers within ``tolerance`` (absolute or relative)."""

    def check(output: str, expected: str) -> bool:
        got, want = output.split(), expected.split()
        if len(got) != len(want):
            return False
        for g, w in zip(got, want, strict=True):
            if g == w:
                continue
            try:
                gf, wf = float(g), float(w)
            except ValueError:
                return False
            if not abs(gf - wf) <= tolerance * max(1.0, abs(wf)):
                return False
        return True

    return check


def get_checker(name: str) -> Checker:
    """`exact`, `strip`, `tokens` or `float:<tolerance>`; raises ValueError for anything else."""
    if name == 'strip':
        return check_strip
    if name == 'exact':
        return check_exact
    if name == 'tokens':
        return check_tokens
    if name == 'lines':
        return check_lines
    if name == 'yesno':
        return check_yesno
    if name.startswith('float:'):
        try:
            tolerance = float(name.split(':', 1)[1])
        except ValueError:
            raise ValueError(f'bad tolerance in checker {name!r}') from None
        if not tolerance >= 0:  # also rejects nan
            raise ValueError('the tolerance of the float checker must be >= 0')
        return make_float_checker(tolerance)
    raise ValueError(f'unknown checker {name!r}; use one of {", ".join(CHECKERS)}')
