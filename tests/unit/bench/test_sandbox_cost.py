"""`scripts.sandbox_cost`'s table of the slot server's CPU by phase."""

from __future__ import annotations

from scripts.sandbox_cost import format_phases, phase_table


def test_phases_are_per_execution_and_add_up_to_the_total() -> None:
    takes = [
        {'executions': 4, 'ns': {'execute': 400_000, 'workdir': 80_000}},
        {'executions': 0, 'ns': {}},  # a take without executions is left out
        {'executions': 2, 'ns': {'execute': 100_000, 'drop': 20_000}},
    ]
    table = phase_table(takes)
    assert table == {
        'drop': [0.0, 10.0],
        'execute': [100.0, 50.0],
        'total': [120.0, 60.0],
        'workdir': [20.0, 0.0],
    }


def test_the_table_lists_the_costliest_phase_first_and_the_total_last() -> None:
    text = format_phases('namespaces warm', [{'executions': 1, 'ns': {'send': 5_000, 'execute': 50_000}}])
    lines = text.splitlines()
    assert lines[0].startswith('namespaces warm')
    assert [line.split(':')[0].strip() for line in lines[1:]] == ['execute', 'send', 'total']
    assert lines[-1].split(':')[1].strip() == '55.0'
