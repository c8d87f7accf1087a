"""Internals: the judge's internals reachable from a program (its memory, gc, sys.modules, frames, /proc).

A warm Python program is forked from a zygote that is a fresh interpreter (`judge.sandbox.zygote.main`):
it never held the slot server's configuration and it forgets the judge's modules.  /proc shows a program
only its own processes.  What stays reachable (the frames of the zygote's loop and of the spare's setup
below the program, and through them the few modules that fork and prepare children and the slot's
`ChildPrep`: its uid, cgroup paths, environment, filter) is what the program can see of itself anyway;
docs/attacks.md lists it and why it stays (unwinding those frames would write to pages shared with the
zygote in every execution).

The main batch's /proc listing checks that no host process (the worker, the test process, pid 1) shows.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from tests.support.attacks.batch import MainBatch
from tests.support.attacks.kit import SlotHealth, bash, batch, c, py, report_of, survived
from tests.support.processes.host_view import descendants, is_zygote
from tests.support.processes.stack import Stack

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

PY_INTROSPECT = """
import gc, types
judge = lambda name: isinstance(name, str) and (name == 'judge' or name.startswith('judge.'))
modules = sorted(name for name in sys.modules if judge(name))
frames, f = [], sys._getframe().f_back
while f is not None:
    frames.append(f.f_code.co_name)
    f = f.f_back
needles = [v[::-1] for v in P['reversed_values']]  # never in the source text as they are
seen, todo, hits = {id(needles), *map(id, needles)}, list(gc.get_objects()) + list(sys.modules.values()), []
defaults = set()  # functions' keyword defaults: code (keep_writable=()), not the server's configuration
todo += [sys.getrecursionlimit, sys.setrecursionlimit, sys._getframe()]
while todo and len(seen) < 400000:
    obj = todo.pop()
    if id(obj) in seen:
        continue
    seen.add(id(obj))
    if isinstance(obj, types.ModuleType) and judge(getattr(obj, '__name__', None)):
        hits.append(obj.__name__)
    elif isinstance(obj, types.FunctionType) and judge(obj.__module__):
        hits.append(obj.__module__)
        defaults.add(id(obj.__kwdefaults__))
    elif isinstance(obj, dict) and id(obj) not in defaults and any(k in obj for k in P['config_keys']):
        hits.append('config dict')
    elif isinstance(obj, str) and any(v in obj for v in needles):
        hits.append('config value')
    todo.extend(gc.get_referents(obj))
shim_globals = sorted(sys.getrecursionlimit.__globals__)
procs = sorted(int(x) for x in os.listdir('/proc') if x.isdigit())
report(modules=modules, frames=frames, hits=sorted(set(hits)), walked=len(seen), shim_globals=shim_globals,
       procs=procs, me=os.getpid(), cmdline_1=attempt(read, '/proc/1/cmdline'),
       parent_cmdline=attempt(read, '/proc/%d/cmdline' % os.getppid()),
       parent_maps=attempt(read, '/proc/%d/maps' % os.getppid()), orig_argv=sys.orig_argv, argv=sys.argv)
"""

C_PROC = r"""
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static const char *probe(const char *path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return errno == ENOENT ? "ENOENT" : errno == EACCES ? "EACCES" : "ERR";
    close(fd);
    return "OK";
}
int main(void) {
    char parent[64];
    snprintf(parent, sizeof parent, "/proc/%d/environ", (int)getppid());
    int visible = 0, others = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
        visible++;
        if (atoi(e->d_name) != getpid()) others++;
    }
    printf("{\"init\":\"%s\",\"parent_environ\":\"%s\",\"visible\":%d,\"others\":%d}\n",
           probe("/proc/1/cmdline"), probe(parent), visible, others);
    return 0;
}
"""

BASH_PROC = """
init=$(cat /proc/1/cmdline 2>/dev/null && echo OK || echo DENIED)
parent=$(cat /proc/$PPID/cmdline 2>/dev/null && echo OK || echo DENIED)
root_procs=$(stat -c %u /proc/[0-9]* 2>/dev/null | grep -cx 0)
secrets=$(env | grep -c -E 'REDIS|JUDGE_|CELERY')
echo "{\\"init\\":\\"$init\\",\\"parent\\":\\"$parent\\",\\"secrets\\":$secrets,\\"root_procs\\":$root_procs}"
"""

SERVER_CONFIG_KEYS = ['uid_base', 'keep_writable', 'allow_unsafe', 'work_root']
WARM_PARENT_MODULES = {
    'judge.sandbox.zygote.main',
    'judge.sandbox.zygote.child',
    'judge.sandbox.zygote.warm',
    'judge.sandbox.limits',
    'judge.sandbox.protocol',
    'judge.sandbox.kernel.landlock',
    'judge.sandbox.kernel.namespaces',
    'judge.sandbox.kernel.seccomp',
    'judge.sandbox.kernel.seccomp_args',
    'judge.sandbox.kernel.bpf',
    'judge.sandbox.kernel.coredump',
    'judge.sandbox.lazylog',
    'judge.sandbox.fdio',
    'judge.sandbox.kernel.libc',
    'judge.sandbox.zygote.recursion',
    'judge.sandbox.zygote.upgrade',
    'judge.sandbox.zygote.split',
}
"""What forks and prepares a child (see docs/attacks.md); never the server, the jail or anything of the worker."""


def _readable_memory(pid: int) -> bytes:
    """Every readable byte of a process's memory (this test process is root on the host)."""
    chunks = []
    with open(f'/proc/{pid}/maps') as maps, open(f'/proc/{pid}/mem', 'rb', buffering=0) as mem:
        for line in maps:
            fields = line.split()
            if 'r' not in fields[1] or (len(fields) > 5 and fields[5] in ('[vvar]', '[vsyscall]', '[vvar_vclock]')):
                continue
            start, end = (int(x, 16) for x in fields[0].split('-'))
            try:
                mem.seek(start)
                chunks.append(mem.read(end - start))
            except OSError:  # e.g. a guard page
                continue
    return b''.join(chunks)


def test_python_sees_only_its_own_world_and_the_warm_parent(stack: Stack, gateway_url: str, health: SlotHealth) -> None:
    values = [stack.env['JUDGE_CACHE_DIR'][::-1], stack.redis_url[::-1]]  # the server's configuration, the worker's
    results = batch(gateway_url, [py(PY_INTROSPECT, config_keys=SERVER_CONFIG_KEYS, reversed_values=values)] * 2)
    for result in results:
        survived(result)
        got = report_of(result)
        assert got['modules'] == [], got['modules']  # sys.modules: the standard library and packages only
        # reachable through the frames below the program: the warm parent's own modules, nothing else
        assert set(got['hits']) <= WARM_PARENT_MODULES and got['walked'] > 1000, (got['hits'], got['walked'])
        assert got['frames'] == ['run_python', 'run_spare', 'serve', '<module>'], got['frames']
        shims = ['_Args', '__builtins__', '_below', '_extra', '_get', '_set', '_start', '_sys']
        shims += ['getrecursionlimit', 'setrecursionlimit', 'start_new', 'start_new_thread']
        assert got['shim_globals'] == shims, got['shim_globals']  # a namespace of their own
        assert got['procs'] == [got['me']], got['procs']  # /proc shows only the program's own processes
        assert got['cmdline_1'] == 'ENOENT' and got['parent_cmdline'] == 'ENOENT', got
        assert got['parent_maps'] == 'ENOENT', got
        assert got['orig_argv'][1:] == ['-I', 'source.py'] and got['argv'] == ['source.py'], got  # as fresh mode's


def test_c_and_bash_see_only_their_own_processes(gateway_url: str, health: SlotHealth) -> None:
    c_result, bash_result = batch(gateway_url, [c(C_PROC), bash(BASH_PROC)])
    survived(c_result)
    survived(bash_result)
    assert report_of(c_result) == {'init': 'ENOENT', 'parent_environ': 'ENOENT', 'visible': 1, 'others': 0}
    got = report_of(bash_result)
    assert got == {'init': 'DENIED', 'parent': 'DENIED', 'secrets': 0, 'root_procs': 0}, got


def _in_session(pid: int) -> bool:
    """Whether ``pid`` is a live session (or a fork of one): its work dir is a member's of a session family,
    ``<slot dir>/f<16 hex>/<24 hex>/.../w`` (`judge.sandbox.server.sessions.space`), and its memory holds
    the cells it ran, such as the attack suite's, which name the cache dir."""
    try:
        return re.search(r'/f[0-9a-f]{16}/[0-9a-f]{24}/', os.readlink(f'/proc/{pid}/cwd')) is not None
    except OSError:
        return False


def test_the_warm_parents_memory_holds_no_server_configuration(
    stack: Stack, gateway_url: str, health: SlotHealth
) -> None:
    """Read on the host: what a forked program starts from holds nothing of the server's configuration."""
    # configuration keys no module of the zygote uses as a name, configuration values, worker secrets
    needles = [b'uid_base', b'allow_unsafe', stack.env['JUDGE_CACHE_DIR'].encode(), stack.redis_url.encode()]
    needles += [b'REDIS_URI']
    below = descendants(stack.worker.proc.pid)
    zygotes = [pid for pid, proc in below.items() if is_zygote(proc) and 'judge.sandbox.zygote' in proc.cmdline]
    # a live session is a zygote's child too
    spares = [pid for pid, proc in below.items() if proc.ppid in zygotes and proc.uid != 0 and not _in_session(pid)]
    servers = [pid for pid, proc in below.items() if re.search(r'sandbox/server/main\.py', proc.cmdline)]
    assert len(zygotes) >= 2 and spares and servers, below
    found = {}
    for pid in zygotes + spares:
        memory = _readable_memory(pid)
        assert len(memory) > 1 << 20, pid
        found[pid] = [needle for needle in needles if needle in memory]
    assert all(hits == [] for hits in found.values()), {pid: hits for pid, hits in found.items() if hits}
    # the scan finds what is there: the servers do hold their configuration
    server_memory = b''.join(_readable_memory(pid) for pid in servers)
    assert b'uid_base' in server_memory and stack.env['JUDGE_CACHE_DIR'].encode() in server_memory
    assert not Path(f'/proc/{zygotes[0]}/environ').read_bytes().count(b'REDIS'), 'the zygote has worker secrets'


# --- from the main batch --------------------------------------------------------------------------


def test_proc_shows_no_host_process(stack: Stack, main_batch: MainBatch) -> None:
    result = main_batch.results['list_proc']
    survived(result)
    got = report_of(result)
    if 'error' in got:
        assert got['error'] == 'EACCES', got
        return
    # the slot's own /proc, mounted hidepid: only the program's own processes, not even its parent (the
    # slot's root zygote) or pid 1 (the slot server)
    assert got['pids'] == [got['me']], got
    assert os.getpid() not in got['pids'] and stack.worker.proc.pid not in got['pids'], got
    assert got['host_words'] == [] and got['init'] == '', got
