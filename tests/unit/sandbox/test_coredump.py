"""Where the host sends core dumps (`judge.sandbox.kernel.coredump`), the slot refusing a socket pattern
(`judge.sandbox.server.jail.Jail`), and the plan's rlimits leaving ``RLIMIT_CORE`` to the warm parent."""

from __future__ import annotations

import resource
from pathlib import Path

import pytest

from judge.sandbox.errors import JailError
from judge.sandbox.kernel import coredump
from judge.sandbox.limits import Limits, rlimits
from judge.sandbox.server.jail import Jail

PATTERNS = {
    'core': 'file',
    '/var/crash/core.%e.%p': 'file',
    '|/usr/share/apport/apport -p%p -s%s -c%c -d%d -P%P -u%u -g%g -- %E': 'pipe',
    '|/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h': 'pipe',
    '@/run/systemd/coredump-kernel': 'socket',
    '@@/run/systemd/coredump-kernel-request': 'socket',
}


@pytest.mark.parametrize(('pattern', 'kind'), PATTERNS.items())
def test_the_kind_of_each_core_pattern(tmp_path: Path, pattern: str, kind: str) -> None:
    assert coredump.pattern_kind(pattern) == kind
    sysctl = tmp_path / 'core_pattern'
    sysctl.write_text(pattern + '\n')
    assert coredump.host_pattern_kind(str(sysctl)) == kind


def _jail(allow_unsafe: bool) -> Jail:
    jail = Jail.__new__(Jail)
    jail.slot, jail.allow_unsafe, jail.detail = 3, allow_unsafe, {}
    return jail


@pytest.mark.parametrize('kind', ['file', 'pipe'])
def test_a_slot_accepts_file_and_pipe_patterns(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    monkeypatch.setattr(coredump, 'host_pattern_kind', lambda: kind)
    jail = _jail(allow_unsafe=False)
    jail._check_core_pattern()
    assert jail.detail == {'core_pattern': kind}


def test_a_slot_refuses_a_socket_pattern_unless_unsafe_tiers_are_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(coredump, 'host_pattern_kind', lambda: 'socket')
    with pytest.raises(JailError, match='socket'):
        _jail(allow_unsafe=False)._check_core_pattern()
    jail = _jail(allow_unsafe=True)
    jail._check_core_pattern()
    assert jail.detail == {'core_pattern': 'socket'}


def test_the_plan_leaves_the_core_limit_to_the_warm_parent() -> None:
    limits = Limits(time_s=2, memory_mb=256, output_bytes=1 << 20, file_bytes=1 << 20, pids=64)
    assert resource.RLIMIT_CORE not in [which for which, _, _ in rlimits(limits, set_nproc=True)]
    assert coredump.CORE_LIMIT == 1  # the one value a pipe pattern honours (fs/coredump.c)
