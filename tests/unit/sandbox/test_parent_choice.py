"""Which warm parent runs a program (`judge.sandbox.server.warm.parents`, `judge.sandbox.zygote.prepare`): the
scan of its imports and the choice while a parent starts (pure logic, no process)."""

from __future__ import annotations

import base64

from judge.sandbox.server.lifecycle import MISS_LIMIT, SpareGuess
from judge.sandbox.server.warm.parents import WarmParents
from judge.sandbox.server.warm.shapes import shown_payloads
from judge.sandbox.zygote.prepare import SCIENTIFIC_NAMES, uses_scientific
from judge.sandbox.zygote.upgrade import OFFER
from toolkit.bench.templates import rstar_shape


def test_the_scan_picks_scientific_for_the_stack_and_lean_otherwise() -> None:
    names = SCIENTIFIC_NAMES
    assert uses_scientific('import sympy as sp', names) and uses_scientific('from numpy.linalg import det', names)
    assert uses_scientific('import os, scipy.special', names) and uses_scientific("__import__('mpmath')", names)
    assert not uses_scientific('import itertools\nprint(1)', names)
    assert not uses_scientific('import numpyish\nmy_sympy = 1', names), 'whole words only'


class _Started:
    """A zygote as `WarmParents` sees one that is ready as soon as it is started (pure logic, no process)."""

    ready = True

    def poll(self) -> None:
        pass


def test_the_parent_is_chosen_by_the_source_and_stands_in_while_one_starts() -> None:
    parents = WarmParents(lambda kind: _Started(), scientific=['sympy', 'numpy'])  # type: ignore[arg-type,return-value]
    assert parents.choose('print(1)') == ('lean', False), 'the bare parent starts; the lean one serves meanwhile'
    assert parents.choose('import sympy') == ('lean', False)
    assert parents.choose('print(1)') == ('bare', False)
    assert parents.choose('import sympy') == ('scientific', False)
    for source in ('import re\nprint(1)', 'x = __import__("re")', 'from math import pi', '# import nothing\nprint(1)'):
        assert parents.choose(source) == ('lean', True), source
    assert parents.choose(None) == ('lean', False), 'an argv execs: any parent will do'
    assert parents.choose('print(1)', 'lean') == ('lean', True)
    assert parents.choose('import sympy', 'bare') == ('bare', True)
    no_preload = WarmParents(lambda kind: _Started(), bare=False)  # type: ignore[arg-type,return-value]
    assert no_preload.choose('print(1)') == ('lean', True), 'a lean parent that preloads nothing is the bare one'
    assert no_preload.choose('print(1)', 'bare') == ('lean', True)


def test_payloads_encoded_in_base64_are_read_whatever_the_template() -> None:
    code = 'import sympy as sp\nprint(sp.factorint(360))'
    inner = base64.b64encode(f'exec(base64.b64decode("{base64.b64encode(code.encode()).decode()}"))'.encode())
    assert (
        shown_payloads(f'import base64\nexec(base64.b64decode("{base64.b64encode(code.encode()).decode()}"))') == code
    )
    url_safe = base64.urlsafe_b64encode(code.encode() + b'\n# ~~??').decode().rstrip('=')
    assert shown_payloads(f'import base64\ns = "{url_safe}"') == code + '\n# ~~??', 'URL-safe, unpadded'
    assert code in shown_payloads(f'import base64\nexec(base64.b64decode({inner!r}))'), 'a payload in a payload'
    not_text = base64.b64encode(bytes(range(128, 256))).decode()
    assert shown_payloads(f'x = "{not_text}"  # base64') == '', 'bytes that are not UTF-8 text'
    assert shown_payloads('a_very_long_identifier_name = other_long_identifier_name64') == ''
    bare = base64.b64encode(b'import numpy').decode()
    assert '64' not in bare and shown_payloads(f'x = "{bare}"  # b64') == 'import numpy'
    assert shown_payloads(f'x = "{bare}"') == '', 'a source that never says 64 decodes nothing'


def test_a_payload_ends_where_the_base64_alphabet_ends() -> None:
    """Non-ASCII text, padding and any other character bound a run; each run is read on its own."""
    first, second = base64.b64encode(b'import sympy!').decode(), base64.b64encode(b'print(2 + 20)').decode()
    assert first.endswith('=') and second.endswith('=')
    source = f'# b64\ns = "\u00e9{first}\u00e9"\nt = {second}{second}'
    assert shown_payloads(source) == 'import sympy!\nprint(2 + 20)\nprint(2 + 20)'
    short = base64.b64encode(b'import n').decode().rstrip('=')  # 11 characters: too short to be read
    assert len(short) < 12 and shown_payloads(f'# b64\n{short}') == ''


def test_a_template_carrying_scientific_code_in_base64_starts_in_the_scientific_parent() -> None:
    parents = WarmParents(lambda kind: _Started(), scientific=['sympy', 'numpy'])  # type: ignore[arg-type,return-value]
    parents.lineage('scientific').start_background()
    math, plain = rstar_shape('import sympy as sp\nsp.sqrt(8)'), rstar_shape('print(sum(range(10)))')
    assert parents.choose(math) == ('scientific', False)
    assert parents.choose(plain) == ('lean', True)
    hidden = plain.replace('base64.b64decode', 'bytes.fromhex').replace('64', '')
    for _ in range(4):  # both shapes have needed the scientific parent lately...
        parents.shapes.learn(plain, True)
        parents.shapes.learn(hidden, True)
    assert parents.hidden_imports(plain, 'lean') == ('lean', OFFER), '...but this payload shows no need of it'
    assert parents.hidden_imports(hidden, 'lean') == ('scientific', 0), 'no payload to read: the shape decides'


def test_spares_are_forked_ahead_only_while_their_kind_is_guessed_right() -> None:
    guess = SpareGuess()
    assert guess.fork_ahead()
    for _ in range(8):  # a stream alternating between parents: the spare forked ahead is the wrong one
        guess.score(missed=True)
    assert guess.misses > MISS_LIMIT and not guess.fork_ahead() and guess.held_back
    rounds = 0
    while not guess.fork_ahead():  # scored meanwhile: a steady stream brings forking ahead back
        guess.score(missed=False)
        rounds += 1
    assert 1 <= rounds <= 16 and not guess.held_back
