"""The slot server and its executions, without Celery: limits, kill policy, warm vs fresh Python."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from collections.abc import Iterator

import pytest

from judge.runtime import submission_python
from judge.sandbox.client import ExecRequest, SandboxError, SlotClient, SlotConfig
from judge.sandbox.slots import claim_slot
from judge.settings import Settings
from tests.slots import RUN_LIMITS, open_slot

PYTHON = submission_python(Settings())


@pytest.fixture(scope='module')
def slot() -> Iterator[SlotClient]:
    with open_slot('sandbox', allow_unsafe=os.getuid() != 0) as client:
        yield client


def run_py(
    slot: SlotClient, source: str, mode: str, stdin: bytes = b'', **limits: float
) -> tuple[int | None, str, str]:
    lim = RUN_LIMITS._replace(**{'time_s': 3.0, **limits})  # type: ignore[arg-type]
    if mode == 'warm':
        req = ExecRequest(limits=lim, python_source=source, stdin=stdin)
    else:
        req = ExecRequest(limits=lim, argv=[PYTHON, '-I', 'source.py'], files={'source.py': source}, stdin=stdin)
    r = slot.run(req)
    norm = re.compile(r'/[^"\s]*/w\d+/')
    return (
        r.exit_code,
        norm.sub('<wd>/', r.stdout.decode(errors='replace')),
        norm.sub('<wd>/', r.stderr.decode(errors='replace')),
    )


CORPUS: dict[str, tuple[str, bytes]] = {
    'hello': ('print("hello")', b''),
    'stream_attributes': (
        'import sys\nfor s in (sys.stdin, sys.stdout, sys.stderr):\n'
        '    print(s.name, s.encoding, s.seekable(), s.line_buffering, s.isatty())\n'
        'print(sys.stdin.read(3), sys.stdin.tell())',
        b'abcdef',
    ),
    'main_guard': ('if __name__ == "__main__":\n    print("main")\nelse:\n    print(__name__)', b''),
    'argv_and_file': ('import sys, os\nprint(sys.argv, os.path.basename(__file__))', b''),
    'stdin_lines': ('import sys\nprint(sum(int(x) for x in sys.stdin.read().split()))', b'1 2 3\n4\n'),
    'input_eof': ('print(input())\nprint(input())', b'only one line\n'),
    'exception_traceback': ('def f():\n    return 1/0\n\nprint("before")\nf()', b''),
    'syntax_error': ('x = (1,\nprint(x)', b''),
    'sys_exit_int': ('import sys\nprint("a")\nsys.exit(3)', b''),
    'sys_exit_str': ('import sys\nsys.exit("bye")', b''),
    'sys_exit_none': ('raise SystemExit', b''),
    'recursion_limit': ('import sys\nprint(sys.getrecursionlimit())\ndef r(n): return r(n+1)\nr(0)', b''),
    'atexit_runs': ('import atexit\natexit.register(lambda: print("at exit"))\nprint("body")', b''),
    # nothing is imported on the way out (an import in each warm child cost 0.3 ms of CPU)
    'no_import_at_exit': (
        'import os, sys\n'
        'sys.addaudithook(lambda event, args: event == "import" and os.write(2, f"imported {args[0]}\\n".encode()))\n'
        'print("body")',
        b'',
    ),
    'thread_joined': (
        'import threading, time\nt = threading.Thread(target=lambda: (time.sleep(0.1), print("t")))\n'
        't.start()\nprint("main")',
        b'',
    ),
    'stderr_and_stdout': ('import sys\nprint("out")\nprint("err", file=sys.stderr)\nprint("out2")', b''),
    'unicode': ('print("héllo ☃")\nprint(input())', 'ünï\n'.encode()),
    'env_is_clean': ('import os\nprint(sorted(k for k in os.environ if "REDIS" in k or "MAX_" in k))', b''),
    'exit_in_finally': ('try:\n    raise ValueError("x")\nfinally:\n    print("cleanup")', b''),
    'keyerror_message': ('d = {}\nd["missing"]', b''),
    'first_free_fd': ('f = open("out.txt", "w")\nprint(f.fileno())', b''),
    'work_dir_listing': ('import os\nprint(sorted(os.listdir(".")))', b''),
    'os_exit_skips_flush': ('import os, sys\nprint("kept", flush=True)\nprint("lost")\nos._exit(5)', b''),
    'killed_by_a_signal': ('import os, signal\nprint("x", flush=True)\nos.kill(os.getpid(), signal.SIGKILL)', b''),
    'exit_code_255': ('import sys\nsys.exit(255)', b''),
}


@pytest.mark.parametrize('name', sorted(CORPUS))
def test_warm_and_fresh_python_agree(slot: SlotClient, name: str) -> None:
    source, stdin = CORPUS[name]
    warm = run_py(slot, source, 'warm', stdin)
    fresh = run_py(slot, source, 'fresh', stdin)
    assert warm == fresh


def test_corpus_expectations(slot: SlotClient) -> None:
    assert run_py(slot, CORPUS['exception_traceback'][0], 'warm', CORPUS['exception_traceback'][1])[0] == 1
    code, out, err = run_py(slot, CORPUS['exception_traceback'][0], 'warm', CORPUS['exception_traceback'][1])
    assert out == 'before\n'
    assert 'line 2, in f' in err and '<wd>/source.py' in err and 'ZeroDivisionError' in err
    assert run_py(slot, CORPUS['sys_exit_int'][0], 'warm', CORPUS['sys_exit_int'][1])[:2] == (3, 'a\n')
    assert run_py(slot, CORPUS['input_eof'][0], 'warm', CORPUS['input_eof'][1])[0] == 1
    assert run_py(slot, CORPUS['env_is_clean'][0], 'warm', CORPUS['env_is_clean'][1])[1] == '[]\n'
    assert run_py(slot, CORPUS['thread_joined'][0], 'warm', CORPUS['thread_joined'][1])[1] == 'main\nt\n'
    # no descriptor beyond 0-2 and nothing but the program in its work dir, as under `python3 file.py`
    assert run_py(slot, CORPUS['first_free_fd'][0], 'warm')[1] == '3\n'
    assert run_py(slot, CORPUS['work_dir_listing'][0], 'warm')[1] == "['source.py']\n"
    assert run_py(slot, CORPUS['os_exit_skips_flush'][0], 'warm')[:2] == (5, 'kept\n')
    assert run_py(slot, CORPUS['killed_by_a_signal'][0], 'warm')[:2] == (-signal.SIGKILL, 'x\n')
    assert run_py(slot, CORPUS['exit_code_255'][0], 'warm')[0] == 255


@pytest.mark.parametrize('mode', ['warm', 'fresh'])
def test_wall_limit_kills_everything(slot: SlotClient, mode: str) -> None:
    tag = f'{2000 + os.getpid() % 1000}.25'
    src = (
        f'import subprocess, time\nsubprocess.Popen(["sleep", "{tag}"], start_new_session=True)\n'
        f'subprocess.Popen(["sleep", "{tag}"])\ntime.sleep(60)'
    )
    start = time.monotonic()
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS._replace(time_s=1.0), python_source=src)
        if mode == 'warm'
        else ExecRequest(
            limits=RUN_LIMITS._replace(time_s=1.0), argv=[PYTHON, '-I', 'source.py'], files={'source.py': src}
        )
    )
    assert r.timed_out and r.exit_code == -9
    assert time.monotonic() - start < 3
    if os.getuid() == 0:  # the uid sweep also gets setsid daemons; without root only the group dies
        assert subprocess.run(['pgrep', '-f', f'sleep {tag}'], capture_output=True).stdout == b''


def test_output_is_bounded_while_reading(slot: SlotClient) -> None:
    src = 'import sys\nwhile True: sys.stdout.write("x" * 65536)'
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS._replace(time_s=5, output_bytes=2_000_000, capture_bytes=1000), python_source=src)
    )
    assert r.output_exceeded and not r.timed_out
    assert len(r.stdout) == 1000
    assert 2_000_000 < r.stdout_bytes < 3_000_000


def test_non_utf8_output_survives(slot: SlotClient) -> None:
    r = slot.run(ExecRequest(limits=RUN_LIMITS, python_source='import sys\nsys.stdout.buffer.write(b"\\xff\\x00ok")'))
    assert r.stdout == b'\xff\x00ok' and r.exit_code == 0


def test_stdin_larger_than_a_pipe_buffer(slot: SlotClient) -> None:
    data = b'7\n' * 500_000
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS, python_source='import sys\nprint(len(sys.stdin.buffer.read()))', stdin=data)
    )
    assert r.stdout == b'1000000\n'


def test_runs_as_unprivileged_slot_uid(slot: SlotClient) -> None:
    r = slot.run(
        ExecRequest(limits=RUN_LIMITS, python_source='import os\nprint(os.getuid(), os.getgid(), os.getgroups())')
    )
    if os.getuid() == 0:
        uid = slot.detail['uid']
        assert r.stdout.decode().split(maxsplit=2) == [str(uid), str(uid), '[]\n']


def test_rlimits_cannot_be_raised(slot: SlotClient) -> None:
    src = (
        'import resource\nsoft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)\n'
        'try:\n    resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 2, hard * 2))\n    print("raised")\n'
        'except ValueError:\n    print("refused")'
    )
    r = slot.run(ExecRequest(limits=RUN_LIMITS, python_source=src))
    assert r.stdout == b'refused\n'


def test_bad_file_names_are_refused(slot: SlotClient) -> None:
    with pytest.raises(SandboxError, match='bad file name'):
        slot.run(ExecRequest(limits=RUN_LIMITS, argv=['/bin/true'], files={'../escape': 'x'}))
    # the slot keeps working afterwards
    assert slot.run(ExecRequest(limits=RUN_LIMITS, python_source='print(1)')).stdout == b'1\n'


def test_no_isolation_is_refused_without_the_unsafe_setting() -> None:
    client = SlotClient(
        SlotConfig(
            slot=4000,
            python=PYTHON,
            memory_mb=RUN_LIMITS.memory_mb,
            pids=RUN_LIMITS.pids,
            tier='none',
            work_root='/tmp/judge-test-unsafe',
        )
    )
    with pytest.raises(SandboxError, match='refusing to run untrusted code'):
        client.ensure_started()


def test_unknown_tier_is_an_error() -> None:
    client = SlotClient(
        SlotConfig(
            slot=4001,
            python=PYTHON,
            memory_mb=RUN_LIMITS.memory_mb,
            pids=RUN_LIMITS.pids,
            tier='chroot',
            work_root='/tmp/judge-test-unsafe',
        )
    )
    with pytest.raises(SandboxError, match='unknown sandbox tier'):
        client.ensure_started()


@pytest.mark.skipif(os.getuid() != 0, reason='the isolated tiers need root')
@pytest.mark.parametrize('tier', ['namespaces', 'landlock', 'uid'])
def test_each_tier_isolates(tier: str) -> None:
    index, lock_fd = claim_slot()
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=PYTHON,
            tier=tier,
            work_root=f'/tmp/judge-test-tier-{os.getpid()}',
            memory_mb=256,
            pids=64,
        )
    )
    try:
        client.ensure_started()
        assert client.tier == tier
        src = (
            'import os, socket\nprint(os.getuid())\n'
            'try:\n    socket.socket(socket.AF_INET).connect(("127.0.0.1", 9))\n'
            'except OSError as e:\n    print(e.errno)\n'
            'try:\n    open("/etc/hostname").read()\n    print("read")\nexcept OSError as e:\n    print(e.errno)\n'
        )
        r = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=3), python_source=src))
        uid, net, hostname = r.stdout.decode().split()
        assert int(uid) == 61000 + index and net == '1'  # EPERM from seccomp in every tier
        assert hostname == ('read' if tier == 'uid' else '13')  # Landlock: only the system's libraries are readable
        if tier != 'uid':
            bomb = client.run(
                ExecRequest(limits=RUN_LIMITS._replace(time_s=5), python_source='x = bytearray(600 * 2**20)')
            )
            assert bomb.memory_exceeded and bomb.exit_code == -9  # the slot's memory cgroup
    finally:
        client.close()
        os.close(lock_fd)


def test_cpu_limit_counts_as_a_timeout() -> None:
    from judge.sandbox.server.execute import ExecOutcome, _decode_status

    killed_by_cpu_limit = ExecOutcome()
    _decode_status(signal.SIGXCPU, killed_by_cpu_limit)  # a wait status for "killed by SIGXCPU"
    assert killed_by_cpu_limit.timed_out and killed_by_cpu_limit.exit_code == -signal.SIGXCPU
    crashed = ExecOutcome()
    _decode_status(signal.SIGSEGV, crashed)
    assert not crashed.timed_out and crashed.exit_code == -signal.SIGSEGV


def _spare_parent(root_pid: int) -> int:
    """The pid of the process that forked the waiting spare: the slot's zygote."""
    deadline = time.monotonic() + 5
    while True:
        found = _find_spare_parent(root_pid)
        if found is not None:
            return found
        assert time.monotonic() < deadline, f'no spare below {root_pid}'
        time.sleep(0.05)


def _find_spare_parent(root_pid: int) -> int | None:
    todo, found = [root_pid], []
    while todo:
        pid = todo.pop()
        try:
            with open(f'/proc/{pid}/task/{pid}/children') as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        todo.extend(kids)
        found.extend(kids)
    for pid in found:
        try:
            with open(f'/proc/{pid}/status') as f:
                fields = dict(line.split(':', 1) for line in f.read().splitlines() if ':' in line)
        except OSError:
            continue
        if int(fields['Uid'].split()[0]) != 0:  # the spare has dropped to the slot's uid
            return int(fields['PPid'])
    return None


@pytest.mark.skipif(os.getuid() != 0, reason='the isolated tiers need root')
def test_a_dead_zygote_costs_no_submission() -> None:
    index, lock_fd = claim_slot()
    client = SlotClient(
        SlotConfig(
            slot=index,
            python=PYTHON,
            memory_mb=RUN_LIMITS.memory_mb,
            pids=RUN_LIMITS.pids,
            work_root=f'/tmp/judge-test-zygote-{os.getpid()}',
        )
    )
    try:
        client.ensure_started()
        assert client._proc is not None
        first_server = client._proc.pid
        zygote = _spare_parent(first_server)
        assert zygote != first_server
        os.kill(zygote, signal.SIGKILL)
        for n in range(3):
            r = client.run(ExecRequest(limits=RUN_LIMITS._replace(time_s=3), python_source=f'print({n} * 7)'))
            assert r.exit_code == 0 and r.stdout == f'{n * 7}\n'.encode(), r
        # The server either forked a new zygote or exited and was restarted: either way a new zygote.
        assert client._proc is not None
        assert _spare_parent(client._proc.pid) != zygote
    finally:
        client.close()
        os.close(lock_fd)


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
