"""What the worker records for a session's replay: each cell's seed, and why a replay may differ."""

from __future__ import annotations

import pytest

from judge.worker.replay import derive_seed, static_reasons


def test_a_session_seed_gives_the_same_cell_seeds_everywhere() -> None:
    assert derive_seed(7, 3) == derive_seed(7, 3)
    assert len({derive_seed(7, i) for i in range(100)}) == 100
    assert derive_seed(7, 0) != derive_seed(8, 0)
    assert derive_seed(None, 0) != derive_seed(None, 0)  # no session seed: fresh, recorded
    assert all(0 <= derive_seed(s, 1) < 2**63 for s in (None, 0, 2**32 - 1))


@pytest.mark.parametrize(
    ('code', 'reasons'),
    [
        ('import time\nt = time.time()', {'clock'}),
        ('from datetime import datetime\ndatetime.now()', {'clock'}),
        ('import os\nos.urandom(8)', {'entropy'}),
        ('import secrets', {'entropy'}),
        ('import random\nr = random.Random()', {'entropy'}),
        ('print(id(object()))', {'address'}),
        ('import random\nrandom.random()', set()),  # seeded per cell: replays
        ('import numpy as np\nnp.random.default_rng().random()', set()),
        ('x = sorted({"a", "b"})', set()),
    ],
)
def test_static_reasons(code: str, reasons: set[str]) -> None:
    assert static_reasons(code) == reasons
