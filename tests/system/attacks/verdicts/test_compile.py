"""Compile: a failure the slot caused served from the cache, or a failure the source caused masked.

Only deterministic compiler diagnostics are cached (`judge.executors.compiled`): the decision uses what
the sandbox measured (limits hit, forks refused by the pids cgroup, signals, the exit code), never the
compiler's text.  A compile the slot starved is compiled again; nothing of the failure is cached.  A
source that makes the compiler run out of time, memory or file size, or crash, gets a compile error
saying so, never an infrastructure error (masked by trainers) nor a `queue_timeout` (the compile leaves
the run its time within the route's wait); only a node that cannot compile a control program answers
`internal_error` (tests/sandbox/test_healing.py).
"""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from tests.support.attacks.kit import (
    C_CLONE,
    CLONE_NR,
    CLONE_PARENT,
    SlotHealth,
    accepted,
    bash,
    batch,
    c,
    py,
    survived,
)
from tests.support.helpers import post
from tests.support.processes.host_view import pids_cgroup_dir

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

FORK_BOMB = """
import time
forks = 0
try:
    while forks < 200:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        forks += 1
except OSError:
    pass
report(forks=forks)
"""

BASH_FORK_BOMB = 'for i in $(seq 100); do sleep 30 & done 2>/dev/null; echo done\n'


def _cpp(tag: str) -> dict[str, object]:
    return c(f'#include <cstdio>\nint main() {{ std::puts("{tag}"); return 0; }}\n', tag, lang='cpp')


def _c(tag: str) -> dict[str, object]:
    return c(f'#include <stdio.h>\nint main(void) {{ puts("{tag}"); return 0; }}\n', tag)


def _fork_refusals(rel: str) -> int:
    events = (pids_cgroup_dir(rel) / 'pids.events').read_text().split()
    return int(events[events.index('max') + 1])


GCC_FORK_TRIES = 4
"""gcc (libiberty) tries a refused fork four times, sleeping 1, 2, 4 and 8 s, then gives up."""


@contextmanager
def _starved_once(health: SlotHealth) -> Iterator[dict[str, int]]:
    """Each slot may hold one process only (set on the host), as a slot full of leftovers would, until a
    compiler there has given up: the judge's second attempt then finds the slot as it should be."""
    rels = list(health.gate.cgroups)
    saved = {rel: (pids_cgroup_dir(rel) / 'pids.max').read_text() for rel in rels}
    baseline = {rel: _fork_refusals(rel) for rel in rels}
    refused = dict.fromkeys(rels, 0)
    stop = threading.Event()

    def restore_when_given_up() -> None:
        pending = set(rels)
        while pending and not stop.wait(0.05):
            for rel in list(pending):
                refused[rel] = _fork_refusals(rel) - baseline[rel]
                if refused[rel] >= GCC_FORK_TRIES:  # in its last sleep: it will not try again
                    (pids_cgroup_dir(rel) / 'pids.max').write_text(saved[rel])
                    pending.discard(rel)

    for rel in rels:
        (pids_cgroup_dir(rel) / 'pids.max').write_text('1')
    watcher = threading.Thread(target=restore_when_given_up)
    watcher.start()
    try:
        yield refused
    finally:
        stop.set()
        watcher.join()
        for rel, value in saved.items():
            (pids_cgroup_dir(rel) / 'pids.max').write_text(value)


def test_a_compile_starved_of_processes_is_compiled_again_and_never_cached_as_an_error(
    gateway_url: str, health: SlotHealth
) -> None:
    # The first attempt of each compile fails after gcc's 15 s of retries; the judge compiles again.
    tag = f'starved-{uuid.uuid4().hex[:8]}'
    with _starved_once(health) as refused:
        results = batch(gateway_url, [_cpp(tag), _c(tag)])
    assert all(n >= GCC_FORK_TRIES for n in refused.values()), refused  # both compilers were starved
    for result in results:
        accepted(result, f'{tag}\n')  # not a compile_error, to be served to every later submission
    for result in batch(gateway_url, [_cpp(tag), _c(tag)]):
        accepted(result, f'{tag}\n')
        assert result['compile']['cached'] is True, result  # the success is what was cached


def test_leftovers_of_earlier_submissions_never_fail_a_compile(gateway_url: str, health: SlotHealth) -> None:
    tag = f'after-bombs-{uuid.uuid4().hex[:8]}'
    bombs = [
        py(FORK_BOMB),
        py(CLONE_PARENT, nr=CLONE_NR[os.uname().machine]),
        bash(BASH_FORK_BOMB),
        c(C_CLONE),
    ]
    results = batch(gateway_url, [*bombs, _cpp(tag), _c(tag), *bombs, _cpp(tag), _c(tag)])
    for result in results:
        survived(result)
    for result in (results[4], results[5], results[10], results[11]):
        assert result['verdict'] == 'accepted' and result['stdout'] == f'{tag}\n', result


def test_compiler_text_cannot_turn_a_compile_error_into_an_infrastructure_error(
    gateway_url: str, health: SlotHealth
) -> None:
    tag = uuid.uuid4().hex[:8]
    lies = [
        c(f'#error Resource temporarily unavailable {tag}\n', lang='cpp'),
        c(f'#error "g++: fatal error: Killed signal terminated program cc1plus {tag}"\nint main(){{}}\n', lang='cpp'),
        c(f'#error vfork: Cannot allocate memory {tag}\n'),
    ]
    first = batch(gateway_url, lies)
    again = batch(gateway_url, lies)
    for result in first + again:
        assert result['verdict'] == 'compile_error', result
    assert [r['compile_cached'] for r in again] == [True, True, True], again  # deterministic: cached


COMPILE_BOMBS = {
    'c_preprocessor': (
        'c',
        '#define X0 x\n'
        + ''.join(f'#define X{i} X{i - 1} X{i - 1}\n' for i in range(1, 31))
        + 'int main(void) { int x = 0; X30; return 0; }\n',
    ),
    'cpp_constexpr_loop': (
        'cpp',
        'constexpr long f() { long s = 0; for (long i = 0; i < 200000; ++i) for (long j = 0; j < 200000; ++j) '
        's += i ^ j; return s; }\nconstexpr long v = f();\nint main() { return v & 1; }\n',
    ),
    'rust_huge_static': (
        'rust',
        'static BIG: [u8; 300 << 20] = [1; 300 << 20];\nfn main() { println!("{}", BIG[7]); }\n',
    ),
    'go_huge_array': (
        'go',
        'package main\nimport "fmt"\nvar big = [300 << 20]byte{1}\nfunc main() { fmt.Println(big[0]) }\n',
    ),
    'java_deep_expression': (
        'java',
        'public class Main { public static void main(String[] a) { int x = ' + '(' * 3000 + '1' + ')' * 3000 + ';'
        ' System.out.println(x); } }\n',
    ),
}


@pytest.mark.parametrize('route', ['/run', '/run/batch'])
def test_a_source_that_breaks_its_compiler_gets_a_compile_error_in_time(
    gateway_url: str, health: SlotHealth, route: str
) -> None:
    """Every compiled language: a bomb of time, file size or the compiler's own stack is the source's
    compile error, never an infrastructure error or a `queue_timeout` the source chose (one at a time: a
    queue behind bombs is the load's `queue_timeout`, which these do not measure)."""
    for name, (language, source) in COMPILE_BOMBS.items():
        sub = {'type': language, 'solution': f'{source}// {uuid.uuid4().hex}\n'}
        if route == '/run':
            result = post(gateway_url, '/run', sub, timeout_s=150)
        else:
            (result,) = batch(gateway_url, [sub], route=route)
        assert result['verdict'] == 'compile_error' and result['reason'] not in ('internal_error', 'queue_timeout'), (
            name,
            result,
        )
        assert result['compile_cached'] is False, (name, result)
        if name in ('c_preprocessor', 'cpp_constexpr_loop', 'rust_huge_static'):  # time or memory, by the machine
            # Ours, or (on a fast machine) the compiler's own limit first: g++ stops constant evaluation
            # after -fconstexpr-ops-limit operations; either way the source's compile error.
            own_limit = name == 'cpp_constexpr_loop' and 'exceeds limit' in result['stderr']
            assert result['stderr'].startswith('compilation exceeded the ') or own_limit, (name, result['stderr'][:200])
