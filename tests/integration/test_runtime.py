"""The submission runtime through the real stack, over HTTP: results and `/status` name it, operator modules
are importable, fresh mode runs on the same runtime, and a seed replays a run in both modes."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.support.helpers import post, request
from tests.support.processes.services import Service, start_gateway, start_redis, start_worker
from tests.support.processes.stack import Stack
from tests.support.runtime import pins

pytestmark = pytest.mark.integration


def test_sympy_and_numpy_submissions_run_warm_and_name_their_runtime(stack: Stack) -> None:
    src = (
        'import sympy as sp, numpy as np\nx = sp.symbols("x")\n'
        'print(sp.solve(x**2 - 4, x), round(np.linalg.det(np.eye(3))))'
    )
    r = post(stack.url, '/run', {'type': 'python', 'solution': src, 'expected_output': '[-2, 2] 1'})
    assert r['verdict'] == 'accepted', r
    status, body = request(stack.url + '/status')
    assert status == 200
    node_runtime = body['nodes'][0]['runtime']
    assert r['runtime'] == body['runtime'] == node_runtime['digest'] and node_runtime['managed']
    assert node_runtime['packages']['sympy'] == pins()['sympy'] and node_runtime['modules']
    status, metrics = request(stack.url + '/metrics')
    assert f'digest="{r["runtime"]}"' in metrics and 'judge_runtime_info{' in metrics
    assert re.search(rf'judge_runtime_package_info\{{[^}}]*package="sympy",version="{pins()["sympy"]}"\}} 1', metrics)


def test_operator_modules_are_importable_and_read_only(stack: Stack) -> None:
    src = (
        'import boxed_scorer, hostile_scorer\n'
        'print(boxed_scorer.compute_score("so \\\\boxed{\\\\frac{1}{2}}", "0.5"))\n'
        'try:\n    open(boxed_scorer.__file__, "a")\nexcept OSError as e:\n    print("read-only")\n'
    )
    r = post(stack.url, '/run', {'type': 'python', 'solution': src})
    assert r['verdict'] == 'accepted', r
    assert r['stdout'].split() == ['1.0', 'read-only']


@pytest.fixture(scope='module')
def fresh_stack(stack: Stack, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    logs = tmp_path_factory.mktemp('fresh')
    redis, port = start_redis(logs)
    env = stack.env | {'REDIS_URI': f'redis://127.0.0.1:{port}/0', 'JUDGE_PYTHON_MODE': 'fresh'}
    env['JUDGE_WORK_ROOT'] = f'/tmp/judge-test-fresh-{port}'
    services: list[Service] = [redis]
    try:
        services.append(start_worker(env, logs, name='fresh', concurrency=1))
        gateway, url = start_gateway(env, logs)
        services.append(gateway)
        yield url
    finally:
        for svc in reversed(services):
            svc.stop()


def test_sympy_submissions_run_in_fresh_mode_on_the_same_runtime(stack: Stack, fresh_stack: str) -> None:
    src = 'import sympy, numpy, sys\nprint(sympy.factorint(360), sys.flags.isolated)'
    r = post(fresh_stack, '/run', {'type': 'python', 'solution': src, 'expected_output': '{2: 3, 3: 2, 5: 1} 1'})
    assert r['verdict'] == 'accepted', r
    warm = post(stack.url, '/run', {'type': 'python', 'solution': 'print(1)'})
    assert r['runtime'] == warm['runtime'], 'both modes run in the same runtime'


def test_a_seed_replays_a_run_over_http_in_warm_and_fresh_mode(stack: Stack, fresh_stack: str) -> None:
    src = 'import random\nprint(random.random(), hash("judge"), list({"a", "b", "c", "d"}))'
    seeded = {'type': 'python', 'solution': src, 'seed': 42}
    warm, fresh = post(stack.url, '/run', seeded), post(fresh_stack, '/run', seeded)
    assert warm['verdict'] == fresh['verdict'] == 'accepted', (warm, fresh)
    assert warm['stdout'] == fresh['stdout'] == post(stack.url, '/run', seeded)['stdout']
    unseeded = [post(stack.url, '/run', {'type': 'python', 'solution': src})['stdout'] for _ in range(2)]
    assert len({*unseeded, warm['stdout']}) == 3, 'no seed: fresh randomness'
    status, answer = request(stack.url + '/run', {'type': 'python', 'solution': src, 'seed': -1})
    assert status == 422, answer
