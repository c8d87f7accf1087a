"""verl's own SandboxFusion clients against the judge's SandboxFusion door (``make test-verl``).

* The reward: verl's ``default_compute_score`` for the data sources it sends to SandboxFusion
  (``codecontests``, ``apps``, ``codeforces``, ``taco``), with the URL, semaphore and memory limit its
  reward loader passes (``verl.trainer.ppo.reward.load_reward_manager``), and its ``compute_score``
  and ``check_correctness`` (per-test codes: True/False, -2 runtime error, -3 time limit, -4 compile).
* Its retry: verl retries HTTP 504 only; a judge that is full answers 504 and verl's second or third
  try is scored.
* The tool: ``verl.tools.sandbox_fusion_tools.SandboxFusionTool`` built by verl's
  ``initialize_tools_from_config`` from verl's example YAML (only the URL changed), on a local Ray.
  verl 0.9.1's wheel no longer ships that module (moved out of the package): its test is skipped there.

The gateway is real (redis-server, Celery prefork worker, uvicorn); nothing is stood in for.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import multiprocessing
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

verl = pytest.importorskip('verl', reason='verl is not installed: run `make test-verl`')
yaml = pytest.importorskip('yaml')

from tests.support.processes.services import start_gateway  # noqa: E402
from tests.support.processes.stack import Stack  # noqa: E402

pytestmark = pytest.mark.integration

GOOD = '```python\na, b = map(int, input().split())\nprint(a + b)\n```'
TESTS = {'inputs': ['1 2', '3 4', '10 20'], 'outputs': ['3\n', '7\n', '30\n']}
HAS_TOOL = importlib.util.find_spec('verl.tools.sandbox_fusion_tools') is not None


@pytest.fixture(scope='module')
def run_code_url(gateway_url: str) -> str:
    return gateway_url + '/run_code'


def score(url: str, solution: str, tests: dict[str, Any], source: str = 'codecontests') -> Any:
    """verl's reward dispatch, with what its reward loader binds (URL, a Manager semaphore, memory)."""
    from verl.utils.reward_score import default_compute_score

    semaphore = multiprocessing.Manager().Semaphore(8)
    return default_compute_score(
        source,
        solution,
        json.dumps(tests),
        sandbox_fusion_url=url,
        concurrent_semaphore=semaphore,
        memory_limit_mb=1024,
    )


def test_verls_reward_scores_a_right_and_a_partly_right_solution(run_code_url: str) -> None:
    for source in ('codecontests', 'apps', 'codeforces', 'taco'):
        assert score(run_code_url, GOOD, TESTS, source) == 1.0
    half = '```python\na, b = map(int, input().split())\nprint(a + b if a < 5 else 0)\n```'
    assert score(run_code_url, half, TESTS) == pytest.approx(2 / 3)


def test_verls_per_test_codes(run_code_url: str) -> None:
    from verl.utils.reward_score.sandbox_fusion import compute_score
    from verl.utils.reward_score.sandbox_fusion.utils import check_correctness

    cases = {'inputs': ['1', '2', '3', '4'], 'outputs': ['1\n', '2\n', '3\n', '4\n']}
    code = 'import sys, time\nn = int(input())\nif n == 2: print(5)\nif n == 3: sys.exit(1)\n'
    code += 'if n == 4: time.sleep(60)\nprint(n)'
    results, meta = check_correctness(run_code_url, cases, code, timeout=2)
    assert results == [True, False, -2, -3], meta
    assert [m['status'] for m in meta] == ['success', 'wrong_answer', 'runtime_error', 'timeout']
    results, meta = check_correctness(run_code_url, cases, 'int main( {', timeout=2, language='cpp')
    assert results == [-4] * 4 and meta[0]['status'] == 'compile_error'
    # fn_name problems: verl wraps the function and feeds JSON arguments on stdin
    fn = {'inputs': ['[1, 2]\n3'], 'outputs': ['[1, 2, 3]'], 'fn_name': 'append'}
    solution = '```python\ndef append(xs, x):\n    return xs + [x]\n```'
    assert compute_score(run_code_url, None, 1024, solution, fn)[0] == 1.0


@pytest.fixture
def full_gateway(stack: Stack) -> Iterator[str]:
    """A gateway on the session's worker with room for one submission in flight."""
    svc, url = start_gateway({**stack.env, 'JUDGE_MAX_IN_FLIGHT': '1'}, stack.log_dir)
    try:
        yield url
    finally:
        svc.stop()


def test_verl_retries_the_504_of_a_full_judge_and_scores_the_answer(full_gateway: str) -> None:
    from verl.utils.reward_score.sandbox_fusion.utils import call_sandbox_api

    holder = threading.Thread(
        target=call_sandbox_api, args=(full_gateway + '/run_code', 'import time; time.sleep(1.5)', None, 10, 10, 256)
    )
    holder.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    answer, error = call_sandbox_api(full_gateway + '/run_code', 'print(42)', None, 10, 10, 256)
    holder.join(30)
    assert error is None and answer['status'] == 'Success' and answer['run_result']['stdout'] == '42\n'
    assert time.monotonic() - t0 >= 1.0, 'the first try was refused (504) and retried'


@pytest.mark.skipif(not HAS_TOOL, reason=f'verl {verl.__version__} ships no verl.tools.sandbox_fusion_tools')
def test_verls_sandbox_fusion_tool_runs_code_through_the_door(tmp_path: Path, run_code_url: str) -> None:
    import ray

    doc = {
        'tools': [
            {
                'class_name': 'verl.tools.sandbox_fusion_tools.SandboxFusionTool',
                'config': {
                    'sandbox_fusion_url': run_code_url,
                    'num_workers': 2,
                    'enable_global_rate_limit': True,
                    'rate_limit': 2,
                    'default_timeout': 30,
                    'default_language': 'python',
                    'memory_limit_mb': 1024,
                    'type': 'native',
                },
                'tool_schema': {
                    'type': 'function',
                    'function': {
                        'name': 'code_interpreter',
                        'description': 'A tool for executing code.',
                        'parameters': {
                            'type': 'object',
                            'properties': {'code': {'type': 'string', 'description': 'The code to execute.'}},
                            'required': ['code'],
                        },
                    },
                },
            }
        ]
    }
    path = tmp_path / 'sandbox_fusion_tool_config.yaml'
    path.write_text(yaml.safe_dump(doc))
    registry = 'verl.tools.tool_registry' if importlib.util.find_spec('verl.tools.tool_registry') else None
    registry = registry or 'verl.tools.utils.tool_registry'
    ray.init(num_cpus=2, include_dashboard=False, ignore_reinit_error=True)
    try:
        (tool,) = importlib.import_module(registry).initialize_tools_from_config(str(path))

        async def main() -> list[str]:
            created = await tool.create()
            iid = created if isinstance(created, str) else created[0]
            texts = []
            for code in (
                'print(6 * 7)',
                'import sys; print("out"); sys.stderr.write("err"); sys.exit(3)',
                'while 1: pass',
            ):
                resp, _, _ = await tool.execute(iid, {'code': code, 'timeout': 2})
                texts.append(resp if isinstance(resp, str) else resp.text)
            await tool.release(iid)
            return texts

        assert asyncio.run(main()) == ['42\n', 'out\nerr', 'no stdout here']
    finally:
        ray.shutdown()
