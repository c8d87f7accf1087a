"""scripts.template_steps: the steps cut rStar2-Agent's template where they say, and each parent runs them."""

from __future__ import annotations

import subprocess
import sys

from scripts import template_steps
from toolkit.bench.templates import rstar_shape


def test_each_step_is_a_compilable_start_of_the_next() -> None:
    steps = template_steps.sources()
    assert list(steps) == ['plain', 'imports', 'classes', 'decoded', 'parsed', 'wrapped']
    assert steps['wrapped'] == rstar_shape(steps['plain'])
    cuts = [steps[name] for name in ('imports', 'classes', 'decoded')]
    for shorter, longer in zip(cuts, [*cuts[1:], steps['wrapped']], strict=True):
        assert longer.startswith(shorter) and len(longer) > len(shorter)
    assert 'class ' not in steps['imports'] and 'class Notebook' in steps['classes']
    assert 'b64decode' in steps['decoded'] and 'notebook.run' not in steps['decoded']
    for text in steps.values():
        compile(text, 'step.py', 'exec')


def test_the_script_measures_every_step_in_a_forked_child() -> None:
    done = subprocess.run(
        [sys.executable, '-m', 'scripts.template_steps', '--python', sys.executable, '--n', '3', '--rounds', '1'],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split()[1] for line in lines if line.startswith('#')] == ['steps', 'predefined', 'immortal']
    measured = [line.split() for line in lines if 'child CPU' in line]
    assert [row[0] for row in measured] == [*template_steps.sources(), 'wrapped']
    for row in measured:
        assert float(row[3]) > 0 and float(row[7]) > 0
