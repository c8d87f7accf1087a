"""Run and compile limits: built once from the settings, adjusted once per language, sent once to the
slot server; the same limits reach the child as with the code of 383bec0 (`tests/unit/executors/pins`)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judge.executors import EXECUTORS, base
from judge.sandbox.client import SlotConfig
from judge.sandbox.limits import Limits
from judge.sandbox.server.jail import Jail
from judge.settings import Settings
from judge.worker import service
from judge.worker.runner import RunnerConfig
from judge.worker.service import run_limits
from tests.unit.executors.capture import (
    PINS,
    SETTINGS,
    FakeSlot,
    capture_compiles,
    capture_runs,
    faked_tools,
    runner,
    settings_of,
)

pytestmark = pytest.mark.usefixtures('quiet_pch_build')
MIB = 1024 * 1024


@pytest.mark.parametrize('name', SETTINGS)
def test_every_language_runs_under_the_limits_of_383bec0(name: str) -> None:
    with faked_tools(static=True):
        runs = capture_runs(settings_of(name))
    assert {k: v['limits'] for k, v in runs.items()} == {k: v['limits'] for k, v in PINS[name]['runs'].items()}


@pytest.mark.parametrize('name', SETTINGS)
def test_every_compile_runs_under_the_limits_of_383bec0(name: str) -> None:
    for static in (True, False):
        with faked_tools(static):
            compiles = capture_compiles(settings_of(name), static)
        for key, got in compiles.items():
            pinned = PINS[name]['compiles'][key]
            assert got['compile_limits'] == pinned['compile_limits'], key
            assert [r['limits'] for r in got['requests']] == [r['limits'] for r in pinned['requests']], key


def test_the_default_settings_give_each_language_these_limits() -> None:
    """The pins, readable: what differs by language is the address-space headroom and whether
    ``RLIMIT_AS`` applies (the JVM and V8 reserve far more than they use)."""
    common = {'time_s': 10.0, 'memory_mb': 256, 'output_bytes': 16 * MIB, 'file_bytes': 16 * MIB, 'pids': 64}
    common |= {'capture_bytes': 64 * 1024, 'nofile': 256}
    by_language = {
        'python': (128, True),
        'bash': (64, True),
        'javascript': (64, False),
        'java': (64, False),
        'go': (1024, True),
        'c': (64, True),
        'cpp': (64, True),
        'rust': (64, True),
    }
    settings = Settings()
    judge = runner(settings, '/nonexistent', 'warm', FakeSlot())
    for language, (as_extra_mb, use_rlimit_as) in by_language.items():
        limits = judge.limits(language, None)
        assert limits == Limits(**common, as_extra_mb=as_extra_mb, use_rlimit_as=use_rlimit_as), language
    assert set(by_language) == set(EXECUTORS)


def test_each_language_adjusts_the_node_limits_once() -> None:
    settings = Settings()
    judge = runner(settings, '/nonexistent', 'warm', FakeSlot())
    original = base.Executor.run_limits
    with faked_tools(static=True), mock.patch.object(base.Executor, 'run_limits', autospec=True) as adjust:
        adjust.side_effect = original
        for _ in range(3):
            for expected in (None, 'x'):
                executor = judge.executor('bash')
                executor.run('echo 1', None, b'', judge.limits('bash', expected))
    assert adjust.call_count == 1
    ((_, limits), _) = adjust.call_args
    assert limits == run_limits(settings)


@given(
    max_chars=st.integers(0, 10**7),
    output_mb=st.integers(1, 32),
    expected=st.one_of(st.none(), st.integers(0, 20 * MIB)),
)
def test_the_capture_is_what_it_was(max_chars: int, output_mb: int, expected: int | None) -> None:
    """The rule of 383bec0's `Runner.limits`, applied in two steps now (the edge, then per submission)."""
    output_bytes = output_mb * MIB
    old = max(64 * 1024, 4 * max_chars)
    if expected is not None:
        old = max(old, expected + 64 * 1024)
    old = min(old, output_bytes)
    settings = Settings(max_stdout_error_length=max_chars, output_limit_mb=output_mb)
    judge = runner(settings, '/nonexistent', 'warm', FakeSlot())
    text = None if expected is None else 'x' * expected
    assert judge.limits('python', text).capture_bytes == old


def test_the_settings_hold_the_only_defaults() -> None:
    assert not {'time_s', 'memory_mb', 'output_bytes', 'file_bytes', 'pids'} & set(Limits._field_defaults)
    assert all(f.default is dataclasses.MISSING for f in dataclasses.fields(RunnerConfig))
    required = {f.name for f in dataclasses.fields(SlotConfig) if f.default is dataclasses.MISSING}
    assert {'memory_mb', 'pids'} <= required
    with pytest.raises(KeyError, match='memory_mb'):
        Jail({'tier': 'none', 'allow_unsafe': True})


def test_the_worker_builds_its_slot_and_runner_from_the_settings(tmp_path: Path) -> None:
    settings = Settings(cache_dir=str(tmp_path), max_memory=300, pids_limit=100, max_execution_time=3)
    started: list[SlotConfig] = []

    class Client:
        def __init__(self, config: SlotConfig) -> None:
            started.append(config)

        def ensure_started(self) -> None:
            pass

    with mock.patch.object(service, 'SlotClient', Client):
        built = service._build_runner(settings, '', 0)
    (config,) = started
    message = config.to_message()
    assert (message['memory_mb'], message['pids']) == (300, 100)
    assert built.config.limits == run_limits(settings)
    assert (built.config.limits.memory_mb, built.config.limits.pids, built.config.limits.time_s) == (300, 100, 3)


def test_limits_cross_to_the_slot_server_as_one_json_object() -> None:
    limits = run_limits(Settings())._replace(as_extra_mb=1024, use_rlimit_as=False)
    assert Limits.from_dict(json.loads(json.dumps(limits.to_dict()))) == limits
    assert Limits.from_dict({**limits.to_dict(), 'unknown': 1}) == limits
    with pytest.raises(TypeError):
        Limits.from_dict({k: v for k, v in limits.to_dict().items() if k != 'pids'})


class _Cgroup:
    def __init__(self) -> None:
        self.memory_mb: list[int] = []

    def set_memory_mb(self, memory_mb: int) -> None:
        self.memory_mb.append(memory_mb)

    def oom_kills(self) -> int:
        return 0

    def fork_refusals(self) -> int:
        return 0


def test_a_cgroup_tier_bounds_memory_by_the_cgroup_instead_of_rlimit_as() -> None:
    jail = Jail.__new__(Jail)
    jail.cgroup, jail.memory_mb, jail._counts_before = None, 256, None
    limits = run_limits(Settings())
    assert jail.effective_limits(limits) is limits
    cgroup = _Cgroup()
    jail.cgroup = cgroup  # type: ignore[assignment]
    assert jail.effective_limits(limits) == limits._replace(use_rlimit_as=False)
    assert cgroup.memory_mb == []
    assert jail.effective_limits(limits._replace(memory_mb=1024)) == limits._replace(
        memory_mb=1024, use_rlimit_as=False
    )
    assert cgroup.memory_mb == [1024] and jail.memory_mb == 1024


def test_compile_limits_are_built_once_per_executor() -> None:
    settings = Settings()
    with faked_tools(static=True):
        judge = runner(settings, '/nonexistent', 'warm', FakeSlot())
        cpp = judge.executor('cpp')
        assert cpp.compile_limits is cpp.compile_limits
        assert cpp.pch_limits == cpp.compile_limits._replace(time_s=120.0, memory_mb=2048, file_bytes=512 * MIB)  # type: ignore[attr-defined]
