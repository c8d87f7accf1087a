"""What a corpus program is."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Program:
    """One corpus program: its source, the stdin it reads, its category."""

    name: str
    source: str
    stdin: bytes = b''
    category: str = ''


def programs(category: str, sources: dict[str, str | tuple[str, bytes]]) -> list[Program]:
    """Programs of ``category`` from ``{name: source}`` or ``{name: (source, stdin)}``."""
    out = []
    for name, entry in sources.items():
        source, stdin = (entry, b'') if isinstance(entry, str) else entry
        out.append(Program(f'{category}.{name}', source, stdin, category))
    return out
