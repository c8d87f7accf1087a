"""The managed submission runtime: pins, build cache, the jail's view of it, traceability over HTTP."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge import runtime
from judge.runtime import RuntimeSpec, build_key, requirement_lines, submission_python, tree_hash
from judge.runtime.build import BuildError, build
from judge.sandbox.client import ExecRequest, SlotClient, SlotConfig
from judge.sandbox.server.jail import available_tiers
from judge.sandbox.slots import claim_slot
from judge.settings import Settings
from tests.conftest import Stack
from tests.helpers import post, request
from tests.services import ROOT, Service, start_gateway, start_redis, start_worker
from tests.slots import RUN_LIMITS

PINNED_IMPORTS = 'numpy scipy sympy mpmath networkx math_verify latex2sympy2_extended antlr4 sortedcontainers'
NAMESPACES = 'namespaces' in available_tiers()


def _pins() -> dict[str, str]:
    out = {}
    for line in requirement_lines(runtime.PINS.read_text()):
        name, version = line.split('==')
        out[re.sub(r'\[.*\]', '', name).lower().replace('_', '-')] = version
    return out


def test_the_default_interpreter_is_the_built_runtime_with_exactly_the_pins() -> None:
    settings = Settings()
    info = runtime.locate(RuntimeSpec.from_settings(settings))
    assert submission_python(settings) == info.python
    assert info.path.startswith(settings.runtime_root) and info.managed
    assert info.packages == _pins(), 'the runtime holds the pins and nothing else'
    assert {'numpy', 'scipy', 'sympy', 'mpmath', 'networkx', 'math-verify', 'antlr4-python3-runtime'} <= set(
        info.packages
    )
    assert runtime.describe(info.python).digest == info.digest and len(info.digest) == runtime.DIGEST_CHARS


def test_a_second_build_finds_the_runtime_without_rebuilding() -> None:
    info = runtime.locate(RuntimeSpec.from_settings(Settings()))
    built_at = json.loads(Path(info.path, runtime.MANIFEST).read_text())['built_at']
    out = subprocess.run(
        [sys.executable, '-m', 'judge.runtime.build', '--json'], capture_output=True, text=True, check=True, cwd=ROOT
    )
    assert json.loads(out.stdout)['digest'] == info.digest
    assert json.loads(Path(info.path, runtime.MANIFEST).read_text())['built_at'] == built_at


def test_the_build_key_follows_every_input_and_ignores_comments(tmp_path: Path) -> None:
    mods, reqs = tmp_path / 'mods', tmp_path / 'extra.txt'
    mods.mkdir()
    (mods / 'scorer.py').write_text('def compute_score(a, r):\n    return 1.0\n')
    reqs.write_text('pandas==3.1.1\n')
    base = RuntimeSpec(root=str(tmp_path), base_python=sys.executable)
    with_mods = RuntimeSpec(root=str(tmp_path), base_python=sys.executable, modules=str(mods))
    keys = {build_key(base), build_key(with_mods)}
    keys.add(build_key(RuntimeSpec(root=str(tmp_path), base_python=sys.executable, requirements=str(reqs))))
    assert len(keys) == 3
    before = tree_hash(str(mods))
    (mods / '__pycache__').mkdir()
    (mods / '__pycache__' / 'scorer.cpython-311.pyc').write_bytes(b'cache')
    assert tree_hash(str(mods)) == before, 'byte-code caches are not inputs'
    (mods / 'scorer.py').write_text('def compute_score(a, r):\n    return 0.0\n')
    assert build_key(with_mods) not in keys
    reqs.write_text('# a comment\npandas==3.1.1  # pinned\n\n')
    assert build_key(RuntimeSpec(root=str(tmp_path), base_python=sys.executable, requirements=str(reqs))) in keys
    with pytest.raises(runtime.RuntimeMissing):
        runtime.locate(RuntimeSpec(root=str(tmp_path), base_python=sys.executable))


def test_operator_requirements_go_on_top_of_the_pins_without_moving_one(tmp_path: Path) -> None:
    base = RuntimeSpec.from_settings(Settings())
    reqs = tmp_path / 'requirements.txt'
    reqs.write_text('six==1.17.0\n')
    info = build(dataclasses.replace(base, requirements=str(reqs)))
    try:
        assert info.packages == _pins() | {'six': '1.17.0'}
        assert info.digest != runtime.locate(base).digest, 'the digest names what was added'
        done = subprocess.run(
            [info.python, '-I', '-c', 'import six, sympy; print(six.__version__)'], capture_output=True
        )
        assert done.stdout.decode().strip() == '1.17.0', done.stderr
        reqs.write_text('sympy==1.13.0\n')  # would move a pin: refused, nothing built
        with pytest.raises(BuildError, match='extra requirements'):
            build(dataclasses.replace(base, requirements=str(reqs)))
        assert not list(Path(base.root).glob('.tmp-*')), 'a failed build leaves nothing behind'
    finally:
        shutil.rmtree(info.path, ignore_errors=True)


@pytest.fixture(scope='module')
def slot() -> Iterator[SlotClient]:
    if os.getuid() != 0:
        pytest.skip('the jail tiers need root')
    python = submission_python(Settings())
    index, lock_fd = claim_slot()
    work = f'/tmp/judge-test-runtime-{os.getpid()}'
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=python,
            memory_mb=RUN_LIMITS.memory_mb,
            pids=RUN_LIMITS.pids,
            work_root=work,
            extra={'preload': ['numpy']},
        )
    )
    client.ensure_started()
    yield client
    client.close()
    os.close(lock_fd)
    shutil.rmtree(work, ignore_errors=True)


def _run(client: SlotClient, source: str, mode: str) -> tuple[int | None, str, str]:
    lim = RUN_LIMITS._replace(time_s=30, memory_mb=512)
    if mode == 'warm':
        req = ExecRequest(limits=lim, python_source=source)
    else:
        req = ExecRequest(limits=lim, argv=[client.config.python, '-I', 'source.py'], files={'source.py': source})
    r = client.run(req)
    return r.exit_code, r.stdout.decode(errors='replace'), r.stderr.decode(errors='replace')


@pytest.mark.parametrize('mode', ['warm', 'fresh'])
def test_the_runtime_is_importable_read_only_by_the_slot_uid_in_the_jail(slot: SlotClient, mode: str) -> None:
    source = (
        f'import os, importlib\nmods = [importlib.import_module(m) for m in {PINNED_IMPORTS.split()!r}]\n'
        'import sympy\nprint(os.getuid(), sympy.__version__)\n'
        'try:\n    open(sympy.__file__, "a")\nexcept OSError as e:\n    print("read-only", type(e).__name__)\n'
    )
    code, out, err = _run(slot, source, mode)
    assert code == 0, err
    uid, version, *rest = out.split()
    assert int(uid) != 0 and version == _pins()['sympy']
    assert rest[0] == 'read-only', out
    if NAMESPACES:
        assert slot.tier == 'namespaces'


@pytest.mark.parametrize('mode', ['warm', 'fresh'])
def test_one_blas_thread_even_with_numpy_preloaded(slot: SlotClient, mode: str) -> None:
    source = (
        'import os, numpy as np\na = np.random.rand(300, 300)\nfor _ in range(5):\n    a = a @ a / 300\n'
        'print(len(os.listdir("/proc/self/task")), os.environ["OMP_NUM_THREADS"], os.environ["OPENBLAS_NUM_THREADS"],'
        ' os.environ["MKL_NUM_THREADS"])'
    )
    code, out, err = _run(slot, source, mode)
    assert code == 0, err
    assert out.split() == ['1', '1', '1', '1'], out


@pytest.mark.skipif(not NAMESPACES, reason='needs the namespaces tier (root, cgroups, unshare)')
def test_a_runtime_inside_a_hidden_dir_stays_visible_and_its_neighbours_hidden(tmp_path: Path) -> None:
    info = runtime.locate(RuntimeSpec.from_settings(Settings()))
    os.makedirs('/srv', exist_ok=True)
    outer = Path(f'/srv/judge-test-runtime-{os.getpid()}')  # /srv is one of the jail's hidden dirs
    try:
        shutil.copytree(info.path, outer / 'rt', symlinks=True, copy_function=os.link)
        (outer / 'secret.txt').write_text('not for submissions')
        index, lock_fd = claim_slot()
        client = SlotClient(
            SlotConfig(
                slot=index,
                python=runtime.python_of(outer / 'rt'),
                memory_mb=RUN_LIMITS.memory_mb,
                pids=RUN_LIMITS.pids,
                work_root=str(tmp_path),
            )
        )
        try:
            src = f'import sympy, os\nprint(sympy.__version__, os.path.exists({str(outer / "secret.txt")!r}))'
            code, out, err = _run(client, src, 'warm')
        finally:
            client.close()
            os.close(lock_fd)
        assert code == 0, err
        assert out.split() == [_pins()['sympy'], 'False']
    finally:
        shutil.rmtree(outer, ignore_errors=True)


# ---- over HTTP, through the real stack -------------------------------------------------------


@pytest.mark.integration
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
    assert node_runtime['packages']['sympy'] == _pins()['sympy'] and node_runtime['modules']
    status, metrics = request(stack.url + '/metrics')
    assert f'digest="{r["runtime"]}"' in metrics and 'judge_runtime_info{' in metrics
    assert re.search(rf'judge_runtime_package_info\{{[^}}]*package="sympy",version="{_pins()["sympy"]}"\}} 1', metrics)


@pytest.mark.integration
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


@pytest.mark.integration
def test_sympy_submissions_run_in_fresh_mode_on_the_same_runtime(stack: Stack, fresh_stack: str) -> None:
    src = 'import sympy, numpy, sys\nprint(sympy.factorint(360), sys.flags.isolated)'
    r = post(fresh_stack, '/run', {'type': 'python', 'solution': src, 'expected_output': '{2: 3, 3: 2, 5: 1} 1'})
    assert r['verdict'] == 'accepted', r
    warm = post(stack.url, '/run', {'type': 'python', 'solution': 'print(1)'})
    assert r['runtime'] == warm['runtime'], 'both modes run in the same runtime'


@pytest.mark.integration
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
