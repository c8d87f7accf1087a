"""Warm Python is faithful: a random value never repeats across submissions on one warm slot.

Each case prints one value that a fresh ``python3`` draws anew in every run; it runs `DRAWS` times on
the same slot and parent, and every value must differ.  `SHARED_HASH_SECRET` marks, strictly, the one
case that repeats by design (``str`` hashes: a warm parent's secret is set when it starts; parents are
renewed to bound how many executions share one, docs/attacks.md).
"""

from __future__ import annotations

import pytest

from judge.sandbox.client import SlotClient
from tests.sandbox.fidelity.corpus.base import Program
from tests.sandbox.fidelity.harness import WARM, WARM_SCIENTIFIC, Config, Outcome, run, run_sequences, warm_configs

pytestmark = pytest.mark.timeout(600)

DRAWS = 3
CASES: dict[str, str] = {
    'random.random': 'import random\nprint(random.random())',
    'numpy.random.rand': 'import numpy as np\nprint(np.random.rand())',
    'numpy.random.default_rng': 'import numpy as np\nprint(np.random.default_rng().random())',
    'sympy.randprime': 'import sympy\nprint(sympy.randprime(1, 10**9))',
    'sympy.Dummy.dummy_index': 'import sympy\nprint(sympy.Dummy().dummy_index)',
    'scipy.stats.norm.rvs': 'from scipy import stats\nprint(stats.norm.rvs())',
    'uuid.uuid4': 'import uuid\nprint(uuid.uuid4())',
    'hash(str)': 'print(hash("a string"))',
}


SHARED_HASH_SECRET = (
    'every fork of one warm parent shares its str hash secret, set when that interpreter started '
    '(judge.sandbox.server.warm.lineage renews parents to bound how many executions share one)'
)


def _params() -> list[object]:
    params: list[object] = []
    for config in warm_configs():
        for case in CASES:
            reason = SHARED_HASH_SECRET if case == 'hash(str)' else None
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            params.append(pytest.param(config, case, id=f'{config.name}:{case}', marks=marks))
    return params


@pytest.fixture(scope='module')
def draws(slots: dict[str, SlotClient]) -> dict[tuple[str, str], list[Outcome]]:
    """Each case run `DRAWS` times in a row on one slot, for every warm config."""
    cases = [(config, case) for config in warm_configs() for case in CASES]
    runs = run_sequences(slots, [(config, [Program(case, CASES[case])] * DRAWS) for config, case in cases])
    return {(config.name, case): seen for (config, case), seen in zip(cases, runs, strict=True)}


@pytest.mark.parametrize(('config', 'case'), _params())
def test_random_values_never_repeat_across_submissions(
    draws: dict[tuple[str, str], list[Outcome]], config: Config, case: str
) -> None:
    seen = draws[config.name, case]
    assert all(o.exit_code == 0 and o.stderr == '' for o in seen), seen
    values = [o.stdout for o in seen]
    assert len(set(values)) == DRAWS, f'{case} repeated across {DRAWS} submissions on {config.name}: {values}'


def test_the_default_warm_slot_preloads_no_scientific_package(slots: dict[str, SlotClient]) -> None:
    """What separates the two slots: the cases above mean something different on each."""
    # The names are built at run time: a program that names them goes to the scientific parent.
    probe = Program('probe', 'import sys\nprint([m in sys.modules for m in ("sym" + "py", "num" + "py")])')
    assert run(slots[WARM.slot], probe, WARM).stdout == '[False, False]\n'
    assert run(slots[WARM_SCIENTIFIC.slot], probe, WARM_SCIENTIFIC).stdout == '[True, True]\n'
