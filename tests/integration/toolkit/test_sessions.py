"""The toolkit's session API against a real gateway: async and sync, a call sent again runs once, and the
notebooks the tools keep per trajectory (a live session, made again from its cells when it is gone)."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tests.support.helpers import request
from toolkit import BatchPolicy, Notebooks, Sessions, SyncSessions, cell_text, close_shared

pytestmark = pytest.mark.integration


def test_async_sessions_run_fork_and_close(gateway_url: str) -> None:
    async def main() -> None:
        async with Sessions(gateway_url) as sessions:
            nb = await sessions.create(kind='lean', seed=3)
            assert (await nb.run('x = 20')).ok
            result = await nb.run('x + 1')
            assert result.value == '21' and result.cell == 1 and result.ok and not result.restored
            assert cell_text(result).startswith('Tool call success\nstdout: 21\n')
            left, right = await nb.fork(2)
            await left.run('x = 0')
            assert (await right.run('x')).value == '20' and (await left.run('x')).value == '0'
            failed = await nb.run('1/0', error_style='line')
            assert not failed.ok and failed.verdict == 'runtime_error'
            assert failed.stderr == 'ZeroDivisionError at line 1: division by zero\n  1/0\n'
            assert (await nb.info())['cells'] == 3
            assert await nb.close() and not await nb.close()

    asyncio.run(main())


def test_sync_sessions(gateway_url: str) -> None:
    with SyncSessions(gateway_url) as sessions:
        nb = sessions.create(kind='lean')
        nb.run('import math\nr = 3')
        assert nb.run('round(math.pi * r * r, 2)').value == '28.27'
        (child,) = nb.fork(1)
        assert child.run('r').value == '3'
        assert child.info()['parent'] == nb.id
        assert nb.close() and child.close()


def test_a_call_sent_again_runs_once(gateway_url: str) -> None:
    status, info = request(f'{gateway_url}/sessions', {'kind': 'lean'})
    sid, call = info['session_id'], uuid.uuid4().hex
    request(f'{gateway_url}/sessions/{sid}/cells', {'code': 'n = 0'})
    first = request(f'{gateway_url}/sessions/{sid}/cells', {'code': 'n += 1\nn', 'call_id': call})[1]
    again = request(f'{gateway_url}/sessions/{sid}/cells', {'code': 'n += 1\nn', 'call_id': call})[1]
    assert first['value'] == again['value'] == '1' and first['cell'] == again['cell'] == 1
    assert request(f'{gateway_url}/sessions/{sid}/cells', {'code': 'n'})[1]['value'] == '1'


def test_notebooks_keep_a_trajectory_live_and_rebuild_it_when_it_is_gone(gateway_url: str) -> None:
    async def main() -> None:
        notebooks = Notebooks(gateway_url, BatchPolicy(deadline_s=60), kind='lean')
        first = await notebooks.run('traj', 'import random\nrandom.seed(5)\ndata = [1, 2]')
        assert first.ok and notebooks.stats() == {'trajectories': 1, 'sessions': 1, 'mode': 'auto'}
        sid = notebooks.sessions['traj']
        assert (await notebooks.run('traj', 'data.append(3); data')).stdout == ''
        assert request(f'{gateway_url}/sessions/{sid}', method='DELETE')[0] == 200  # as if it expired
        again = await notebooks.run('traj', 'sum(data)')
        assert again.value == '6' and notebooks.sessions['traj'] != sid  # made again from its cells
        await notebooks.fork('traj', ['a', 'b'])
        assert (await notebooks.run('a', 'data.append(10); sum(data)')).value == '16'
        assert (await notebooks.run('b', 'sum(data)')).value == '6'
        for key in ('traj', 'a', 'b'):
            live = notebooks.sessions[key]
            await notebooks.close(key)
            assert request(f'{gateway_url}/sessions/{live}')[0] == 404
        replay = Notebooks(gateway_url, BatchPolicy(deadline_s=60), mode='replay')
        await replay.run('t', 'y = 4')
        assert (await replay.run('t', 'y * y')).stdout == '16\n' and replay.sessions == {}
        await notebooks.aclose()
        await close_shared()

    asyncio.run(main())
