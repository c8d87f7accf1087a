"""Crash helpers on the host: a crashing submission must never start the host's core-dump handler.

Every program runs under ``RLIMIT_CORE`` 1, soft and hard, and the seccomp filter refuses any change to it
(`judge.sandbox.kernel.coredump`): for a file ``core_pattern`` that is below any core's size, and for a pipe
pattern (apport, systemd-coredump) 1 is the one value the kernel honours, aborting the dump before it starts the
helper.  The host's ``core_pattern`` is global and is never changed here; the attacks assert the mechanism from
inside, as an attacker would try it: the limit after every attempt to lower or raise it (``setrlimit``,
``prlimit``, raw system calls, ``ulimit``, util-linux ``prlimit``), after making itself dumpable again
(``PR_SET_DUMPABLE``) and after ``execve``; and every crash (SIGSEGV, SIGABRT, SIGQUIT, SIGBUS, SIGFPE, SIGILL,
before and after ``execve``, and the program's own) without the core flag in its wait status and without a core
file.
"""

from __future__ import annotations

from typing import Any

import pytest

from judge.sandbox.kernel.coredump import CORE_LIMIT
from tests.support.attacks.kit import SlotHealth, bash, batch, c, py, report_of, survived

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

PY_CRASHER = """
import ctypes, resource, signal
libc = ctypes.CDLL(None, use_errno=True)
def core_limit():
    with open('/proc/self/limits') as f:
        return [line.split()[4:6] for line in f if line.startswith('Max core file size')][0]
got = {'dumpable': libc.prctl(4, 1, 0, 0, 0), 'is_dumpable': libc.prctl(3, 0, 0, 0, 0)}  # PR_[SG]ET_DUMPABLE
for name, new in (('soft_zero', (0, 1)), ('zero', (0, 0)), ('unlimited', (-1, -1)), ('big', (1 << 30, 1 << 30))):
    got['setrlimit_' + name] = attempt(resource.setrlimit, resource.RLIMIT_CORE, new)
got['prlimit_self'] = attempt(resource.prlimit, os.getpid(), resource.RLIMIT_CORE, (0, 1))
got['prlimit_read'] = attempt(resource.prlimit, 0, resource.RLIMIT_CORE)
got['limit'] = core_limit()
crashes = {}
for how in ('segv', 'abort', 'quit', 'bus', 'execve'):
    pid = os.fork()
    if pid == 0:
        libc.prctl(4, 1, 0, 0, 0)
        if how == 'segv':
            ctypes.string_at(0)
        elif how == 'abort':
            os.abort()
        elif how == 'execve':
            os.execv('/bin/bash', ['bash', '-c', 'ulimit -c unlimited 2>/dev/null; kill -SEGV $$'])
        os.kill(os.getpid(), signal.SIGQUIT if how == 'quit' else signal.SIGBUS)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    crashes[how] = [os.WTERMSIG(status) if os.WIFSIGNALED(status) else None, os.WCOREDUMP(status)]
got['left'] = sorted(name for name in os.listdir('.') if 'core' in name)
report(crashes=crashes, **got)
os.abort()  # and the program's own crash
"""

C_CRASHER = r"""
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
static const char *err(long r) { return r >= 0 ? "OK" : strerrorname_np(errno); }
static volatile int zero = 0;
static void crash(int how, char **argv) {
    prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    switch (how) {
    case 0: *(volatile int *)0 = 1; break;
    case 1: abort();
    case 2: printf("%d\n", 7 / zero); break;
    case 3: __builtin_trap();
    case 4: raise(SIGBUS); break;
    case 5: execl(argv[0], argv[0], "crash-after-exec", (char *)0); break;
    }
    _exit(0);
}
int main(int argc, char **argv) {
    if (argc > 1) { struct rlimit inf = {RLIM_INFINITY, RLIM_INFINITY}; setrlimit(RLIMIT_CORE, &inf); crash(0, argv); }
    struct rlimit none = {0, 0}, soft0 = {0, 1}, inf = {RLIM_INFINITY, RLIM_INFINITY}, now;
    printf("{\"setrlimit_zero\":\"%s\",", err(setrlimit(RLIMIT_CORE, &none)));
    printf("\"setrlimit_soft_zero\":\"%s\",", err(setrlimit(RLIMIT_CORE, &soft0)));
    printf("\"setrlimit_unlimited\":\"%s\",", err(setrlimit(RLIMIT_CORE, &inf)));
    printf("\"prlimit_self\":\"%s\",", err(prlimit(getpid(), RLIMIT_CORE, &soft0, NULL)));
    printf("\"raw_setrlimit\":\"%s\",", err(syscall(SYS_setrlimit, RLIMIT_CORE, &none)));
    printf("\"raw_prlimit64\":\"%s\",", err(syscall(SYS_prlimit64, 0, RLIMIT_CORE, &soft0, NULL)));
    printf("\"dumpable\":%d,", prctl(PR_SET_DUMPABLE, 1, 0, 0, 0));
    getrlimit(RLIMIT_CORE, &now);
    printf("\"limit\":[%lu,%lu],\"crashes\":{", (unsigned long)now.rlim_cur, (unsigned long)now.rlim_max);
    const char *names[] = {"segv", "abort", "fpe", "trap", "bus", "execve"};
    for (int how = 0; how < 6; how++) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) crash(how, argv);
        int status = 0; waitpid(pid, &status, 0);
        printf("%s\"%s\":[%d,%s]", how ? "," : "", names[how], WIFSIGNALED(status) ? WTERMSIG(status) : 0,
               WCOREDUMP(status) ? "true" : "false");
    }
    printf("}}\n");
    fflush(stdout);
    *(volatile int *)0 = 1;  /* and the program's own crash */
    return 0;
}
"""

BASH_CRASHER = r"""
limit=$(grep 'Max core file size' /proc/self/limits | awk '{print $5 "," $6}')
ulimit -c unlimited 2>/dev/null; raise=$?
ulimit -S -c 0 2>/dev/null; lower=$?
prlimit --pid $$ --core=0:1 2>/dev/null; tool=$?
said=$(bash -c 'bash -c "kill -SEGV \$\$"; sh -c "kill -ABRT \$\$"; exit 0' 2>&1 | tr '\n"\\' '   ')
after=$(bash -c "grep 'Max core file size' /proc/self/limits | awk '{print \$5 \",\" \$6}'")
left=$(ls | grep -c core)
printf '{"limit":[%s],"after_exec":[%s],"raise":%s,"lower":%s,"prlimit":%s,"said":"%s","left":%s}\n' \
  "$limit" "$after" "$raise" "$lower" "$tool" "$said" "$left"
kill -SEGV $$
"""

REFUSED = {'EPERM', 'ValueError'}
"""``resource.setrlimit`` turns EPERM into ValueError ("not allowed to raise maximum limit")."""


def _crashed(result: dict[str, Any]) -> dict[str, Any]:
    """The report of a program that crashed on purpose at its end: an ordinary runtime error."""
    survived(result)
    assert result['verdict'] == 'runtime_error' and result['success'] is False, result
    return report_of(result)


def test_python_cannot_lift_the_core_limit_or_dump(gateway_url: str, health: SlotHealth) -> None:
    got = _crashed(batch(gateway_url, [py(PY_CRASHER)])[0])
    assert got['limit'] == [str(CORE_LIMIT), str(CORE_LIMIT)], got
    assert got['dumpable'] == 0 and got['is_dumpable'] == 1, got  # making itself dumpable works, and changes nothing
    for key in ('setrlimit_soft_zero', 'setrlimit_zero', 'setrlimit_unlimited', 'setrlimit_big', 'prlimit_self'):
        assert got[key] in REFUSED, (key, got)
    assert got['prlimit_read'] == f'OK:({CORE_LIMIT}, {CORE_LIMIT})', got
    signals = {'segv': 11, 'abort': 6, 'quit': 3, 'bus': 7, 'execve': 11}
    assert got['crashes'] == {how: [sig, False] for how, sig in signals.items()}, got  # no core flag
    assert got['left'] == [], got


def test_c_cannot_lift_the_core_limit_or_dump(gateway_url: str, health: SlotHealth) -> None:
    got = _crashed(batch(gateway_url, [c(C_CRASHER)])[0])
    assert got['limit'] == [CORE_LIMIT, CORE_LIMIT], got
    for key in ('setrlimit_zero', 'setrlimit_soft_zero', 'setrlimit_unlimited', 'prlimit_self', 'raw_setrlimit'):
        assert got[key] == 'EPERM', (key, got)
    assert got['raw_prlimit64'] == 'EPERM' and got['dumpable'] == 0, got
    signals = {'segv': 11, 'abort': 6, 'fpe': 8, 'trap': 4, 'bus': 7, 'execve': 11}
    assert got['crashes'] == {how: [sig, False] for how, sig in signals.items()}, got


def test_bash_cannot_lift_the_core_limit_or_dump(gateway_url: str, health: SlotHealth) -> None:
    got = _crashed(batch(gateway_url, [bash(BASH_CRASHER)])[0])
    assert got['limit'] == got['after_exec'] == [CORE_LIMIT, CORE_LIMIT], got
    assert got['raise'] != 0 and got['lower'] != 0 and got['prlimit'] != 0, got
    assert 'Segmentation fault' in got['said'] and 'Aborted' in got['said'], got  # the shell saw both crashes...
    assert 'core dumped' not in got['said'], got  # ...and neither dumped
    assert got['left'] == 0, got
