"""Warm Python is faithful: every corpus program gives the same exit code, stdout and stderr (work dirs and
addresses normalised) in every warm configuration as under a fresh ``python3 -I source.py``.

`KNOWN_GAPS` lists, as strict expected failures, the differences the warm interpreter shows today:
each passes (and so fails the suite, strict) as soon as the warm interpreter is fixed, so that its
entry is then removed.
"""

from __future__ import annotations

import os

import pytest

from judge.sandbox.client import SlotClient
from tests.sandbox.fidelity.corpus import CORPUS
from tests.sandbox.fidelity.corpus.base import Program
from tests.sandbox.fidelity.harness import FRESH, Config, Outcome, parent_configs, run, runs, warm_configs

pytestmark = pytest.mark.timeout(1800)  # the first test runs the whole corpus (fixture `outcomes`)

ALL_WARM = None
KNOWN_GAPS: dict[str, tuple[str, frozenset[str] | None]] = {}


def _params() -> list[object]:
    params: list[object] = []
    for config in warm_configs():
        for name in sorted(CORPUS):
            if not runs(config, CORPUS[name]):
                continue
            reason, where = KNOWN_GAPS.get(name, ('', frozenset()))
            gap = where is ALL_WARM or config.name in (where or ())
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if gap else []
            params.append(pytest.param(config, name, id=f'{config.name}:{name}', marks=marks))
    return params


@pytest.mark.parametrize(('config', 'name'), _params())
def test_warm_matches_fresh(outcomes: dict[str, dict[str, Outcome]], config: Config, name: str) -> None:
    assert outcomes[config.name][name] == outcomes[FRESH.name][name]


def test_the_corpus_is_large_and_covers_every_category() -> None:
    categories: dict[str, int] = {}
    for program in CORPUS.values():
        categories[program.category] = categories.get(program.category, 0) + 1
    assert len(CORPUS) >= 100
    assert set(categories) == {
        'randomness',
        'warnings',
        'printing',
        'threads',
        'errors',
        'sympy_state',
        'contexts',
        'process',
        'compute',
        'wrapped',
    }
    assert min(categories.values()) >= 10, categories
    assert set(KNOWN_GAPS) <= set(CORPUS)


def test_the_reference_runs_are_what_the_programs_mean(outcomes: dict[str, dict[str, Outcome]]) -> None:
    """The fresh reference itself: no program failed for want of a package, errors fail as meant."""
    fresh = outcomes[FRESH.name]
    for name, got in fresh.items():
        assert 'ModuleNotFoundError' not in got.stderr, (name, got)
        assert got.stdout or got.stderr or got.exit_code, (name, got)
        if not name.startswith('errors.'):
            assert got.exit_code == 0 or name in _MEANT_TO_FAIL, (name, got)
    assert fresh['errors.keyboard_interrupt'].exit_code == -2
    assert fresh['errors.abort_signal'].exit_code == -6
    assert fresh['errors.exit_code_wraps'].exit_code == 7
    assert fresh['errors.exit_codes_sys_exit'][:2] == (42, 'out\n')
    assert fresh['warnings.once_per_location'].stderr.count('UserWarning: looped') == 2
    assert (
        fresh['warnings.numpy_divide_by_zero'].stderr.count('RuntimeWarning: divide by zero encountered in divide') == 1
    )
    linalg = fresh['errors.numpy_linalg_error']
    assert linalg.stdout == 'LinAlgError: Singular matrix\n' and 'ValueError: matmul' in linalg.stderr
    assert fresh['threads.blas_threads'].stdout.split('\n')[0].endswith(' 1')
    assert len(fresh['process.large_output_lines'].stdout) > 500_000


_MEANT_TO_FAIL = frozenset(
    {
        'warnings.simplefilter_error',
        'warnings.numpy_seterr_raise',
        'warnings.showwarning_replaced',
        'process.stdin_input_lines',
        'wrapped.rstar_error_line',
        'wrapped.rstar_error_in_tail',
        'wrapped.rstar_syntax_error',
        'wrapped.rstar_sys_exit',
        'wrapped.rstar_output_lost_on_error',
        'wrapped.rstar_traceback_from_library',
        'wrapped.toolkit_history_error',
    }
)


def test_every_parent_a_request_names_is_served(slots: dict[str, SlotClient]) -> None:
    """Each warm parent runs programs, and the scientific one has sympy and numpy already imported."""
    configs = parent_configs()
    if not configs:
        pytest.skip('slot execution requests name no warm parent (no `parent` field)')
    probe = Program('probe', 'import sys\nprint(sorted(m for m in ("sympy", "numpy", "typing") if m in sys.modules))')
    seen = {c.parent: run(slots[c.slot], probe, c) for c in configs}
    assert all(o.exit_code == 0 for o in seen.values()), seen
    assert seen['scientific'].stdout == "['numpy', 'sympy', 'typing']\n"
    assert seen['lean'].stdout == "['typing']\n"
    assert seen['bare'].stdout == '[]\n', 'the bare parent preloads nothing'


def test_the_corpus_runs_unprivileged_in_a_pid_namespace_of_its_own(slots: dict[str, SlotClient]) -> None:
    probe = Program('probe', 'import os\nprint(os.getuid(), os.readlink("/proc/self/ns/pid"))')
    for name, slot in slots.items():
        for config in (FRESH, *(c for c in warm_configs() if c.slot == name)):
            uid, pid_ns = run(slot, probe, config).stdout.split()
            assert int(uid) == slot.detail['uid'] != 0
            assert pid_ns != os.readlink('/proc/self/ns/pid')
