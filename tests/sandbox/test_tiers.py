"""Isolation tiers of a slot server (`judge.sandbox.server.tiers`): no isolation is refused unless allowed, an
unknown tier is an error, and each tier isolates (uid, network, files, memory)."""

from __future__ import annotations

import os

import pytest

from judge.sandbox.client import ExecRequest, SandboxError, SlotClient, SlotConfig
from judge.sandbox.slots import claim_slot
from tests.support.processes.slots import PYTHON, RUN_LIMITS


def test_no_isolation_is_refused_without_the_unsafe_setting() -> None:
    client = SlotClient(
        SlotConfig(slot=4000, python=PYTHON, memory_mb=256, pids=64, tier='none', work_root='/tmp/judge-test-unsafe')
    )
    with pytest.raises(SandboxError, match='refusing to run untrusted code'):
        client.ensure_started()


def test_unknown_tier_is_an_error() -> None:
    client = SlotClient(
        SlotConfig(slot=4001, python=PYTHON, memory_mb=256, pids=64, tier='chroot', work_root='/tmp/judge-test-unsafe')
    )
    with pytest.raises(SandboxError, match='unknown sandbox tier'):
        client.ensure_started()


@pytest.mark.skipif(os.getuid() != 0, reason='the isolated tiers need root')
@pytest.mark.parametrize('tier', ['namespaces', 'landlock', 'uid'])
def test_each_tier_isolates(tier: str) -> None:
    index, lock_fd = claim_slot()
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=PYTHON,
            tier=tier,
            work_root=f'/tmp/judge-test-tier-{os.getpid()}',
            memory_mb=256,
            pids=64,
        )
    )
    try:
        client.ensure_started()
        assert client.tier == tier
        src = (
            'import os, socket\nprint(os.getuid())\n'
            'try:\n    socket.socket(socket.AF_INET).connect(("127.0.0.1", 9))\n'
            'except OSError as e:\n    print(e.errno)\n'
            'try:\n    open("/etc/hostname").read()\n    print("read")\nexcept OSError as e:\n    print(e.errno)\n'
        )
        r = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=3), python_source=src))
        uid, net, hostname = r.stdout.decode().split()
        assert int(uid) == 61000 + index and net == '1'  # EPERM from seccomp in every tier
        assert hostname == ('read' if tier == 'uid' else '13')  # Landlock: only the system's libraries are readable
        if tier != 'uid':
            bomb = client.run(
                ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source='x = bytearray(600 * 2**20)')
            )
            assert bomb.memory_exceeded and bomb.exit_code == -9  # the slot's memory cgroup
    finally:
        client.close()
        os.close(lock_fd)
