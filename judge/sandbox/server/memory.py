"""A slot's memory: the proportional set size (PSS) of its server, warm parents and waiting spare.

PSS divides each shared page among the processes sharing it, so the sum over processes counts the
pages a warm parent shares with its children (and the interpreter's pages shared across slots)
once.  Read from ``/proc/<pid>/smaps_rollup`` by the slot server (root); the kernel walks every
mapping to answer, so it is asked for now and then (`judge.worker.service.Service`), never per execution.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from judge.sandbox.server.execute import Spare


class Lineages(Protocol):
    """The slot's warm parents (`judge.sandbox.server.warm.parents.WarmParents`)."""

    lineages: dict[str, Any]


def pss_kb(pid: int) -> int:
    """The PSS of process ``pid`` in KiB (0 when it is gone or unreadable)."""
    try:
        with open(f'/proc/{pid}/smaps_rollup', 'rb') as f:
            for line in f:
                if line.startswith(b'Pss:'):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def slot_memory(parents: Lineages, spare: Spare | None) -> dict[str, Any]:
    """PSS in KiB: ``total`` and its parts (``server``, each kind of ``parents``, the ``spare``)."""
    by_kind: dict[str, int] = {}
    for kind, lineage in parents.lineages.items():
        kb = sum(pss_kb(zygote.pid) for zygote in lineage.zygotes())
        if kb:
            by_kind[kind] = kb
    server = pss_kb(os.getpid())
    waiting = pss_kb(spare.pid) if spare is not None else 0
    return {
        'total_pss_kb': server + sum(by_kind.values()) + waiting,
        'server_pss_kb': server,
        'parents_pss_kb': by_kind,
        'spare_pss_kb': waiting,
    }
