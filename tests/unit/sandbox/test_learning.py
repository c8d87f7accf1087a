"""What a slot server learns from the programs it runs (pure logic, no slot): template prefixes and shapes."""

from __future__ import annotations

import marshal

from judge.sandbox.server.warm.prefixes import MAX_PREFIXES, MIN_PREFIX_CHARS, Prefixes, shared_length, statement_start
from judge.sandbox.server.warm.shapes import EXPLORE_EVERY, MAX_SHAPES, PREFIX_CHARS, Shapes
from toolkit.bench.templates import rstar_shape


def test_shared_length_and_statement_starts() -> None:
    assert shared_length('abcdef', 'abcxyz') == 3 and shared_length('abc', 'abc') == 3 and shared_length('', 'a') == 0
    assert shared_length('x' * 5000 + 'a', 'x' * 5000 + 'b') == 5000
    text = 'import os\n\ndef f():\n    return 1\n# note\nx = f()\n'
    assert statement_start(text, len(text)) == text.index('x = f()')
    assert statement_start(text, text.index('    return')) == text.index('def f')
    assert statement_start(text, text.index('# note') + 2) == text.index('def f'), (
        'indented lines and comments are skipped'
    )
    assert statement_start('no newline', 5) == 0


def test_a_template_is_compiled_once_and_offered_to_programs_starting_with_it() -> None:
    prefixes = Prefixes()
    first, second, third = (rstar_shape(f'print({i})') for i in range(3))
    assert prefixes.find(first) is None, 'nothing to compare with yet'
    found = prefixes.find(second)
    assert found is not None
    length, code = found
    head = second[:length]
    assert head == first[:length] and head.endswith('\n') and second[length:].startswith('cell = ')
    assert marshal.loads(code).co_filename == '<prefix>'
    assert prefixes.find(third) == found, 'known: no new compile'
    assert prefixes.find('print(1)\n' * 100) is None


def test_only_whole_statements_that_compile_alone_become_prefixes() -> None:
    prefixes = Prefixes()
    body = 'x = """\n' + 'line\n' * 200  # a long string the two programs share but do not close alike
    prefixes.find(body + 'a"""\nprint(x)\n')
    assert prefixes.find(body + 'b"""\nprint(x)\n') is None
    short = 'import os\n' * (MIN_PREFIX_CHARS // 20)
    prefixes.find(short + 'print(1)')
    assert prefixes.find(short + 'print(2)') is None, 'shorter than MIN_PREFIX_CHARS'


def test_the_cache_is_bounded() -> None:
    prefixes = Prefixes()
    for i in range(MAX_PREFIXES + 3):
        header = f'# template {i}\n' + 'import os\n' * 80
        prefixes.find(header + 'print(1)')
        assert prefixes.find(header + 'print(2)') is not None
    assert len(prefixes._compiled) == MAX_PREFIXES


def test_a_shape_is_guessed_once_most_of_its_programs_needed_the_scientific_parent() -> None:
    shapes = Shapes()
    template = 'import base64  # header\n' * 20
    assert not shapes.guess_scientific(template + 'a')
    shapes.learn(template + 'a', True)
    assert not shapes.guess_scientific(template + 'b'), 'one observation is not enough'
    shapes.learn(template + 'b', True)
    guesses = [shapes.guess_scientific(template + str(i)) for i in range(2 * EXPLORE_EVERY)]
    assert guesses.count(False) == 2, 'one guess in EXPLORE_EVERY is skipped, to keep learning'
    for _ in range(3):
        shapes.learn(template + 'c', False)
    assert not any(shapes.guess_scientific(template + str(i)) for i in range(EXPLORE_EVERY))
    assert not shapes.guess_scientific('x' * PREFIX_CHARS), 'another shape'


def test_the_shapes_are_bounded() -> None:
    shapes = Shapes()
    for i in range(MAX_SHAPES + 10):
        shapes.learn(f'{i:08d}' + ' ' * PREFIX_CHARS, True)
    assert len(shapes._shapes) == MAX_SHAPES
