"""What a worker's signal dispositions pass on: nothing.  A worker that a script started in the background
ignores SIGINT (and SIGQUIT); its slot server and session host start every program as a fresh interpreter
would be started, so a warm child still gets ``KeyboardInterrupt`` and a session's cell can still be
interrupted (`judge.sandbox.kernel.namespaces.default_signals`)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from judge.sandbox.client import ExecRequest, SlotClient, SlotConfig
from judge.sandbox.slots import claim_slot
from judge.sandbox.zygote.cell import FLAG_INTERRUPTED
from tests.support.processes.sessions import cell, open_host, value
from tests.support.processes.slots import PYTHON, RUN_LIMITS

pytestmark = pytest.mark.skipif(os.getuid() != 0, reason='the namespaces tier and sessions need root')


@pytest.fixture
def ignoring() -> Iterator[None]:
    """This process ignores SIGINT and SIGQUIT and blocks SIGUSR1 while the test starts its servers."""
    before = signal.signal(signal.SIGINT, signal.SIG_IGN), signal.signal(signal.SIGQUIT, signal.SIG_IGN)
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, before[0])
        signal.signal(signal.SIGQUIT, before[1])


def test_a_warm_child_has_pythons_own_handlers(ignoring: None) -> None:
    index, lock_fd = claim_slot()
    client = SlotClient(
        SlotConfig(slot=index, python=PYTHON, tier='namespaces', work_root=f'/tmp/judge-test-sig-{os.getpid()}',
                   memory_mb=256, pids=64)
    )  # fmt: skip
    try:
        client.ensure_started()
        source = (
            'import signal\nprint(signal.getsignal(signal.SIGINT) is signal.default_int_handler,'
            ' signal.getsignal(signal.SIGQUIT) == signal.SIG_DFL, signal.pthread_sigmask(signal.SIG_BLOCK, []))'
        )
        result = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source=source))
        assert result.stdout.decode().split() == ['True', 'True', 'set()'], result
    finally:
        client.close()
        os.close(lock_fd)


def test_a_sessions_cell_is_still_interrupted(ignoring: None) -> None:
    with open_host('sigign') as host:
        reply, _ = host.request({'op': 'create', 'sid': 's', 'kind': 'lean'})
        assert reply.get('ok'), reply
        value(host, 's', 'kept = 1')
        reply, _, err = cell(host, 's', 'while True:\n    pass', time_s=1.0)
        assert reply['timed_out'] and reply['flags'] & FLAG_INTERRUPTED and not reply['ended'], (reply, err)
        assert 'KeyboardInterrupt' in err and value(host, 's', 'kept') == '1'
