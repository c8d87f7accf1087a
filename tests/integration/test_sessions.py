"""Live sessions over real HTTP, Celery and Redis: create, cells, one at a time, fork, inspect, close, TTL,
restore by replay, recorded seeds and the cells whose replay is not faithful."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from tests.support.helpers import request

pytestmark = [pytest.mark.integration, pytest.mark.both_paths]


def make(url: str, **body: Any) -> str:
    status, info = request(f'{url}/sessions', body)
    assert status == 200, info
    assert info['live'] and info['node_alive'] and info['cells'] == 0, info
    return str(info['session_id'])


def run(url: str, sid: str, code: str, **body: Any) -> dict[str, Any]:
    status, result = request(f'{url}/sessions/{sid}/cells', {'code': code, **body})
    assert status == 200, result
    assert result['session_id'] == sid and result['verdict'] not in ('internal_error', 'queue_timeout'), result
    return dict(result)


def test_a_session_keeps_its_state_between_cells(gateway_url: str) -> None:
    sid = make(gateway_url)
    first = run(gateway_url, sid, 'import sympy as sp\nx = sp.Symbol("x")\nprint("ready")')
    assert first['verdict'] == 'accepted' and first['stdout'] == 'ready\n' and first['cell'] == 0
    second = run(gateway_url, sid, 'sp.solve(x**2 - 9, x)')
    assert second['value'] == '[-3, 3]' and second['cell'] == 1 and not second['restored']
    error = run(gateway_url, sid, 'print("half")\nundefined_name')
    assert error['verdict'] == 'runtime_error' and error['stdout'] == 'half\n' and 'NameError' in error['stderr']
    assert error['success'] is False and error['exit_code'] == 1
    assert run(gateway_url, sid, 'x + 1')['value'] == 'x + 1'  # the error did not end the session
    status, info = request(f'{gateway_url}/sessions/{sid}')
    assert status == 200 and info['cells'] == 4 and info['live'], info
    status, closed = request(f'{gateway_url}/sessions/{sid}', method='DELETE')
    assert status == 200 and closed['closed']
    assert request(f'{gateway_url}/sessions/{sid}')[0] == 404
    assert request(f'{gateway_url}/sessions/{sid}/cells', {'code': '1'})[0] == 404


def test_a_client_chooses_the_id_once(gateway_url: str) -> None:
    sid = f'traj-{time.monotonic_ns()}'
    assert make(gateway_url, session_id=sid, kind='lean') == sid
    assert request(f'{gateway_url}/sessions', {'session_id': sid})[0] == 409
    assert request(f'{gateway_url}/sessions', {'session_id': 'no spaces'})[0] == 422


def test_one_cell_at_a_time_waits_or_refuses(gateway_url: str) -> None:
    sid = make(gateway_url, kind='lean')
    run(gateway_url, sid, 'log = []')
    slow: list[dict[str, Any]] = []
    thread = threading.Thread(
        target=lambda: slow.append(run(gateway_url, sid, 'import time\nlog.append(1)\ntime.sleep(1.5)'))
    )
    thread.start()
    time.sleep(0.5)
    status, refused = request(f'{gateway_url}/sessions/{sid}/cells', {'code': 'log.append(2)', 'busy': 'error'})
    assert status == 409 and 'busy' in refused['detail'], refused
    waited = run(gateway_url, sid, 'log.append(3); list(log)')
    thread.join()
    assert slow[0]['verdict'] == 'accepted' and waited['value'] == '[1, 3]'


def test_a_fork_gives_independent_children(gateway_url: str) -> None:
    sid = make(gateway_url)
    run(gateway_url, sid, 'import sympy as sp\nstate = [1]\nopen("f.txt", "w").write("parent")')
    status, forked = request(f'{gateway_url}/sessions/{sid}/fork', {'n': 3})
    assert status == 200 and len(forked['children']) == 3, forked
    kids = [c['session_id'] for c in forked['children']]
    for i, kid in enumerate(kids):
        assert (
            run(gateway_url, kid, f'state.append({i}); open("f.txt", "w").write("{i}"); list(state)')['value']
            == f'[1, {i}]'
        )
    for i, kid in enumerate(kids):
        assert run(gateway_url, kid, 'list(state), open("f.txt").read()')['value'] == f"([1, {i}], '{i}')"
    assert run(gateway_url, sid, 'list(state), open("f.txt").read()')['value'] == "([1], 'parent')"
    status, info = request(f'{gateway_url}/sessions/{kids[0]}')
    assert info['parent'] == sid and info['forked_at'] == 1 and info['cells'] == 3, info


def test_a_fork_onto_a_taken_id_makes_none_of_its_children(gateway_url: str) -> None:
    sid = make(gateway_url, kind='lean')
    run(gateway_url, sid, 'n = 5')
    taken = make(gateway_url, kind='lean')
    fresh = [f'fresh-{i}-{time.monotonic_ns()}' for i in range(3)]
    status, refused = request(f'{gateway_url}/sessions/{sid}/fork', {'n': 4, 'session_ids': [*fresh, taken]})
    assert status == 409 and taken in refused['detail'], refused
    assert all(request(f'{gateway_url}/sessions/{kid}')[0] == 404 for kid in fresh), 'all or none'
    assert run(gateway_url, taken, '1 + 1')['value'] == '2', 'the existing session is untouched'
    status, forked = request(f'{gateway_url}/sessions/{sid}/fork', {'n': 3, 'session_ids': fresh})
    assert status == 200 and [c['session_id'] for c in forked['children']] == fresh, forked
    assert [run(gateway_url, kid, 'n')['value'] for kid in fresh] == ['5'] * 3
    status, info = request(f'{gateway_url}/sessions/{fresh[1]}')
    assert status == 200 and info['live'] and info['parent'] == sid, info


def test_a_cell_that_ends_the_session_is_followed_by_a_replay(gateway_url: str) -> None:
    sid = make(gateway_url, kind='lean', seed=7)
    drawn = run(gateway_url, sid, 'import random\nvalues = [random.random() for _ in range(3)]\nvalues')['value']
    ended = run(gateway_url, sid, 'import os\nos._exit(3)')
    assert ended['session_ended'] and ended['verdict'] == 'runtime_error'
    again = run(gateway_url, sid, 'values')
    assert again['restored'] and again['replayed'] == 1 and again['value'] == drawn
    assert not run(gateway_url, sid, 'values')['restored']


def test_seeded_sessions_draw_the_same_values(gateway_url: str) -> None:
    code = (
        'import random, numpy as np\n'
        '[random.randrange(10**9), int(np.random.randint(10**9)), int(np.random.default_rng().integers(10**9))]'
    )
    a, b = make(gateway_url, seed=123), make(gateway_url, seed=123)
    assert run(gateway_url, a, code)['value'] == run(gateway_url, b, code)['value']
    c = make(gateway_url)
    assert run(gateway_url, c, code)['value'] != run(gateway_url, a, code)['value']


def test_cells_replay_cannot_repeat_are_flagged(gateway_url: str) -> None:
    sid = make(gateway_url, kind='lean')
    assert run(gateway_url, sid, 'import time\nt = time.time()')['unfaithful'] == ['clock']
    assert run(gateway_url, sid, 'open("n.txt", "w").write("1")')['unfaithful'] == []
    assert run(gateway_url, sid, 'open("n.txt").read()')['unfaithful'] == ['file']
    status, info = request(f'{gateway_url}/sessions/{sid}')
    assert info['unfaithful'] == [{'cell': 0, 'reasons': ['clock']}, {'cell': 2, 'reasons': ['file']}], info


def test_an_idle_session_expires(gateway_url: str) -> None:
    sid = make(gateway_url, kind='lean', ttl_s=1)
    run(gateway_url, sid, 'x = 1')
    time.sleep(4)  # the host expires it within its maintenance period (2 s); the record goes with it
    status, answer = request(f'{gateway_url}/sessions/{sid}/cells', {'code': 'x'})
    assert status == 404, answer
    assert request(f'{gateway_url}/sessions/{sid}')[0] == 404
