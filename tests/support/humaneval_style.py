"""A HumanEval-style correctness set: problems with tests, right and wrong completions, known verdicts.

Each case is a whole program: a function completion followed by its checks, as HumanEval's
``check(candidate)`` does; a failed check exits non-zero (``runtime_error``), a wrong printed answer
against ``expected_output`` is ``wrong_answer``.  Several languages; every expected verdict is fixed
by the case itself, so a deploy that loses, duplicates or mixes up answers cannot pass.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

_PY_PROBLEMS: list[tuple[str, str, str, str]] = [
    # (name, right completion, wrong completion, checks)
    (
        'has_close_elements',
        'def has_close_elements(xs, t):\n'
        '    return any(abs(a - b) < t for i, a in enumerate(xs) for b in xs[i + 1:])\n',
        'def has_close_elements(xs, t):\n    return any(abs(a - b) < t for a, b in zip(xs, xs[1:]))\n',
        'assert has_close_elements([1.0, 2.8, 3.0, 4.0, 5.0, 2.0], 0.3)\n'
        'assert not has_close_elements([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.05)\n'
        'assert has_close_elements([1.0, 2.0, 5.9, 4.0, 5.0], 0.95)\n',
    ),
    (
        'below_zero',
        'def below_zero(ops):\n    b = 0\n    for op in ops:\n        b += op\n        if b < 0:\n'
        '            return True\n    return False\n',
        'def below_zero(ops):\n    return sum(ops) < 0\n',
        'assert not below_zero([])\nassert below_zero([1, 2, -4, 5, 6])\nassert not below_zero([1, -1, 2, -2])\n',
    ),
    (
        'fib',
        'def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n',
        'def fib(n):\n    a, b = 1, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n',
        'assert fib(10) == 55\nassert fib(1) == 1\nassert fib(12) == 144\n',
    ),
    (
        'is_palindrome',
        'def is_palindrome(s):\n    return s == s[::-1]\n',
        'def is_palindrome(s):\n    return s[0] == s[-1]\n',
        "assert is_palindrome('')\nassert is_palindrome('aba')\nassert not is_palindrome('abca')\n",
    ),
    (
        'sort_even',
        'def sort_even(xs):\n    evens = sorted(xs[::2])\n'
        '    return [evens[i // 2] if i % 2 == 0 else x for i, x in enumerate(xs)]\n',
        'def sort_even(xs):\n    return sorted(xs)\n',
        'assert sort_even([5, 6, 3, 4]) == [3, 6, 5, 4]\nassert sort_even([1, 2, 3]) == [1, 2, 3]\n',
    ),
]

_CPP_RIGHT = """#include <cassert>
#include <vector>
#include <cstdio>
long long sum_squares(const std::vector<long long>& v) { long long s = 0; for (auto x : v) s += x * x; return s; }
int main() { assert(sum_squares({1, 2, 3}) == 14); assert(sum_squares({}) == 0); std::puts("ok"); }
"""
_CPP_WRONG = _CPP_RIGHT.replace('s += x * x', 's += x')
_CPP_BROKEN = _CPP_RIGHT.replace('long long s = 0;', 'long long s = 0')

_JS_RIGHT = """const assert = require('assert');
function strlen(s) { return [...s].length; }
assert.strictEqual(strlen(''), 0); assert.strictEqual(strlen('abc'), 3); assert.strictEqual(strlen('héé'), 3);
console.log('ok');
"""
_JS_WRONG = _JS_RIGHT.replace('[...s].length', 'Buffer.byteLength(s)')

_JAVA = """public class Solution {
  static int gcd(int a, int b) { return b == 0 ? a : gcd(b, a %% b); }
  public static void main(String[] args) { System.out.println(gcd(%s)); }
}
"""

_GO = """package main

import "fmt"

func isPrime(n int) bool {
\tif n < 2 {
\t\treturn false
\t}
\tfor d := 2; d*d <= n; d++ {
\t\tif n%%d == 0 {
\t\t\treturn false
\t\t}
\t}
\treturn true
}

func main() { fmt.Println(isPrime(%d)) }
"""

_RUST = 'fn main() { let v: Vec<u64> = (1..=%d).collect(); println!("{}", v.iter().product::<u64>()); }\n'

_BASH = 'rev_words() { local out=""; for w in "$@"; do out="$w $out"; done; echo ${out%% }; }\nrev_words %s\n'


def cases() -> list[dict[str, Any]]:
    """Every case: a submission plus ``id`` and ``label`` (the verdict it must get)."""
    out: list[dict[str, Any]] = []

    def add(lang: str, solution: str, label: str, expected_output: str | None = None) -> None:
        sub: dict[str, Any] = {'type': lang, 'solution': solution, 'label': label, 'id': f'he-{len(out)}'}
        if expected_output is not None:
            sub['expected_output'] = expected_output
        out.append(sub)

    for name, right, wrong, checks in _PY_PROBLEMS:
        add('python', f'{right}\n{checks}print({name!r})\n', 'accepted', name)
        add('python', f'{wrong}\n{checks}print({name!r})\n', 'runtime_error')
    add('python', 'print(sum(i * i for i in range(10)))\n', 'wrong_answer', '284')  # 285
    add('python', 'while True:\n    pass\n', 'time_limit')
    add('cpp', _CPP_RIGHT, 'accepted', 'ok')
    add('cpp', _CPP_WRONG, 'runtime_error')
    add('cpp', _CPP_BROKEN, 'compile_error')
    add('javascript', _JS_RIGHT, 'accepted', 'ok')
    add('javascript', _JS_WRONG, 'runtime_error')
    add('java', _JAVA % '84, 36', 'accepted', '12')
    add('java', _JAVA % '84, 35', 'wrong_answer', '12')
    add('go', _GO % 97, 'accepted', 'true')
    add('go', _GO % 91, 'wrong_answer', 'true')
    add('rust', _RUST % 10, 'accepted', '3628800')
    add('bash', _BASH % 'a b c', 'accepted', 'c b a')
    add('bash', _BASH % 'a b c', 'wrong_answer', 'a b c')
    return out


def write_jsonl(path: Path) -> list[dict[str, Any]]:
    """Write `cases` to ``path`` (toolkit.evaluate's input) and return them."""
    rows = cases()
    path.write_text(''.join(json.dumps(row) + '\n' for row in rows))
    return rows


def check_records(records: list[dict[str, Any]], rows: list[dict[str, Any]]) -> None:
    """Every output record is its case's, in order, with the verdict the case names."""
    assert [r['id'] for r in records] == [row['id'] for row in rows], 'records lost, duplicated or reordered'
    wrong = [(r['id'], r['type'] if 'type' in r else '', r['label'], r.get('verdict')) for r in records]
    wrong = [w for w in wrong if w[2] != w[3]]
    assert not wrong, f'unexpected verdicts (id, lang, expected, got): {wrong}'
