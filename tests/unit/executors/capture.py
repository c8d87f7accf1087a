"""What the executors send to the slot, captured without a slot: the runner and executors over a fake
`SlotClient` that records every `ExecRequest` (tools, versions and the C++ header faked).

`tests/unit/executors/pins/executor_requests.json` holds the same capture made with the code of 383bec0.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from judge.executors import EXECUTORS, Compiled, Toolchain, base, c, cpp
from judge.sandbox.client import ExecRequest, ExecResult
from judge.settings import Settings
from judge.worker.runner import Runner, RunnerConfig
from judge.worker.service import run_limits

PINS = json.loads((Path(__file__).parent / 'pins' / 'executor_requests.json').read_text())
"""What 383bec0's code sent the slot, by settings name: ``runs`` and ``compiles``."""

SETTINGS = {
    'default': {},
    'custom': {
        'MAX_EXECUTION_TIME': '4',
        'MAX_MEMORY': '512',
        'JUDGE_PIDS_LIMIT': '128',
        'JUDGE_OUTPUT_LIMIT_MB': '8',
        'JUDGE_FILE_SIZE_LIMIT_MB': '4',
        'MAX_STDOUT_ERROR_LENGTH': '50000',
        'JUDGE_COMPILE_TIME_LIMIT': '200',
        'JUDGE_COMPILE_MEMORY_MB': '3000',
    },
}
"""The environments the pins were recorded under."""
EXPECTED = {'none': None, 'short': 'x' * 100, 'large': 'y' * (9 * 2**20)}
SOURCES = {
    'python': 'print(1)',
    'bash': 'echo 1',
    'javascript': 'console.log(1)',
    'c': 'int main(){return 0;}',
    'cpp': '#include <bits/stdc++.h>\nint main(){}',
    'go': 'package main\nfunc main(){}',
    'java': 'public class Sol { public static void main(String[] a){} }',
    'rust': 'fn main(){}',
}
COMPILED = ('c', 'cpp', 'go', 'java', 'rust')


class FakeSlot:
    """Records requests; every execution "fails" with exit code 1 (a compile then is a diagnostic)."""

    def __init__(self) -> None:
        self.requests: list[ExecRequest] = []
        self.detail: dict[str, Any] = {}

    def run(self, request: ExecRequest) -> ExecResult:
        self.requests.append(request)
        return ExecResult(
            exit_code=1,
            signal=None,
            timed_out=False,
            output_exceeded=False,
            memory_exceeded=False,
            wall_s=0.0,
            cpu_s=0.0,
            max_rss_kb=0,
            stdout=b'',
            stderr=b'err',
            stdout_bytes=0,
            stderr_bytes=3,
        )


def settings_of(name: str) -> Settings:
    with mock.patch.dict('os.environ', SETTINGS[name]):
        return Settings()


def normalise(request: ExecRequest, cache_dir: str) -> dict[str, Any]:
    """A request as JSON, file contents hashed, the cache directory written ``<cache>``."""
    return {
        'limits': dict(request.limits._asdict()),
        'argv': list(request.argv),
        'python_source': request.python_source,
        'python_filename': request.python_filename,
        'files': {k: hashlib.sha256(v.encode()).hexdigest()[:16] for k, v in sorted(request.files.items())},
        'imports': dict(request.imports),
        'exports': {k: v.replace(cache_dir, '<cache>') for k, v in request.exports.items()},
        'stdin': request.stdin.decode(),
        'parent': request.parent,
    }


def toolchain(settings: Settings, cache_dir: str, mode: str) -> Toolchain:
    """The toolchain as `judge.worker.service` builds it (paths faked)."""
    return Toolchain(
        python='/rt/bin/python3',
        cxx='/usr/bin/g++',
        python_mode=mode,
        cache_dir=cache_dir,
        compile_time_s=settings.compile_time_limit,
        compile_memory_mb=settings.compile_memory_mb,
    )


def runner(settings: Settings, cache_dir: str, mode: str, slot: FakeSlot) -> Runner:
    """The runner as `judge.worker.service` builds it, over ``slot``."""
    config = RunnerConfig(limits=run_limits(settings), max_chars=settings.max_stdout_error_length)
    return Runner(toolchain(settings, cache_dir, mode), slot, config)  # type: ignore[arg-type]


@contextlib.contextmanager
def faked_tools(static: bool) -> Iterator[None]:
    """Tool paths ``<name>``, versions ``<language>-1.0``, a <bits/stdc++.h>, static linking ``static``."""
    with (
        mock.patch.object(base.Executor, 'version', lambda self: f'{self.language}-1.0'),
        mock.patch.object(base, 'find_tool', lambda name: name if name.startswith('/') else f'<{name}>'),
        mock.patch.object(cpp, '_bits_header', lambda cxx: '/usr/include/bits/stdc++.h'),
        mock.patch.object(cpp, 'can_link_static', lambda cxx: static),
        mock.patch.object(c, 'can_link_static', lambda cxx: static),
    ):
        yield


def capture_runs(settings: Settings) -> dict[str, Any]:
    """language/mode/seed/expected -> the run request the runner's executor sends."""
    runs: dict[str, Any] = {}
    for mode in ('warm', 'fresh'):
        for language in EXECUTORS:
            if mode == 'fresh' and language != 'python':
                continue
            for seed in (None, 7) if (language, mode) == ('python', 'warm') else (None,):
                for name, expected in EXPECTED.items():
                    with tempfile.TemporaryDirectory() as cache_dir:
                        slot = FakeSlot()
                        judge = runner(settings, cache_dir, mode, slot)
                        executor = judge.executor(language)
                        compiled = (
                            Compiled(ok=True, cached=True, artifact='/art/ifact') if language in COMPILED else None
                        )
                        executor.run(SOURCES[language], compiled, b'in', judge.limits(language, expected), seed)
                        (request,) = slot.requests
                        runs[f'{language}/{mode}/seed={seed}/expected={name}'] = normalise(request, cache_dir)
    return runs


def capture_compiles(settings: Settings, static: bool) -> dict[str, Any]:
    """language/static -> the compile's requests (the C++ PCH first), compile key, cache path, limits."""
    compiles: dict[str, Any] = {}
    for language in COMPILED:
        with tempfile.TemporaryDirectory() as cache_dir:
            slot = FakeSlot()
            executor = EXECUTORS[language](toolchain(settings, cache_dir, 'warm'), slot)  # type: ignore[arg-type]
            cpp._PCH_FAILED_AT.clear()
            compiled = executor.compile(SOURCES[language])
            assert compiled is not None
            key = executor.compile_key(SOURCES[language])
            compiles[f'{language}/static={static}'] = {
                'requests': [normalise(r, cache_dir) for r in slot.requests],
                'compile_key': list(key),
                'artifact_path': executor.cache_path(language, *key).replace(cache_dir, '<cache>'),
                'compiled': {'ok': compiled.ok, 'diagnostic': compiled.diagnostic, 'cacheable': compiled.cacheable},
                'compile_limits': dict(executor.compile_limits._asdict()),
            }
    return compiles


def capture() -> dict[str, Any]:
    """Everything `tests/unit/executors/pins/executor_requests.json` holds, captured with today's code."""
    out: dict[str, Any] = {}
    for name in SETTINGS:
        settings = settings_of(name)
        with faked_tools(static=True):
            runs = capture_runs(settings)
        compiles: dict[str, Any] = {}
        for static in (True, False):
            with faked_tools(static):
                compiles |= capture_compiles(settings, static)
        out[name] = {'runs': runs, 'compiles': compiles}
    return out
