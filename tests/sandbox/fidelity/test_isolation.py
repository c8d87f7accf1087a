"""Warm Python is faithful: no submission's state reaches the next one on the same warm slot.

Each case runs a polluting program (it changes print options, precision, warning filters, sympy's
global flags or printer defaults, signal dispositions, the environment...) and then, on the same
slot and parent, a victim whose output must equal its fresh output.
"""

from __future__ import annotations

import pytest

from judge.sandbox.client import SlotClient
from tests.sandbox.fidelity.corpus import CORPUS
from tests.sandbox.fidelity.harness import FRESH, Config, Outcome, run_sequences, warm_configs

pytestmark = pytest.mark.timeout(1800)  # the fixture `outcomes` may run the whole corpus first

PAIRS: list[tuple[str, str]] = [
    ('printing.numpy_print_options_changed', 'printing.numpy_print_options_default'),
    ('printing.numpy_summarised', 'printing.numpy_default_print'),
    ('contexts.mpmath_dps_changed', 'contexts.mpmath_dps_default'),
    ('contexts.sympy_mpmath_interplay', 'contexts.mpmath_dps_default'),
    ('contexts.decimal_context_changed', 'contexts.decimal_context_default'),
    ('warnings.numpy_seterr_raise', 'contexts.numpy_error_state_default'),
    ('warnings.simplefilter_error', 'warnings.once_per_location'),
    ('warnings.once_per_location', 'warnings.once_per_location'),
    ('warnings.filter_changed_then_reset', 'warnings.categories_and_defaults'),
    ('warnings.showwarning_replaced', 'warnings.numpy_divide_by_zero'),
    ('warnings.sympy_deprecation', 'warnings.sympy_deprecation'),
    ('sympy_state.evaluate_flag_set_globally', 'sympy_state.default_printing_state'),
    ('sympy_state.distribute_flag', 'sympy_state.default_printing_state'),
    ('sympy_state.printer_defaults_mutated', 'sympy_state.default_printing_state'),
    ('sympy_state.init_printing_called', 'sympy_state.default_printing_state'),
    ('sympy_state.monkeypatched_library', 'sympy_state.library_defaults_seen'),
    ('sympy_state.cache_clear_and_cacheit', 'sympy_state.cache_clear_and_cacheit'),
    ('sympy_state.assumptions', 'sympy_state.symbol_identity_and_dummies'),
    ('contexts.recursion_raised', 'contexts.recursion_default'),
    ('contexts.int_max_str_digits_changed', 'printing.int_max_str_digits'),
    ('contexts.signals_changed', 'contexts.signals_and_mask'),
    ('contexts.umask_and_limits', 'contexts.umask_and_limits'),
    ('process.environment_changed', 'process.environment'),
    ('process.cwd_and_listing', 'process.cwd_and_listing'),
    ('threads.daemon_thread_at_exit', 'threads.thread_names_and_local'),
]


@pytest.fixture(scope='module')
def victims(slots: dict[str, SlotClient]) -> dict[tuple[str, str, str], Outcome]:
    """Each victim's outcome right after its polluter, on the same slot, for every warm config."""
    cases = [(config, polluter, victim) for config in warm_configs() for polluter, victim in PAIRS]
    runs = run_sequences(slots, [(config, [CORPUS[p], CORPUS[v]]) for config, p, v in cases])
    return {(config.name, p, v): outcomes[1] for (config, p, v), outcomes in zip(cases, runs, strict=True)}


@pytest.mark.parametrize('config', warm_configs(), ids=lambda c: c.name)
@pytest.mark.parametrize(('polluter', 'victim'), PAIRS, ids=[f'{p}>{v}' for p, v in PAIRS])
def test_a_program_leaves_no_state_for_the_next(
    victims: dict[tuple[str, str, str], Outcome],
    outcomes: dict[str, dict[str, Outcome]],
    config: Config,
    polluter: str,
    victim: str,
) -> None:
    assert victims[config.name, polluter, victim] == outcomes[FRESH.name][victim]


def test_the_polluters_do_change_what_their_victims_print(outcomes: dict[str, dict[str, Outcome]]) -> None:
    """Each polluter changes the state its victim shows (else the pair tests nothing): run in one
    process, the polluter's state shows; fresh, it does not."""
    fresh = outcomes[FRESH.name]
    assert '0.167' in fresh['printing.numpy_print_options_changed'].stdout
    assert '0.16666667' in fresh['printing.numpy_print_options_default'].stdout
    assert fresh['contexts.mpmath_dps_default'].stdout.startswith('15 53 False')
    assert 'prec=28' in fresh['contexts.decimal_context_default'].stdout
    assert 'x + x' in fresh['sympy_state.evaluate_flag_set_globally'].stdout
    assert 'True True False' in fresh['sympy_state.default_printing_state'].stdout
    assert fresh['sympy_state.monkeypatched_library'].stdout.startswith('3 3 PATCHED PATCHED-ADD')
    assert 'ValueError' in fresh['printing.int_max_str_digits'].stdout
    assert fresh['contexts.umask_and_limits'].stdout.startswith('0o22\n')
    assert "'HOME'" in fresh['process.environment'].stdout
    assert fresh['warnings.once_per_location'].stderr.count('UserWarning: looped') == 2
