"""The RLinf tool worker inside RLinf 0.3.0's own machinery (``make test-rlinf``).

A 1-node RLinf ``Cluster`` on a private local CPU-only Ray; tool workers launched with
``create_group(cfg).launch(cluster, name, NodePlacementStrategy([0]))``; channels wired as
``AgentRunner`` wires them (``Tool-<group>`` inputs, one shared ``ToolOutput``); ``start_server()``
not waited; requests sent by RLinf's own rStar2 agent-loop code (``tests/frameworks/rlinf_probe.py``)
to a real gateway (redis-server, Celery prefork worker, uvicorn).  ``RLINF_EXT_MODULE`` names
``toolkit.rlinf.ext``, so every worker process runs its ``register()``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip('rlinf.scheduler', reason='RLinf is not installed: run `make test-rlinf`')

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # Ray start-up is slow on 2 busy cores

DEADLINE_S = 8.0  # > the test stack's 4 s time limit
DOWN_DEADLINE_S = 2.0
CONCURRENCY_LIMIT = 4
PY, NB = 'python_code_with_standard_io', 'jupyter_code'


@pytest.fixture(scope='module')
def rlinf(gateway_url: str, dead_url: str) -> Iterator[SimpleNamespace]:
    ray_tmp = tempfile.mkdtemp(prefix='ray-', dir='/tmp')  # short: Ray's socket paths have a length limit
    os.environ.update(
        {
            'RAY_ADDRESS': 'local',  # a fresh private Ray, never someone else's
            'RAY_USAGE_STATS_ENABLED': '0',
            'RAY_TMPDIR': ray_tmp,
            'GLOO_SOCKET_IFNAME': 'lo',
            'RLINF_EXT_MODULE': 'toolkit.rlinf.ext',
        }
    )
    import ray

    try:
        yield launch(urlsplit(gateway_url), urlsplit(dead_url))
    finally:  # also when launching failed or timed out: no Ray process may outlive the tests
        ray.shutdown()
        shutil.rmtree(ray_tmp, ignore_errors=True)


def launch(url: Any, dead: Any) -> SimpleNamespace:
    """Cluster, tool worker groups, channels and the agent-loop probe, wired as ``AgentRunner`` does."""
    from omegaconf import OmegaConf
    from rlinf.agents.rstar2.http_tool_worker import HttpToolWorker
    from rlinf.scheduler import Channel, Cluster, NodePlacementStrategy
    from rlinf.workers.agent.tool_worker import ToolChannelInfo

    from tests.frameworks.rlinf_probe import LoopProbe
    from toolkit.rlinf import JudgeToolWorker

    def cfg(netloc: Any = url, **codejudge: Any) -> Any:
        section = {'host_addr': netloc.hostname, 'host_port': netloc.port, 'concurrency_limit': 128, **codejudge}
        return OmegaConf.create({'tools': {'codejudge': section}})

    specs = {
        'JudgeToolWorker': (JudgeToolWorker, cfg(deadline_s=DEADLINE_S, concurrency_limit=CONCURRENCY_LIMIT)),
        'JudgeDown': (JudgeToolWorker, cfg(dead, deadline_s=DOWN_DEADLINE_S)),
        'HttpToolWorker': (HttpToolWorker, cfg(toolkit=False)),  # stock RLinf, opted out of toolkit.rlinf.ext
        'HttpRerouted': (HttpToolWorker, cfg(dead, deadline_s=DOWN_DEADLINE_S)),  # stock class, our tool
    }
    cluster = Cluster(num_nodes=1)
    place = NodePlacementStrategy([0])
    groups = {
        name: cls.create_group(c).launch(cluster, name=name, placement_strategy=place)
        for name, (cls, c) in specs.items()
    }
    output = Channel.create('ToolOutput')
    infos = {}
    for name, group in groups.items():
        channel = Channel.create(f'Tool-{group.worker_group_name}')
        group.init_worker(channel, output).wait()
        names = (
            list(JudgeToolWorker.TOOL_NAMES)
            if name.startswith('Judge')
            else [t.name for t in HttpToolWorker.TOOL_SET_CLS]
        )
        infos[group.worker_group_name] = ToolChannelInfo(tool_names=names, has_session=True, input_channel=channel)
    starts = {name: group.start_server() for name, group in groups.items()}  # not waited, as AgentRunner does
    loop_cfg = OmegaConf.merge(
        cfg(), {'data': {'max_prompt_length': 64}, 'runner': {'seq_length': 4096}, 'agentloop': {}}
    )
    probe = LoopProbe.create_group(loop_cfg).launch(cluster, name='AgentLoopProbe', placement_strategy=place)
    probe.init_worker(None, None, infos, {}, output).wait()  # no LLM: no generate channels
    return SimpleNamespace(probe=probe, groups=groups, infos=infos, starts=starts)


def raw(rl: SimpleNamespace, worker: str, calls: list[tuple[str, Any]]) -> list[tuple[float, Any]]:
    out: list[tuple[float, Any]] = rl.probe.raw_calls(worker, calls).wait()[0]
    return out


def stats(rl: SimpleNamespace, worker: str) -> dict[str, Any]:
    out: dict[str, Any] = rl.groups[worker].stats().wait()[0]
    return out


def test_start_server_runs_in_the_actors_event_loop(rlinf: SimpleNamespace) -> None:
    from toolkit.rlinf import JudgeToolWorker

    rlinf.starts['JudgeToolWorker'].wait()  # a threaded actor raised "no running event loop" here
    rlinf.groups['JudgeToolWorker'].start_server().wait()  # idempotent
    schemas = rlinf.groups['JudgeToolWorker'].tool_schemas().wait()[0]
    assert [s['function']['name'] for s in schemas] == [PY, NB]
    info = JudgeToolWorker.worker_info()
    assert (info.tool_names, info.has_session) == ([PY, NB], True)


def test_rstar2_trajectory_with_session(rlinf: SimpleNamespace) -> None:
    rlinf.probe.route({PY: 'JudgeToolWorker', NB: 'JudgeToolWorker'}).wait()
    calls = [
        (NB, {'code': 'x = 6 * 7'}),
        (NB, {'code': 'print(x)\nx + 1'}),
        (PY, {'code': 'print(input()[::-1])', 'input': 'abc'}),
    ]
    # two trajectories at once: each has its own session (notebook state), RLinf asserts session replies succeed
    one, two = rlinf.probe.trajectories([calls, [(NB, {'code': 'x = 1'}), (NB, {'code': 'x'})]]).wait()[0]
    assert one[0][1].startswith('Tool call success\nexecution time: ')
    assert one[1][1].startswith('Tool call success\nstdout: 42\n43\n\nexecution time: ')
    assert one[2][1].startswith('Tool call success\nstdout: cba\n\nexecution time: ')
    assert two[1][1].startswith('Tool call success\nstdout: 1\n\nexecution time: ')
    assert all(elapsed < DEADLINE_S + 1 for elapsed, _ in one + two)


def test_jupyter_code_runs_in_a_live_session_closed_at_session_end(rlinf: SimpleNamespace) -> None:
    """The same process answers every cell of a trajectory (a live judge session, not replayed cells), and
    RLinf's ``session_end`` closes it."""
    rlinf.probe.route({PY: 'JudgeToolWorker', NB: 'JudgeToolWorker'}).wait()
    calls = [(NB, {'code': 'import os\nfirst = os.getpid()'}), (NB, {'code': 'os.getpid() == first'})]
    [replies] = rlinf.probe.trajectories([calls]).wait()[0]
    assert replies[1][1].startswith('Tool call success\nstdout: True\n'), replies
    deadline = time.monotonic() + 10
    while stats(rlinf, 'JudgeToolWorker')['notebooks']['sessions'] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert stats(rlinf, 'JudgeToolWorker')['notebooks'] == {'trajectories': 0, 'sessions': 0, 'mode': 'auto'}


def test_success_agrees_with_rlinf_http_tool_worker(rlinf: SimpleNamespace) -> None:
    programs = ['print(42)', 'print(input())', 'raise ValueError("no")', 'import sys; sys.exit(3)', 'print(']
    calls = [(PY, {'code': code, 'input': 'hi'}) for code in programs]
    stock = raw(rlinf, 'HttpToolWorker', calls)  # RLinf's own worker against our gateway
    ours = raw(rlinf, 'JudgeToolWorker', calls)
    assert [r.success for _, r in stock] == [r.success for _, r in ours] == [True, True, False, False, False]
    assert stock[0][1].result.startswith('Tool call success\nstdout: 42\n')
    assert ours[0][1].result.startswith('Tool call success\nstdout: 42\n')
    for (_, s), (_, o) in zip(stock[2:], ours[2:], strict=True):
        assert s.result.split('\n')[:2] == o.result.split('\n')[:2] == ['Tool call failure', 'reason: ']
    assert all(r.meta_info['infra_error'] is False for _, r in ours) and stock[0][1].meta_info is None


def test_time_limit_and_bad_arguments_are_answered_by_the_deadline(rlinf: SimpleNamespace) -> None:
    calls = [
        (PY, {'code': 'while True: pass', 'input': ''}),
        (PY, {'code': 5, 'input': ''}),
        (PY, None),
        (PY, {'code': 'print(1)', 'input': 3}),
        ('no_such_tool', {'code': 'print(1)'}),
    ]
    replies = raw(rlinf, 'JudgeToolWorker', calls)
    assert all(elapsed < DEADLINE_S + 1 for elapsed, _ in replies)
    (_, limit), *bad = replies
    assert not limit.success and limit.result.startswith('Tool call failure\nreason: worker_timeout\n')
    assert (limit.meta_info['infra_error'], limit.meta_info['verdict']) == (False, 'time_limit')
    for _, reply in bad:
        assert not reply.success and reply.meta_info == reply.meta_info | {
            'infra_error': False,
            'reason': 'invalid_input',
        }
        assert reply.result.startswith('Tool call failure\nreason: invalid_input\n')


def test_gateway_down_is_answered_by_the_deadline(rlinf: SimpleNamespace) -> None:
    calls = [(PY, {'code': f'print({i})', 'input': ''}) for i in range(4)] + [(NB, {'code': '1'})]
    replies = raw(rlinf, 'JudgeDown', calls)
    assert all(elapsed < DOWN_DEADLINE_S + 1 for elapsed, _ in replies), [e for e, _ in replies]
    assert all(not r.success and r.meta_info['infra_error'] is True for _, r in replies)
    assert all(r.result.startswith('Tool call failure\nreason: ') for _, r in replies)


def test_concurrent_calls_are_batched_within_concurrency_limit(rlinf: SimpleNamespace) -> None:
    before = stats(rlinf, 'JudgeToolWorker')
    replies = raw(rlinf, 'JudgeToolWorker', [(PY, {'code': f'print({i} * 3)', 'input': ''}) for i in range(48)])
    assert [r.result.split('\n')[1] for _, r in replies] == [f'stdout: {i * 3}' for i in range(48)]
    after = stats(rlinf, 'JudgeToolWorker')
    sizes = {int(k): v - before['batch_sizes'].get(k, 0) for k, v in after['batch_sizes'].items()}
    assert max(k for k, v in sizes.items() if v) > 1  # batched, not one HTTP request per call
    assert max(sizes) <= CONCURRENCY_LIMIT  # tools.codejudge.concurrency_limit caps calls in flight


def test_ext_module_serves_stock_http_tool_worker(rlinf: SimpleNamespace) -> None:
    # RLinf's own HttpToolWorker class (as its rStar2 entry script launches it), pointed at a gateway
    # that is down: stock, it logs and drops the call and the trajectory waits forever; with
    # RLINF_EXT_MODULE=toolkit.rlinf.ext its tool is ours and answers by the deadline.
    [(elapsed, reply)] = raw(rlinf, 'HttpRerouted', [(PY, {'code': 'print(1)', 'input': ''})])
    assert elapsed < DOWN_DEADLINE_S + 1 and not reply.success and reply.meta_info['infra_error'] is True
    assert reply.result.startswith('Tool call failure\nreason: ')


def test_ext_module_registers_the_judge_reward(rlinf: SimpleNamespace, gateway_url: str) -> None:
    tests = '{"inputs": ["1 2\\n", "5 5\\n"], "outputs": ["3", "10"]}'
    texts = [
        'Sum them:\n```python\na, b = map(int, input().split())\nprint(a + b)\n```',
        '```python\nprint(3)\n```',
        'no code at all',
    ]
    scores = rlinf.probe.reward('codejudge', {'codejudge': {'base_url': gateway_url}}, texts, [[tests]] * 3).wait()[0]
    assert scores == [1.0, 0.5, 0.0]


def test_agent_loop_masks_trajectories_with_infrastructure_failures(rlinf: SimpleNamespace) -> None:
    # toolkit.rlinf.loop: RLinf's rStar2 loop, plus meta_info['infra_error'] carried to the RolloutResult
    rlinf.probe.route({PY: 'JudgeToolWorker', NB: 'JudgeDown'}).wait()
    good, program_error, judge_down = (
        (PY, {'code': 'print(1)', 'input': ''}),
        (PY, {'code': '1/0', 'input': ''}),
        (NB, {'code': '1'}),
    )
    fields, masks = rlinf.probe.masked_rollout([[good], [good, judge_down], [program_error]]).wait()[0]
    assert [f['judge_infra_errors'] for f in fields] == [0, 1, 0]
    assert masks == [[1, 1, 1], [0, 0, 0], [1, 1, 1]]
