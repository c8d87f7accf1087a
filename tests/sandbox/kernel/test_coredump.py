"""Crashes under the core limit of 1 and the seccomp filter (`judge.sandbox.kernel.coredump`), in forked children
(`tests.support.forked`: the test process is never limited).

The host's ``core_pattern`` is never changed (it is global).  What is asserted is the mechanism: a crash under the
limit leaves no core and its wait status no core flag, whatever the crashing program did to its dumpable flag, its
rlimits or its image (``execve``); and, where the host writes cores to a file in the crashing process's directory,
the same crash without the limit does leave one (the control: the check can see a dump)."""

from __future__ import annotations

import os
import resource
import signal
from pathlib import Path

import pytest

from judge.sandbox.kernel import coredump, seccomp
from tests.support.forked import Send, libc, run_in_child

PR_SET_DUMPABLE = 4


def _crash(limited: bool, how: str, workdir: Path) -> dict[str, object]:
    """Fork a child in ``workdir`` that crashes ``how``; its wait status and what it left there."""
    program = seccomp.build_filter()

    def body(send: Send) -> None:
        os.chdir(workdir)
        with open('/proc/self/coredump_filter', 'w') as f:
            f.write('0')  # a dump, if any, holds no memory: headers and notes only (inherited)
        if limited:
            coredump.forbid_core_dumps()
            seccomp.install(program)
        else:
            resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
        pid = os.fork()
        if pid == 0:
            libc.prctl(PR_SET_DUMPABLE, 1, 0, 0, 0)
            if limited:  # what a program would try: a soft limit of 0 lets a pipe dump through
                try:
                    resource.setrlimit(resource.RLIMIT_CORE, (0, 1))
                except ValueError:
                    pass
            if how == 'abort':
                os.abort()
            os.execv('/bin/bash', ['bash', '-c', 'ulimit -c unlimited 2>/dev/null; kill -SEGV $$'])
        _, status = os.waitpid(pid, 0)
        send(
            {
                'signal': os.WTERMSIG(status) if os.WIFSIGNALED(status) else None,
                'core_flag': os.WCOREDUMP(status),
                'left': sorted(os.listdir('.')),
            }
        )

    msg, code = run_in_child(body)
    assert code == 0 and msg is not None
    return msg


@pytest.mark.skipif(seccomp.native_arch() not in seccomp.ARCHES, reason='no syscall table')
@pytest.mark.parametrize('how', ['abort', 'execve-then-segv'])
def test_a_crash_under_the_core_limit_leaves_no_core(tmp_path: Path, how: str) -> None:
    got = _crash(limited=True, how=how, workdir=tmp_path)
    assert got['signal'] in (signal.SIGABRT, signal.SIGSEGV), got
    assert got == {'signal': got['signal'], 'core_flag': False, 'left': []}


def test_the_check_sees_a_core_where_the_host_writes_them_here(tmp_path: Path) -> None:
    pattern = Path(coredump.CORE_PATTERN).read_text().strip()
    if coredump.pattern_kind(pattern) != 'file' or '/' in pattern:
        pytest.skip(f"core_pattern {pattern!r} does not write into the crashing process's directory")
    got = _crash(limited=False, how='abort', workdir=tmp_path)
    assert got['core_flag'] is True and got['left'], got  # without the limit the same crash dumps
