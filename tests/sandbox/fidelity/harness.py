"""Runs corpus programs on real slots in every Python mode the judge has, and normalises what they print.

The modes (`CONFIGS`) are what a submission can run under: a fresh ``python3 -I source.py`` (the
reference: a faithful warm run prints what it prints), a warm fork with the default preload, a warm fork with
sympy and numpy preloaded, and each warm parent a slot execution request can name.  Outputs are
compared after `normalise`, which only rewrites what differs between two runs of the same program
anyway: the per-execution work dir and object addresses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shutil
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import pytest

from judge.runtime import submission_python
from judge.sandbox.client import ExecRequest, SlotClient, SlotConfig
from judge.sandbox.server.jail import available_tiers
from judge.sandbox.slots import claim_slot
from judge.settings import DEFAULT_PYTHON_PRELOAD, Settings
from tests.sandbox.fidelity.corpus.base import Program
from tests.support.processes.slots import RUN_LIMITS

PYTHON = submission_python(Settings())
DEFAULT_PRELOAD = [m for m in DEFAULT_PYTHON_PRELOAD.split(',') if m]
SCIENTIFIC_PRELOAD = [*DEFAULT_PRELOAD, 'sympy', 'numpy']
"""What an operator sets today to keep the scientific import out of each submission:
``JUDGE_PYTHON_PRELOAD`` with sympy and numpy added."""
SCIENTIFIC_PARENT = Settings().scientific_modules
"""What every slot's scientific warm parent imports, as in production (``JUDGE_PYTHON_SCIENTIFIC_PRELOAD``)."""
PARENT_KINDS = ('lean', 'scientific', 'bare')
PARENT_FIELD = 'parent'
"""The `ExecRequest` field naming the warm parent an execution goes through."""
LIMITS = RUN_LIMITS._replace(time_s=30.0, memory_mb=1024, capture_bytes=8 * 1024 * 1024)
"""Generous: the corpus checks what programs print, not limits (a scipy.stats import takes seconds
on a loaded 2-core machine); the whole output is kept so that large outputs are compared whole."""
SLOT_MEMORY_MB = 1536


class Config(NamedTuple):
    """One way of running a submission: ``mode`` is ``fresh`` or ``warm``; a warm one runs on the
    ``slot`` named (``default``: `DEFAULT_PRELOAD`, ``scientific``: `SCIENTIFIC_PRELOAD`), through
    ``parent`` when not None.  A fresh one runs on any slot: it execs a new interpreter."""

    name: str
    mode: str
    slot: str
    parent: str | None = None


FRESH = Config('fresh', 'fresh', 'scientific')
WARM = Config('warm', 'warm', 'default')
WARM_SCIENTIFIC = Config('warm-sympy-numpy', 'warm', 'scientific')


def warm_parents() -> tuple[str, ...]:
    """The warm parents a slot execution request can name: every kind in `PARENT_KINDS` when
    `ExecRequest` has the field `PARENT_FIELD`, none otherwise."""
    return PARENT_KINDS if PARENT_FIELD in {f.name for f in dataclasses.fields(ExecRequest)} else ()


def parent_configs() -> list[Config]:
    """One warm configuration per parent the slot supports, on the default slot."""
    return [Config(f'parent-{kind}', 'warm', 'default', kind) for kind in warm_parents()]


def runs(config: Config, program: Program) -> bool:
    """Whether ``config`` runs ``program``: the bare parent only serves programs without imports (the
    others would run there too, each paying its own imports, which the suite has no time for)."""
    return config.parent != 'bare' or 'import' not in program.source


def warm_configs() -> list[Config]:
    """Every warm configuration: the default preload, sympy and numpy preloaded, each parent."""
    return [WARM, WARM_SCIENTIFIC, *parent_configs()]


class Outcome(NamedTuple):
    """What a program showed: exit code, normalised stdout and stderr."""

    exit_code: int | None
    stdout: str
    stderr: str


_WORK_DIR = re.compile(r'/[^"\'\s]*/(?:x[0-9a-f]+/w|w[0-9a-f]+)(?=[/"\'\s]|$)')
_ADDRESS = re.compile(r' at 0x[0-9a-f]+')


def normalise(text: str) -> str:
    """``text`` with the execution's work dir as ``<wd>`` and object addresses as ``at 0x?``."""
    return _ADDRESS.sub(' at 0x?', _WORK_DIR.sub('<wd>', text))


def request(program: Program, config: Config) -> ExecRequest:
    """The slot request running ``program`` under ``config``, as the Python executor builds it."""
    if config.mode == 'fresh':
        return ExecRequest(
            limits=LIMITS,
            argv=[PYTHON, '-I', 'source.py'],
            files={'source.py': program.source},
            stdin=program.stdin,
        )
    extra = {} if config.parent is None else {PARENT_FIELD: config.parent}
    return ExecRequest(limits=LIMITS, python_source=program.source, stdin=program.stdin, **extra)


def run(slot: SlotClient, program: Program, config: Config) -> Outcome:
    """Run ``program`` once under ``config`` on ``slot``."""
    r = slot.run(request(program, config))
    assert not r.timed_out and not r.output_exceeded and not r.memory_exceeded, (program.name, config.name, r)
    return Outcome(
        r.exit_code, normalise(r.stdout.decode(errors='replace')), normalise(r.stderr.decode(errors='replace'))
    )


@contextlib.contextmanager
def open_slot(preload: list[str], tag: str) -> Iterator[SlotClient]:
    """A real slot in its own PID namespace, running programs as its unprivileged uid.

    Refuses (skips) anywhere else: the corpus is untrusted code like any submission, and is only
    run where it cannot signal or see the machine's other processes.
    """
    if os.getuid() != 0 or 'namespaces' not in available_tiers():
        pytest.skip('the fidelity corpus runs only in the namespaces tier (root, cgroups, unshare)')
    index, lock_fd = claim_slot()
    work = f'/tmp/judge-test-fidelity-{tag}-{os.getpid()}'
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=PYTHON,
            memory_mb=SLOT_MEMORY_MB,
            pids=64,
            tier='namespaces',
            work_root=work,
            extra={'preload': preload, 'scientific': SCIENTIFIC_PARENT},
        )
    )
    try:
        client.ensure_started()
        uid = int(client.detail.get('uid', 0))
        if client.tier != 'namespaces' or uid == 0:
            pytest.skip(f'refusing to run the corpus: tier {client.tier}, uid {uid}')
        yield client
    finally:
        client.close()
        os.close(lock_fd)
        shutil.rmtree(work, ignore_errors=True)


def run_corpus(
    slots: dict[str, SlotClient], programs: list[Program], configs: list[Config]
) -> dict[str, dict[str, Outcome]]:
    """Every program under every config: ``{config name: {program name: outcome}}``.

    The slots work side by side, each through its own warm configs one program after the other;
    fresh runs (a new interpreter, whatever the slot preloads) go to whichever slot is free first.
    """
    floating = deque((c, p) for c in configs if c.mode == 'fresh' for p in programs)

    def work(slot_name: str) -> list[tuple[str, str, Outcome]]:
        slot = slots[slot_name]
        done = [
            (c.name, p.name, run(slot, p, c))
            for c in configs
            if c.mode != 'fresh' and c.slot == slot_name
            for p in programs
            if runs(c, p)
        ]
        while True:
            try:
                config, program = floating.popleft()
            except IndexError:
                return done
            done.append((config.name, program.name, run(slot, program, config)))

    out: dict[str, dict[str, Outcome]] = {c.name: {} for c in configs}
    with ThreadPoolExecutor(len(slots)) as pool:
        for part in pool.map(work, list(slots)):
            for config_name, program_name, outcome in part:
                out[config_name][program_name] = outcome
    return out


def run_sequences(slots: dict[str, SlotClient], sequences: list[tuple[Config, list[Program]]]) -> list[list[Outcome]]:
    """Run each sequence's programs back to back on its config's slot, nothing else in between;
    the slots work side by side.  Returns the outcomes in the order given."""
    out: list[list[Outcome]] = [[] for _ in sequences]

    def work(slot_name: str) -> None:
        for index, (config, programs) in enumerate(sequences):
            if config.slot == slot_name:
                out[index] = [run(slots[slot_name], p, config) for p in programs]

    with ThreadPoolExecutor(len(slots)) as pool:
        list(pool.map(work, list(slots)))
    return out
