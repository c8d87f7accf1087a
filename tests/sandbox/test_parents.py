"""Warm parents by kind (lean, scientific, bare), fresh random state in every child, seeded runs.

Through a real slot server (no Celery): the scientific parent imports sympy and numpy and runs its
warm-up; a program is sent to it by the words it uses, or by the request's ``parent``; a program
without imports goes to the bare parent.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator

import pytest

from judge.executors.base import Toolchain
from judge.executors.python import PythonExecutor
from judge.sandbox.client import ExecRequest, SandboxError, SlotClient, SlotConfig
from judge.sandbox.server.lifecycle import BARE_RUN
from judge.sandbox.slots import claim_slot
from judge.settings import DEFAULT_PYTHON_PRELOAD, DEFAULT_SCIENTIFIC_PRELOAD
from tests.support.paths import ROOT
from tests.support.processes.slots import PYTHON, RUN_LIMITS, open_slot

LIMITS = RUN_LIMITS._replace(time_s=60, memory_mb=512)

RANDOMS = """\
import json, random
import numpy as np, sympy
from sympy.core import random as sympy_random
print(json.dumps([random.random(), np.random.rand(), np.random.default_rng().random(),
                  np.random.RandomState().rand(), sympy_random.rng.random(),
                  sympy_random._assumptions_rng.random(), sympy.Dummy().dummy_index,
                  float(sympy.randprime(10**6, 10**7))]))
"""
COLUMNS = ['random', 'np.random', 'default_rng', 'RandomState()', 'sympy rng', 'assumptions rng', 'Dummy', 'randprime']


@pytest.fixture(scope='module')
def slot() -> Iterator[SlotClient]:
    extra = {
        'preload': DEFAULT_PYTHON_PRELOAD.split(','),
        'scientific': DEFAULT_SCIENTIFIC_PRELOAD.split(','),
        'pids': 64,
    }
    with open_slot('parents', allow_unsafe=os.getuid() != 0, extra=extra) as client:
        yield client


def run(slot: SlotClient, source: str, parent: str | None = None) -> tuple[str, str]:
    """The parent that ran ``source`` and its stdout (the program must succeed)."""
    r = slot.run(ExecRequest(limits=LIMITS, python_source=source, parent=parent))
    assert r.exit_code == 0, r.stderr.decode(errors='replace')
    return r.parent, r.stdout.decode()


def test_the_warm_parents_import_only_small_modules() -> None:
    """What a zygote imports to fork its children stays in every child's address space: no `typing`,
    `re`, `json`, `enum`, `collections`, `socket` or `signal` (see `judge.sandbox.fdio`)."""
    script = (
        'import sys\nbefore = set(sys.modules)\nsys.path.insert(0, sys.argv[1])\n'
        'from judge.sandbox.zygote import main, prepare\n'
        'prepare.find_random_states()\n'
        'print(" ".join(sorted(set(sys.modules) - before)))'
    )
    out = subprocess.run(
        [PYTHON, '-I', '-c', script, str(ROOT)], capture_output=True, text=True, check=True
    ).stdout.split()
    assert 'judge.sandbox.zygote.main' in out
    heavy = {'typing', 're', 'json', 'enum', 'collections', 'socket', 'signal', 'selectors', 'warnings', 'random'}
    assert not heavy & set(out), sorted(heavy & set(out))


DRIVER_PROBE = """\
import sys
sys.path.insert(0, sys.argv[1])
from judge.sandbox.zygote import prepare
print(prepare.driver_warm_up(2), 'ast' in sys.modules)  # a parent without the driver's modules: nothing run
import ast, base64, contextlib, io, linecache, traceback
compiled = []
sys.addaudithook(lambda event, args: event == 'compile' and compiled.append(1))
def seen():
    return (sorted(sys.modules), len(object.__subclasses__()), sys.stdout, sys.stderr, sorted(linecache.cache),
            sys.exc_info(), [k for k in dir(__builtins__) if not k.startswith('__')])
before = seen()
print(prepare.driver_warm_up(4), len(compiled), seen() == before)
"""


def test_the_driver_warm_up_runs_only_with_its_modules_and_leaves_nothing_behind() -> None:
    """The lean and scientific parents run a notebook-cell driver before forking (`prepare.driver_warm_up`):
    only when its modules are already imported, and without a module, class, stream or cache left over."""
    out = subprocess.run(
        [PYTHON, '-I', '-S', '-c', DRIVER_PROBE, str(ROOT)], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out[0] == 'False False'
    ran, compiles, unchanged = out[1].split()
    assert ran == 'True' and unchanged == 'True', out
    assert int(compiles) >= 4 * 4, 'each round parses and compiles its cells'


def test_programs_without_imports_go_to_the_bare_parent_when_they_come_in_a_row(slot: SlotClient) -> None:
    used = []
    for _ in range(200):  # the bare parent starts in the background on the first such program
        parent, out = run(slot, 'print(sum(range(10)))')
        assert out == '45\n'
        used.append(parent)
        if used[-BARE_RUN:] == ['bare'] * BARE_RUN:
            break
    assert used[-1] == 'bare', used
    probe = 'import sys\nprint(sorted(m for m in ("re", "typing", "ast") if m in sys.modules))'
    assert run(slot, probe) == ('lean', "['ast', 're', 'typing']\n"), 'a program with imports: exactly lean'
    assert run(slot, probe, 'bare') == ('bare', '[]\n'), 'the bare parent preloads nothing'
    assert run(slot, 'print(2 ** 100)')[1] == f'{2**100}\n'


def test_each_parent_serves_what_it_is_asked_and_the_scan_chooses_by_default(slot: SlotClient) -> None:
    assert run(slot, RANDOMS, 'scientific')[0] == 'scientific'  # waits for the scientific parent to start
    assert run(slot, RANDOMS, 'lean')[0] == 'lean'
    assert run(slot, 'import sympy\nprint(sympy.factorint(12))') == ('scientific', '{2: 2, 3: 1}\n')
    assert run(slot, 'print(sum(range(10)))', 'lean') == ('lean', '45\n')
    assert run(slot, 'print(sum(range(10)))')[1] == '45\n'
    with pytest.raises(SandboxError, match='unknown parent'):
        slot.run(ExecRequest(limits=LIMITS, python_source='print(1)', parent='huge'))
    assert run(slot, 'print(2)')[1] == '2\n', 'the slot serves on after a refused request'


@pytest.mark.parametrize('parent', ['scientific', 'lean', None])
def test_no_random_value_repeats_across_submissions(slot: SlotClient, parent: str | None) -> None:
    rows = [json.loads(run(slot, RANDOMS, parent)[1]) for _ in range(4)]
    for i, name in enumerate(COLUMNS):
        values = [row[i] for row in rows]
        assert len(set(values)) == len(values), f'{name} repeats across submissions: {values}'


def test_the_scientific_warm_up_leaves_what_a_fresh_import_shows(slot: SlotClient) -> None:
    probe = (
        'import json, sys, warnings, sympy, numpy\n'
        'regs = sorted(n for n, m in list(sys.modules.items()) if getattr(m, "__warningregistry__", None))\n'
        'print(json.dumps([sympy.Dummy().dummy_index - sympy.Dummy._base_dummy_index,'
        ' repr(warnings.filters), regs, numpy.get_printoptions()["precision"]]))'
    )
    warm = json.loads(run(slot, probe, 'scientific')[1])
    fresh = subprocess.run([PYTHON, '-I', '-c', probe], capture_output=True, text=True, check=True, env={})
    assert warm == json.loads(fresh.stdout)


SEEDED = """\
import random, numpy as np, sympy
from sympy.core import random as sympy_random
print(random.random(), np.random.rand(), np.random.default_rng().integers(10**9), np.random.RandomState().rand(),
      sympy_random.rng.random(), sympy.Dummy().dummy_index, hash('judge'), list({'a', 'b', 'c', 'd', 'e'}))
"""


def test_a_seed_replays_random_numpy_sympy_and_str_hashing_in_warm_and_fresh_mode(slot: SlotClient) -> None:
    out: dict[tuple[str, int | None], list[str]] = {}
    for mode in ('warm', 'fresh'):
        executor = PythonExecutor(Toolchain(python=PYTHON, cxx='g++', python_mode=mode), slot)
        for seed in (7, 7, 8, None, None):
            r = executor.run(SEEDED, None, b'', LIMITS, seed)
            assert r.exit_code == 0, r.stderr.decode(errors='replace')
            out.setdefault((mode, seed), []).append(r.stdout.decode())
    assert len(set(out['warm', 7] + out['fresh', 7])) == 1
    assert out['warm', 8] == out['fresh', 8] and out['warm', 8][0] != out['warm', 7][0]
    unseeded = out['warm', None] + out['fresh', None]
    assert len(set(unseeded)) == len(unseeded), 'without a seed, every run has fresh randomness'


def test_a_seeded_run_looks_like_an_unseeded_one(slot: SlotClient) -> None:
    executor = PythonExecutor(Toolchain(python=PYTHON, cxx='g++', python_mode='warm'), slot)
    probe = 'import os, sys\nprint(os.listdir("."), "PYTHONPATH" in os.environ, os.environ["PYTHONHASHSEED"])'
    r = executor.run(probe, None, b'', LIMITS, 3)
    assert r.stdout.decode().split('\n')[0] == "['source.py'] False 3", r.stderr


def test_one_blas_thread_in_the_scientific_parent_whose_numpy_is_preloaded(slot: SlotClient) -> None:
    source = (
        'import os, numpy as np\na = np.random.rand(300, 300)\nfor _ in range(5):\n    a = a @ a / 300\n'
        'print(len(os.listdir("/proc/self/task")), os.environ["OPENBLAS_NUM_THREADS"])'
    )
    assert run(slot, source, 'scientific') == ('scientific', '1 1\n')


def test_the_slot_reports_the_memory_of_its_parents(slot: SlotClient) -> None:
    run(slot, 'import sympy\nprint(1)', 'scientific')
    run(slot, 'print(1)', 'bare')
    memory = slot.memory()
    parents = memory['parents_pss_kb']
    assert set(parents) == {'lean', 'scientific', 'bare'} and parents['scientific'] > 20 * 1024, memory
    assert parents['bare'] < parents['lean'], 'the bare parent imports less than the lean one'
    assert memory['total_pss_kb'] >= memory['server_pss_kb'] + sum(parents.values())


@pytest.mark.skipif(os.getuid() != 0, reason='the isolated tiers need root')
def test_preloaded_modules_are_there_for_free_and_a_missing_one_is_harmless() -> None:
    index, lock_fd = claim_slot()
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=PYTHON,
            work_root=f'/tmp/judge-test-preload-{os.getpid()}',
            memory_mb=RUN_LIMITS.memory_mb,
            pids=RUN_LIMITS.pids,
            extra={'preload': ['ast', 'toolkit', 'no_such_module_for_the_test']},
        )
    )
    try:
        source = 'import sys\nprint([m in sys.modules for m in ("ast", "toolkit", "no_such_module_for_the_test")])'
        r = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=3), python_source=source))
        # the project's own directory is off sys.path when the zygote preloads: `toolkit` is not found
        assert (r.exit_code, r.stdout) == (0, b'[True, False, False]\n'), r
    finally:
        client.close()
        os.close(lock_fd)


def test_the_scientific_parent_has_its_own_renewal_bound() -> None:
    """Lean zygotes are replaced after ``renew_execs``; the scientific one, whose start costs far more,
    only after ``scientific_renew_execs``."""
    extra = {
        'preload': DEFAULT_PYTHON_PRELOAD.split(','),
        'scientific': DEFAULT_SCIENTIFIC_PRELOAD.split(','),
        'renew_execs': 3,
        'scientific_renew_execs': 40,
        'renew_s': 3600,
    }
    probe = 'import sys\nprint(hash("judge-secret"))'
    with open_slot('renewal', allow_unsafe=os.getuid() != 0, extra=extra) as client:
        lean = {run(client, probe, 'lean')[1] for _ in range(12)}
        scientific = [run(client, 'import sympy\n' + probe, 'scientific') for _ in range(12)]
    assert len(lean) >= 3, lean  # a fresh interpreter, with its own hash secret, every 3 executions
    assert {parent for parent, _ in scientific} == {'scientific'}
    assert len({out for _, out in scientific}) == 1, scientific
