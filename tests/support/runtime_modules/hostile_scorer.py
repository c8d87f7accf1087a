"""A scorer for the tests, in the runtime's operator modules: it prints noise, and hangs, allocates
without bound or raises when the answer asks for it (the sandbox's limits and the grader must hold)."""

from __future__ import annotations


def compute_score(answer: str, reference: str) -> float:
    """1.0 when the stripped answer equals the stripped reference; misbehaves on request."""
    if answer == 'HANG':
        while True:
            pass
    if answer == 'BOMB':
        blocks = []
        while True:
            blocks.append(bytearray(64 << 20))
    if answer == 'RAISE':
        raise ValueError('the scorer refuses this answer')
    print('noise from the scorer: not a score')
    return 1.0 if answer.strip() == reference.strip() else 0.0
