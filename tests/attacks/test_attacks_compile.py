"""Class 3: a compile failure caused by the slot (out of processes, memory or time) served from the cache.

Only deterministic compiler diagnostics are cached (`judge.executors.base`): the decision uses what the
sandbox measured (limits hit, forks refused by the pids cgroup, signals, the exit code), never the
compiler's text.  A compile the slot starved is compiled again and, failing again, is an
infrastructure error; nothing of it is cached, so the same source compiles on the next occasion.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.attack_kit import C_CLONE, CLONE_NR, CLONE_PARENT, SlotHealth, bash, batch, c, pids_cgroup_dir, py, survived

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


@contextmanager
def _starved(health: SlotHealth) -> Iterator[None]:
    """Every slot of the stack may hold one process only (set on the host), as a slot full of leftovers would."""
    files = [pids_cgroup_dir(rel) / 'pids.max' for rel in health.gate.cgroups]
    saved = {path: path.read_text() for path in files}
    try:
        for path in files:
            path.write_text('1')
        yield
    finally:
        for path, value in saved.items():
            Path(path).write_text(value)


def test_a_compile_starved_of_processes_is_an_infrastructure_error_and_never_cached(
    gateway_url: str, health: SlotHealth
) -> None:
    # gcc retries a refused fork four times over 15 s before it gives up, and the judge compiles once
    # more: about 30 s, both slots in parallel
    tag = f'starved-{uuid.uuid4().hex[:8]}'
    with _starved(health):
        starved = batch(gateway_url, [_cpp(tag), _c(tag)])
    for result in starved:
        # never the solution's fault: not compile_error, and the toolkit retries infrastructure errors
        assert result['verdict'] == 'internal_error', result
    first, second = batch(gateway_url, [_cpp(tag)], route='/run/batch'), batch(gateway_url, [_cpp(tag)])
    assert first[0]['verdict'] == 'accepted' and first[0]['compile']['cached'] is False, first  # nothing cached
    assert second[0]['verdict'] == 'accepted' and second[0]['compile']['cached'] is True, second
    c_again = batch(gateway_url, [_c(tag)])[0]
    assert c_again['verdict'] == 'accepted' and c_again['compile']['cached'] is False, c_again


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
