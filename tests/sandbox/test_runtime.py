"""The managed submission runtime on this node (no Celery): exactly its pins, found again without a rebuild,
operator requirements on top of it, and the jail's view of it (read-only, importable, one BLAS thread)."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from judge import runtime
from judge.runtime import RuntimeSpec, submission_python
from judge.runtime.build import BuildError, build
from judge.sandbox.client import ExecRequest, SlotClient, SlotConfig
from judge.sandbox.server.jail import available_tiers
from judge.sandbox.slots import claim_slot
from judge.settings import Settings
from tests.support.processes.services import ROOT
from tests.support.processes.slots import RUN_LIMITS
from tests.support.runtime import pins

PINNED_IMPORTS = 'numpy scipy sympy mpmath networkx math_verify latex2sympy2_extended antlr4 sortedcontainers'


NAMESPACES = 'namespaces' in available_tiers()


def test_the_default_interpreter_is_the_built_runtime_with_exactly_the_pins() -> None:
    settings = Settings()
    info = runtime.locate(RuntimeSpec.from_settings(settings))
    assert submission_python(settings) == info.python
    assert info.path.startswith(settings.runtime_root) and info.managed
    assert info.packages == pins(), 'the runtime holds the pins and nothing else'
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


def test_operator_requirements_go_on_top_of_the_pins_without_moving_one(tmp_path: Path) -> None:
    base = RuntimeSpec.from_settings(Settings())
    reqs = tmp_path / 'requirements.txt'
    reqs.write_text('six==1.17.0\n')
    info = build(dataclasses.replace(base, requirements=str(reqs)))
    try:
        assert info.packages == pins() | {'six': '1.17.0'}
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
    assert int(uid) != 0 and version == pins()['sympy']
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
        assert out.split() == [pins()['sympy'], 'False']
    finally:
        shutil.rmtree(outer, ignore_errors=True)
