"""Fixtures of the fidelity corpus: two real slots, shared by its modules, and the corpus run once in every mode."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from judge.sandbox.client import SlotClient
from tests.sandbox.fidelity.corpus import CORPUS
from tests.sandbox.fidelity.harness import (
    DEFAULT_PRELOAD,
    FRESH,
    SCIENTIFIC_PRELOAD,
    Outcome,
    open_slot,
    run_corpus,
    warm_configs,
)


@pytest.fixture(scope='package')
def slots() -> Iterator[dict[str, SlotClient]]:
    """``default``: a slot preloading what the judge preloads by default; ``scientific``: one also
    preloading sympy and numpy (where fresh runs go too: they exec a new interpreter)."""
    with open_slot(DEFAULT_PRELOAD, 'default') as default, open_slot(SCIENTIFIC_PRELOAD, 'scientific') as scientific:
        yield {'default': default, 'scientific': scientific}


@pytest.fixture(scope='package')
def outcomes(slots: dict[str, SlotClient]) -> dict[str, dict[str, Outcome]]:
    """Every corpus program run once fresh and once in every warm configuration."""
    return run_corpus(slots, list(CORPUS.values()), [FRESH, *warm_configs()])
