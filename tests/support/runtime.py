"""The submission runtime's pins, as judge/runtime/requirements.txt lists them."""

from __future__ import annotations

import re

from judge import runtime
from judge.runtime import requirement_lines


def pins() -> dict[str, str]:
    """Distribution name (normalised) -> pinned version."""
    out = {}
    for line in requirement_lines(runtime.PINS.read_text()):
        name, version = line.split('==')
        out[re.sub(r'\[.*\]', '', name).lower().replace('_', '-')] = version
    return out
