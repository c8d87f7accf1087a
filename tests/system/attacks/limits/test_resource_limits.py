"""Resource limits: fork and thread bombs, a memory bomb, rlimits a program tries to raise, alarms cancelled to
outlive the wall limit, endless output, a huge file (all in the main batch, `tests.support.attacks.batch`).

Each test asserts what stopped the attack (the errno in the program's report, the verdict and exit code) and
that it was the limit, not the clock."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from judge.sandbox.kernel.coredump import CORE_LIMIT
from tests.support.attacks.batch import FILE_LIMIT, MAX_CHARS, MainBatch
from tests.support.attacks.kit import MEMORY_BOUND, NPROC_SLACK, PIDS_BOUND, report_of, survived
from tests.support.processes.stack import TIME_LIMIT_S, Stack

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]


def test_fork_bomb_is_stopped_by_the_pids_limit(main_batch: MainBatch) -> None:
    result = main_batch.results['fork_bomb']
    survived(result)
    got = report_of(result)
    assert got['errno'] == 'EAGAIN' and 0 < got['forks'] < PIDS_BOUND, got
    assert result['verdict'] == 'runtime_error' and result['exit_code'] == 1, result
    assert 'BlockingIOError: [Errno 11]' in result['stderr'], result
    assert result['cost'] < TIME_LIMIT_S, result  # stopped by the limit, not by the clock


def test_thread_bomb_is_stopped(main_batch: MainBatch) -> None:
    result = main_batch.results['thread_bomb']
    survived(result)
    got = report_of(result)
    assert got['error'] == "can't start new thread" and 0 < got['threads'] < PIDS_BOUND, got
    assert result['verdict'] == 'runtime_error', result
    assert "RuntimeError: can't start new thread" in result['stderr'], result


def test_memory_bomb_is_a_memory_limit(main_batch: MainBatch) -> None:
    result = main_batch.results['memory_bomb']
    survived(result)
    assert result['verdict'] == 'memory_limit', result
    assert result['success'] is False and result['run_success'] is False, result
    assert 'done' not in result['stdout'], result
    reached = [int(x) for x in result['stdout'].split()]
    assert max(reached, default=0) <= MEMORY_BOUND >> 20, reached  # killed at the 256 MiB cgroup limit


def test_rlimits_cannot_be_raised(main_batch: MainBatch) -> None:
    result = main_batch.results['rlimits']
    survived(result)
    got = report_of(result)
    limits = got['limits']
    for name in ('CPU', 'NPROC', 'FSIZE', 'NOFILE', 'CORE'):
        outcome, soft, hard = limits[name]
        assert outcome == 'ValueError:not allowed to raise maximum limit', (name, limits[name])
        assert 0 <= soft <= hard, (name, limits[name])
    # A backstop just above the wall limit (`judge.sandbox.limits.rlimits`): the wall clock ends busy programs.
    assert TIME_LIMIT_S < limits['CPU'][1] <= limits['CPU'][2] <= math.floor(TIME_LIMIT_S) + 2, limits['CPU']
    assert limits['NPROC'][2] <= PIDS_BOUND + NPROC_SLACK  # the pids cgroup is the bound; this a backstop
    assert limits['FSIZE'][2] == FILE_LIMIT
    assert limits['CORE'][1:] == [CORE_LIMIT, CORE_LIMIT]  # 1: a pipe core_pattern dumps nothing (test_core_dumps.py)
    assert limits['AS'][0] in ('unlimited', 'ValueError:not allowed to raise maximum limit')  # memory: cgroup
    assert got['prlimit_init'] == 'EPERM', got


def test_cancelled_alarms_still_hit_the_wall_limit(main_batch: MainBatch) -> None:
    result = main_batch.results['alarm']
    survived(result)
    assert (result['verdict'], result['reason'], result['exit_code']) == ('time_limit', 'worker_timeout', -9), result
    assert TIME_LIMIT_S - 0.5 <= result['cost'] <= TIME_LIMIT_S + 1.5, result
    assert result['stdout'].startswith('sleeping\n') and 'woke up' not in result['stdout'], result


@pytest.mark.parametrize('stream', ['stdout', 'stderr'])
def test_infinite_output_is_an_output_limit(main_batch: MainBatch, stream: str) -> None:
    result = main_batch.results[f'{stream}_flood']
    survived(result)
    assert result['verdict'] == 'output_limit' and result['exit_code'] == -9, result
    assert result[f'{stream}_truncated'] is True, result
    assert 0 < len(result[stream]) <= MAX_CHARS, len(result[stream])
    assert len(json.dumps(result)) < 4 * MAX_CHARS  # the answer stays small
    assert result['cost'] < TIME_LIMIT_S, result  # cut at the output cap, not by the clock


def test_huge_file_is_stopped_and_host_disk_untouched(stack: Stack, main_batch: MainBatch) -> None:
    result = main_batch.results['huge_file']
    survived(result)
    got = report_of(result)
    assert got['errno'] in ('EFBIG', 'ENOSPC') and got['mib'] <= FILE_LIMIT >> 20, got
    assert result['verdict'] == 'runtime_error', result
    assert '[Errno 27] File too large' in result['stderr'], result  # RLIMIT_FSIZE (SIGXFSZ is ignored)
    name = f'{main_batch.marker}.bin'
    work_root = Path(stack.env['JUDGE_WORK_ROOT'])
    assert not [p for p in work_root.rglob(name)], 'the file reached the host work root'
