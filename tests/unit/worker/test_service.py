"""The pool process's service (`judge.worker.service`): slot claims and sandbox failures, without a slot server."""

from __future__ import annotations

from pathlib import Path

import pytest

from judge.settings import Settings


def _bare_job(source: str) -> dict[str, object]:
    sub = {'sub_id': 's1', 'type': 'python', 'solution': source, 'input': '', 'expected_output': ''}
    return {'sub': sub, 'reply_to': '', 'index': 0, 'batch': ''}  # no reply list: nothing touches Redis


def test_a_host_without_a_free_slot_fails_the_task_not_the_submission(monkeypatch: pytest.MonkeyPatch) -> None:
    """`NoFreeSlot` is a `SandboxError` now, but it is the process's condition: the task fails as it
    always did (`judge.worker.tasks` answers for it), once per submission, and the next one claims again."""
    from judge.sandbox.errors import NoFreeSlot
    from judge.worker import service as worker

    claims: list[int] = []

    def no_slot(*_: object) -> tuple[int, int]:
        claims.append(1)
        raise NoFreeSlot('all sandbox slots of this host are in use')

    monkeypatch.setattr(worker, 'claim_slot', no_slot)
    monkeypatch.setattr(worker, 'describe_runtime', lambda _python: {'digest': 'x'})
    service = worker.Service(Settings())
    with pytest.raises(NoFreeSlot):
        service.start()  # at start-up (`judge.worker.tasks._start_slot` logs it)
    for n in (2, 3):
        with pytest.raises(NoFreeSlot):
            service.judge(_bare_job('print(1)'))  # type: ignore[arg-type]
        assert len(claims) == n


def test_a_sandbox_failure_is_the_submissions_internal_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from judge.sandbox.errors import SandboxError
    from judge.worker import service as worker

    class BrokenRunner:
        def run(self, _sub: object, wait_s: float | None = None) -> object:
            raise SandboxError('slot server failed to start')

    service = worker.Service(Settings())
    service._runner = BrokenRunner()  # type: ignore[assignment]
    result = service.judge(_bare_job('print(1)'))  # type: ignore[arg-type]
    assert result is not None and result['reason'] == 'internal_error', result
    assert 'SandboxError: slot server failed to start' in str(result), result


def test_a_slot_that_fails_to_start_gives_its_slot_number_back(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Each submission builds the runner again while the slot cannot start; it must not keep a slot
    number each time (4096 failures would take every slot of the host)."""
    from judge.sandbox.client import SlotClient
    from judge.sandbox.errors import SandboxError
    from judge.sandbox.slots import claim_slot
    from judge.worker import service as worker

    claimed: list[int] = []

    def claim(*_: object) -> tuple[int, int]:
        index, fd = claim_slot(str(tmp_path / 'locks'))
        claimed.append(index)
        return index, fd

    def refuse(self: SlotClient) -> None:
        raise SandboxError('slot server refused to start: JailError: no isolation is available')

    monkeypatch.setattr(worker, 'claim_slot', claim)
    monkeypatch.setattr(SlotClient, 'ensure_started', refuse)
    monkeypatch.setattr(worker, 'describe_runtime', lambda _python: {'digest': 'x'})
    monkeypatch.setenv('JUDGE_CACHE_DIR', str(tmp_path / 'cache'))
    monkeypatch.setenv('JUDGE_WORK_ROOT', str(tmp_path / 'work'))
    service = worker.Service(Settings())
    for _ in range(3):
        result = service.judge(_bare_job('print(1)'))  # type: ignore[arg-type]
        assert result is not None and result['reason'] == 'internal_error', result
        assert 'refused to start' in str(result)
    assert claimed == [0, 0, 0]


def test_toolchain_versions_are_learned_once_for_every_pool_process() -> None:
    """The worker's main process asks each toolchain its version before the pool forks (`worker_init`);
    the pool processes then find every answer in `tool_version`'s cache and start no tool."""
    from celery import signals

    from judge.executors import EXECUTORS
    from judge.executors.toolchain import tool_version
    from judge.worker import service as worker
    from judge.worker import tasks

    assert any(ref() is tasks._learn_toolchains for _, ref in signals.worker_init.receivers), 'not hooked'
    tool_version.cache_clear()
    learned = worker.learn_toolchain_versions(Settings())
    assert set(learned) == set(EXECUTORS) and learned['python'].startswith('Python 3'), learned
    asked = tool_version.cache_info().misses
    again = worker._toolchain(Settings(), 'digest')
    assert {lang: cls(again, None).version() for lang, cls in EXECUTORS.items()} == learned  # type: ignore[arg-type]
    assert tool_version.cache_info().misses == asked  # all from the cache


def test_the_warm_configuration_follows_the_settings() -> None:
    from judge.worker import service as worker

    settings = Settings(
        python_preload=' json, re ,,typing', python_scientific_preload='sympy', warm_renew_execs=7, slot_cpus=2
    )
    config = worker.warm_config(settings)
    assert config['preload'] == ['json', 're', 'typing'] and config['scientific'] == ['sympy']
    assert (config['renew_execs'], config['cpus']) == (7, 2)
    assert config['scientific_renew_execs'] == settings.warm_scientific_renew_execs
    assert config['renew_s'] == settings.warm_renew_s
