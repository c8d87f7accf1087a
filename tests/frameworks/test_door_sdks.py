"""The doors' own client SDKs from PyPI against the real stack (``make test-doors``, their own venv):
``sandbox-fusion`` (ByteDance's SDK of SandboxFusion), ``judge0`` (Judge0's official SDK) and
``pistonpy`` (a Piston client).  Only the address changes: ``set_sandbox_endpoint``, the Judge0
client's endpoint, and pistonpy's hard-coded public endpoint (it has no setting for it).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

pytestmark = pytest.mark.integration


# --- sandbox-fusion ---------------------------------------------------------------------------------


def test_sandbox_fusion_sdk_runs_code_and_cells(gateway_url: str) -> None:
    sf = pytest.importorskip('sandbox_fusion', reason='run `make test-doors`')
    sf.set_sandbox_endpoint(gateway_url)
    resp = sf.run_code(sf.RunCodeRequest(code='print(input()[::-1])', stdin='abc', language='python'))
    assert resp.status == sf.RunStatus.Success and resp.run_result.stdout == 'cba\n'
    assert resp.run_result.status == sf.CommandRunStatus.Finished and resp.run_result.execution_time > 0
    mapping = sf.SummaryMapping(Success='ok', Failed='fail', CompileFailed='ce', RunTimeout='tle', RunFailed='re')
    bad = sf.run_code(sf.RunCodeRequest(code='int main( {', language='cpp'))
    assert sf.summary_run_code_result(bad, mapping) == 'ce'
    slow = sf.run_code(sf.RunCodeRequest(code='while True: pass', language='python', run_timeout=1))
    assert sf.summary_run_code_result(slow, mapping) == 'tle'
    crash = sf.run_code(sf.RunCodeRequest(code='raise SystemExit(4)', language='python'))
    assert sf.summary_run_code_result(crash, mapping) == 're' and crash.run_result.return_code == 4
    cells = sf.run_jupyter(sf.RunJupyterRequest(cells=['x = 6', 'x * 7', 'print(x)']))
    assert cells.status == sf.RunStatus.Success
    assert cells.cells[1].display == [{'text/plain': '42'}] and cells.cells[2].stdout == '6\n'


def test_sandbox_fusion_sdk_async_and_files(gateway_url: str) -> None:
    sf = pytest.importorskip('sandbox_fusion', reason='run `make test-doors`')
    import base64

    request = sf.RunCodeRequest(
        code='print(open("in.txt").read()); open("out.txt", "w").write("done")',
        language='python',
        files={'in.txt': base64.b64encode(b'hello').decode()},
        fetch_files=['out.txt'],
    )
    resp = asyncio.run(sf.run_code_async(request, endpoint=gateway_url))
    assert resp.status == sf.RunStatus.Success and resp.run_result.stdout == 'hello\n'
    assert base64.b64decode(resp.files['out.txt']) == b'done'


# --- judge0 -----------------------------------------------------------------------------------------


@pytest.fixture
def judge0_client(gateway_url: str) -> Iterator[object]:
    judge0 = pytest.importorskip('judge0', reason='run `make test-doors`')
    yield judge0.Client(gateway_url)


def test_judge0_sdk_runs_and_judges_test_cases(judge0_client: object) -> None:
    import judge0

    result = judge0.run(
        client=judge0_client, source_code='print(f"hello {input()}")', stdin='judge', language=judge0.PYTHON
    )
    assert result.status == judge0.Status.ACCEPTED and result.stdout == 'hello judge\n'
    assert result.time is not None and result.memory > 0 and result.token is not None
    cases = [('1', '2'), ('2', '4'), ('3', '7')]
    results = judge0.run(
        client=judge0_client, source_code='print(int(input()) * 2)', test_cases=cases, language=judge0.PYTHON
    )
    assert [r.status for r in results] == [judge0.Status.ACCEPTED] * 2 + [judge0.Status.WRONG_ANSWER]
    cpp = judge0.run(client=judge0_client, source_code='int main( {', language=judge0.CPP)
    assert cpp.status == judge0.Status.COMPILATION_ERROR and 'error' in cpp.compile_output
    slow = judge0.run(client=judge0_client, source_code='while True: pass', cpu_time_limit=1, language=judge0.PYTHON)
    assert slow.status == judge0.Status.TIME_LIMIT_EXCEEDED


def test_judge0_sdk_async_submissions_and_wait(judge0_client: object) -> None:
    import judge0

    subs = [judge0.Submission(source_code=f'print({i} * {i})', language=judge0.PYTHON) for i in range(4)]
    created = judge0.async_execute(client=judge0_client, submissions=subs)
    assert all(s.token for s in created)
    done = judge0.wait(client=judge0_client, submissions=created)
    assert [s.stdout for s in done] == ['0\n', '1\n', '4\n', '9\n']


# --- pistonpy ---------------------------------------------------------------------------------------


def test_pistonpy_runs_code_on_the_piston_door(gateway_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pistonpy = pytest.importorskip('pistonpy', reason='run `make test-doors`')
    from pistonpy import models

    execute = f'{gateway_url}/api/v2/execute'
    real_init = models.GetOutput.__init__

    def pointed(self: object, payload: dict[str, object]) -> None:
        real_init(self, payload)
        self._endpoint = execute  # type: ignore[attr-defined]  # pistonpy hard-codes the public Piston

    monkeypatch.setattr(models.GetOutput, '__init__', pointed)
    app = pistonpy.PistonApp()
    app._endpoint = f'{gateway_url}/api/v2'
    assert 'python' in app.languages and 'py' in app.aliases['python']
    out = app.run(
        language='python', version='3', code='import sys\nprint(input(), sys.argv[1:])', input='hi', args=['x']
    )
    assert out['run']['stdout'] == "hi ['x']\n" and out['run']['code'] == 0 and out['language'] == 'python'
    cpp = app.run(language='cpp', code='#include <cstdio>\nint main(){puts("c++");}')
    assert cpp['compile']['code'] == 0 and cpp['run']['output'] == 'c++\n'
    with pytest.raises(pistonpy.exceptions.PistonError, match='runtime is unknown'):
        app.run(language='brainfuck', code='+')
