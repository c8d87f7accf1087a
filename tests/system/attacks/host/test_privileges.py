"""Privileges: dangerous syscalls (ptrace, unshare, setns, mount, bpf, io_uring, keyctl, clone into new
namespaces...) are refused, and a program runs with a clean environment, no capabilities, no inherited
descriptors, as its slot's uid (both in the main batch, `tests.support.attacks.batch`)."""

from __future__ import annotations

import os

import pytest

from tests.support.attacks.batch import MainBatch
from tests.support.attacks.kit import SafetyInfo, report_of, survived

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]


def test_dangerous_syscalls_are_refused(main_batch: MainBatch) -> None:
    if 'syscalls' not in main_batch.results:
        pytest.skip(f'no syscall table for {os.uname().machine}')
    result = main_batch.results['syscalls']
    survived(result)
    got = report_of(result)
    clone3 = got.pop('clone3')
    assert clone3 == 'ENOSYS', clone3  # so that glibc falls back to clone, whose flags seccomp can see
    for name, outcome in got.items():
        assert outcome == 'EPERM', (name, outcome)


def test_environment_is_clean_and_unprivileged(main_batch: MainBatch, safety_gate: SafetyInfo) -> None:
    result = main_batch.results['environment']
    survived(result)
    got = report_of(result)
    keys = got['keys']
    secret_prefixes = ('MAX_', 'JUDGE_', 'CELERY', 'AWS', 'LD_')
    assert 'REDIS_URI' not in keys and not [k for k in keys if k.startswith(secret_prefixes)], keys
    assert got['home'] and not got['home'].startswith('/root'), got
    assert got['uid'] in safety_gate.slot_uids and got['gid'] == got['uid'] and got['groups'] == [], got
    status = got['status']
    assert status['NoNewPrivs'] == '1' and status['Seccomp'] == '2', status
    for cap in ('CapInh', 'CapPrm', 'CapEff', 'CapAmb'):
        assert int(status[cap], 16) == 0, status
    assert got['fds'] == [], got  # no inherited descriptor beyond stdin/stdout/stderr
