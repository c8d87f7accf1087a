"""Run one submission: pick the executor, compile, run, check, fold into an upstream-shaped result.

Pure Python over the sandbox; no Celery.  Infrastructure failures raise `SandboxError` (the worker
turns them into `internal_error`); everything the user's program did is a normal result, built by
`judge.results.build_result`.
"""

from __future__ import annotations

import base64
import logging
import sys
from dataclasses import dataclass
from typing import cast

from judge.checker import Checker, get_checker
from judge.contracts import CompileDict, FullResultDict, ManagerDict, ResultDict, RunPayload, UsageDict, Verdict
from judge.errors import UnsupportedLanguage
from judge.executors import EXECUTORS, Compiled, Executor, RunExtras, Toolchain
from judge.results import build_result
from judge.sandbox.client import ExecResult, SandboxError, SlotClient
from judge.sandbox.limits import Limits
from judge.verdict import pick
from judge.worker.communication import LAUNCHER_FAILED, LAUNCHER_NAME, check_manager, launch_request, launcher_failed

logger = logging.getLogger('judge.worker.runner')

ANSWER_MARGIN_S = 3.0
"""What answering takes beside the compile and the run (slot, worker, broker, gateway), at most."""
TIMEOUT_MARKER = 'Suicide from timeout.'
"""Upstream appends this to stdout on a timeout; its tests check it, so we keep it."""
_COMPARE_SLACK_BYTES = 64 * 1024


@dataclass
class RunnerConfig:
    """Per-node policy of the runner, built from the settings (`judge.worker.service`)."""

    limits: Limits
    """The node's run limits (`judge.worker.service.run_limits`); each language adjusts them once."""
    max_chars: int
    """Characters of stdout and of stderr kept in a result."""


class Runner:
    """Judges submissions in one slot."""

    def __init__(self, toolchain: Toolchain, slot: SlotClient, config: RunnerConfig) -> None:
        self.toolchain = toolchain
        self.slot = slot
        self.config = config
        self._languages: dict[str, tuple[Executor, Limits]] = {}
        """language -> its executor and its run limits (`Executor.run_limits`, applied once)."""

    def _language(self, language: str) -> tuple[Executor, Limits]:
        found = self._languages.get(language)
        if found is None:
            try:
                cls = EXECUTORS[language]
            except KeyError:
                raise UnsupportedLanguage(f'unsupported language {language!r}') from None
            executor = cls(self.toolchain, self.slot)
            found = self._languages[language] = (executor, executor.run_limits(self.config.limits))
        return found

    def executor(self, language: str) -> Executor:
        """The executor of ``language``; `UnsupportedLanguage` when there is none."""
        return self._language(language)[0]

    def limits(self, language: str, expected: str | None) -> Limits:
        """Run limits for one submission: its language's, keeping enough of stdout to compare with ``expected``."""
        limits = self._language(language)[1]
        if expected is None:
            return limits
        return limits.capturing(len(expected.encode('utf-8', 'surrogateescape')) + _COMPARE_SLACK_BYTES)

    def run(self, sub: RunPayload, checker: Checker | None = None, wait_s: float | None = None) -> ResultDict:
        """Judge one submission.

        The output is compared by ``checker`` if given, else by the submission's ``checker`` key
        (`judge.checker.get_checker` names), else by upstream's ``strip`` rule.  ``wait_s``: how long the
        gateway waits for the answer; a compile must leave the run its time limit and `ANSWER_MARGIN_S`
        within it, so that a slow compile is a compile error, never a `queue_timeout` the source chose.
        """
        language = sub['type']
        source = sub['solution']
        expected = sub.get('expected_output')
        if checker is None:
            checker = get_checker(sub.get('checker') or 'strip')
        executor = self.executor(language)
        full = bool(sub.get('full'))
        limits = self.limits(language, expected).within(sub.get('time_limit_s'), sub.get('memory_mb'))
        within_s = None if wait_s is None else wait_s - limits.time_s - ANSWER_MARGIN_S
        compiled = executor.compile(source, _texts(sub.get('compile_files')), within_s)
        if compiled is not None and not compiled.ok:
            return self._compile_error(sub, compiled, executor, full)
        stdin = (sub.get('input') or '').encode('utf-8', 'surrogateescape')
        if full:
            limits = limits.whole()
        manager = sub.get('manager')
        if manager is not None:
            return self._with_manager(sub, manager, compiled, limits, stdin, within_s, checker, executor)
        result = executor.run(source, compiled, stdin, limits, sub.get('seed'), run_extras(sub))
        return self._fold(sub, result, expected, checker, compiled, executor, full)

    def _with_manager(
        self,
        sub: RunPayload,
        manager: ManagerDict,
        compiled: Compiled | None,
        limits: Limits,
        stdin: bytes,
        within_s: float | None,
        checker: Checker,
        executor: Executor,
    ) -> ResultDict:
        """Run the compiled submission beside its manager (`judge.worker.communication`)."""
        check_manager(manager)
        if compiled is None or compiled.artifact is None:
            raise ValueError(f'a manager needs a compiled submission, not {sub["type"]!r}')
        full = bool(sub.get('full'))
        cpp = self.executor('cpp')
        built = cpp.compile(manager['source'], _texts(manager.get('files')), within_s)
        if built is None:
            raise ValueError('the C++ executor compiled nothing')
        if not built.ok or built.artifact is None:
            return self._compile_error(sub, built, cpp, full)
        bash = self.executor('bash')
        bash_argv = bash.argv(bash.run_argv, {}, {'src': LAUNCHER_NAME})
        result = bash.execute(launch_request(manager, bash_argv, (compiled.artifact, built.artifact), limits, stdin))
        if launcher_failed(result):
            raise SandboxError(LAUNCHER_FAILED)
        return self._fold(sub, result, sub.get('expected_output'), checker, compiled, executor, full)

    def _max_chars(self, full: bool) -> int:
        return sys.maxsize if full else self.config.max_chars

    def _compile_info(self, compiled: Compiled, full: bool = False) -> CompileDict:
        stderr, cut = _head(compiled.stderr.decode('utf-8', 'replace'), self._max_chars(full))
        return {
            'ok': compiled.ok,
            'cached': compiled.cached,
            'cost': round(compiled.wall_s, 6),
            'stderr': stderr,
            'stderr_truncated': cut,
        }

    def _compile_error(self, sub: RunPayload, compiled: Compiled, executor: Executor, full: bool) -> ResultDict:
        info = self._compile_info(compiled, full)
        return build_result(
            sub['sub_id'],
            Verdict.COMPILE_ERROR,
            stdout='',
            stderr=info['stderr'],
            stderr_truncated=info['stderr_truncated'],
            toolchain=executor.version(),
            runtime=self.toolchain.runtime or None,
            compile=info,
        )

    def _fold(
        self,
        sub: RunPayload,
        result: ExecResult,
        expected: str | None,
        checker: Checker,
        compiled: Compiled | None,
        executor: Executor,
        full: bool = False,
    ) -> ResultDict:
        stdout_full = result.stdout.decode('utf-8', 'replace')
        stderr_full = result.stderr.decode('utf-8', 'replace')
        flags: set[Verdict] = set()
        if result.timed_out:
            flags.add(Verdict.TIME_LIMIT)
        if result.memory_exceeded or (result.exit_code != 0 and executor.is_oom(stderr_full)):
            flags.add(Verdict.MEMORY_LIMIT)
        if result.output_exceeded:
            flags.add(Verdict.OUTPUT_LIMIT)
        if result.exit_code != 0:
            flags.add(Verdict.RUNTIME_ERROR)
        if not flags and expected is not None:
            complete = result.stdout_bytes <= len(result.stdout)
            if not complete or not checker(stdout_full, expected):
                flags.add(Verdict.WRONG_ANSWER)
        if result.timed_out and not full:
            stdout_full = f'{stdout_full}{"" if not stdout_full or stdout_full.endswith(chr(10)) else chr(10)}'
            stdout_full += TIMEOUT_MARKER + '\n'
        stdout, out_cut = _head(stdout_full, self._max_chars(full))
        stderr, err_cut = _head(stderr_full, self._max_chars(full))
        answer = build_result(
            sub['sub_id'],
            pick(flags),
            cost_s=result.wall_s,
            stdout=stdout,
            stderr=stderr,
            exit_code=result.exit_code,
            stdout_truncated=out_cut or result.stdout_bytes > len(result.stdout),
            stderr_truncated=err_cut or result.stderr_bytes > len(result.stderr),
            toolchain=executor.version(),
            runtime=self.toolchain.runtime or None,
            compile=None if compiled is None else self._compile_info(compiled, full),
        )
        if not full and not sub.get('fetch'):
            return answer
        door = cast(FullResultDict, answer)
        if full:
            cpu_s = round(result.cpu_s, 6)
            door['usage'] = UsageDict(cpu_s=cpu_s, max_rss_kb=result.max_rss_kb, signal=result.signal)
        if sub.get('fetch'):
            door['files'] = {path: base64.b64encode(data).decode('ascii') for path, data in result.fetched.items()}
        return door


def _texts(files: dict[str, str] | None) -> dict[str, str] | None:
    """Base64 files as the sandbox takes them (bytes as ``surrogateescape`` text)."""
    if not files:
        return None
    return {path: base64.b64decode(data).decode('utf-8', 'surrogateescape') for path, data in files.items()}


def run_extras(sub: RunPayload) -> RunExtras:
    """The files, files to read back and arguments a submission adds to its run (base64 files decoded)."""
    return RunExtras(
        files=_texts(sub.get('files')) or {},
        fetch=tuple(sub.get('fetch') or ()),
        args=tuple(sub.get('args') or ()),
    )


def _head(text: str, max_chars: int) -> tuple[str, bool]:
    if len(text) <= max_chars:
        return text, False
    return text[:max_chars], True
