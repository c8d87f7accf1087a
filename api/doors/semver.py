"""Piston's ``version`` selector: a SemVer range (``*``, ``3``, ``3.11``, ``3.11.2``, ``3.x``, ``^3.10``,
``~3.11``, ``>=3.8 <4``, ``1.0 || 2.0``) matched against a runtime's version, as Piston does with
node-semver's ``satisfies``.  Pre-release tags and build metadata are not supported (none of the
judge's runtimes has one)."""

from __future__ import annotations

import re

from api.doors.common import Version

_PART = re.compile(r'^(<=|>=|<|>|=|\^|~)?v?(\*|x|X|\d+)(?:\.(\*|x|X|\d+))?(?:\.(\*|x|X|\d+))?$')
_WILD = ('*', 'x', 'X', None)


def show(version: Version) -> str:
    """``X.Y.Z``."""
    return '.'.join(str(n) for n in version)


def _comparator(part: str, version: Version) -> bool:
    found = _PART.match(part)
    if not found:
        raise ValueError(f'invalid version selector {part!r}')
    op, *raw = found.groups()
    fixed = [int(n) for n in raw if n not in _WILD]
    if len(fixed) < len(raw) and any(n not in _WILD for n in raw[len(fixed) :]):
        raise ValueError(f'invalid version selector {part!r}')
    low = tuple(fixed + [0] * (3 - len(fixed)))
    if op in (None, '=') or (op == '~' and len(fixed) < 3):
        return tuple(version[: len(fixed)]) == tuple(fixed) if fixed else True
    if op == '^':
        if len(fixed) < 1:
            return True
        head = next((i for i, n in enumerate(fixed) if n != 0), len(fixed) - 1)
        return version >= low and tuple(version[: head + 1]) == tuple(fixed[: head + 1])
    if op == '~':
        return version >= low and tuple(version[:2]) == tuple(fixed[:2])
    high = tuple(fixed + [0] * (3 - len(fixed)))
    if op == '>=':
        return version >= low
    if op == '>':
        return version > high if len(fixed) == 3 else tuple(version[: len(fixed)]) > tuple(fixed)
    if op == '<':
        return version < low
    return version <= high if len(fixed) == 3 else tuple(version[: len(fixed)]) <= tuple(fixed)  # '<='


def satisfies(version: Version, selector: str) -> bool:
    """Whether ``version`` is in the range ``selector``; `ValueError` for a selector that is not one."""
    alternatives = [a.strip() for a in selector.split('||')]
    if not any(alternatives):
        raise ValueError(f'invalid version selector {selector!r}')
    for alternative in alternatives:
        parts = alternative.replace('>= ', '>=').replace('<= ', '<=').replace('> ', '>').replace('< ', '<').split()
        if parts and all(_comparator(part, version) for part in parts):
            return True
    return False
