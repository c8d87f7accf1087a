"""The fidelity corpus: small self-contained programs whose output must not depend on how they ran.

Each category module lists its programs in ``PROGRAMS``.  Every program prints only what a fresh
``python3 -I source.py`` prints the same way each time (values that are random by nature are
printed normalised: a type, a shape, whether two draws differ), so any difference between modes is
a fidelity bug of the warm interpreter.
"""

from __future__ import annotations

from tests.sandbox.fidelity.corpus import (
    compute,
    contexts,
    errors,
    numeric,
    printing,
    process,
    randomness,
    sympy_state,
    threads,
    warnings_,
    wrapped,
)
from tests.sandbox.fidelity.corpus.base import Program

__all__ = ['CORPUS', 'Program']

CORPUS: dict[str, Program] = {
    p.name: p
    for module in (
        randomness,
        warnings_,
        printing,
        threads,
        errors,
        sympy_state,
        contexts,
        process,
        compute,
        numeric,
        wrapped,
    )
    for p in module.PROGRAMS
}
