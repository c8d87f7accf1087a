"""Kernel objects and counters that outlive an execution: nothing one program does is seen by the next.

A *sender* tries to pass a bit to the next execution in its slot through what the slot's namespaces
keep between executions: the pid namespace's next pid (by forking many processes), the work space's
and ``/dev/shm``'s next inode numbers (by making and removing many files), POSIX message queues (made
even where opening them is refused) and the work dir's name.  A *receiver* in the same slot then
reports what it sees.  Each execution gets its own work tmpfs and ``/dev/shm``, a random pid and a
random work dir name (`judge.sandbox.server.files.spaces`); message queues are refused by seccomp.  So the
receiver's view must be the same whatever the sender did.  Senders in Python, C and bash.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.attacks.kit import SLOTS, SlotHealth, bash, batch, c, py, report_of, survived

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

PY_SENDER = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
made = {'mq': libc.mq_open(b'/judge-counter-probe', os.O_CREAT | os.O_RDWR, 0o600, None)}
made['mq_errno'] = ctypes.get_errno()
if P['bit']:
    for _ in range(60):
        pid = os.fork()
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
    for where in ('/dev/shm', '.'):
        for i in range(300):
            path = os.path.join(where, f'n{i}')
            open(path, 'w').close()
            os.unlink(path)
report(slot=slot(), pid=os.getpid(), made=made, cwd=os.getcwd())
"""

C_SENDER = r"""
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < 60; i++) { pid_t p = fork(); if (p == 0) _exit(0); if (p > 0) waitpid(p, NULL, 0); }
    for (int i = 0; i < 300; i++) {
        char path[64]; snprintf(path, sizeof path, "/dev/shm/c%d", i);
        FILE *f = fopen(path, "w"); if (f) { fclose(f); unlink(path); }
        snprintf(path, sizeof path, "c%d", i);
        f = fopen(path, "w"); if (f) { fclose(f); unlink(path); }
    }
    puts("sent");
    return 0;
}
"""

BASH_SENDER = 'for i in $(seq 300); do : > /dev/shm/b$i; rm /dev/shm/b$i; : > b$i; rm b$i; done; echo sent\n'

RECEIVER = """
import ctypes, stat
libc = ctypes.CDLL(None, use_errno=True)
excl = libc.mq_open(b'/judge-counter-probe', os.O_CREAT | os.O_EXCL | os.O_RDWR, 0o600, None)
mq = 'made' if excl >= 0 else errno.errorcode.get(ctypes.get_errno())
seen = {}
for where in ('/dev/shm', '.'):
    path = os.path.join(where, 'probe')
    open(path, 'w').close()
    seen[where] = os.stat(path).st_ino
    os.unlink(path)
child = os.fork()
if child == 0:
    os._exit(0)
os.waitpid(child, 0)
report(slot=slot(), pid=os.getpid(), child_after=child - os.getpid(), inodes=seen, mq=mq, cwd=os.getcwd(),
       shm_root=os.stat('/dev/shm').st_ino, workdir_root=os.stat('.').st_ino)
"""


def _after(gateway_url: str, sender: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Run ``sender``, then receivers until one lands on its slot; (the sender's result, that receiver's report)."""
    first = batch(gateway_url, [sender], route='/run/batch')[0]
    survived(first)
    slot_of = report_of(first)['slot'] if sender['type'] == 'python' else None
    for _ in range(8):
        receivers = batch(gateway_url, [py(RECEIVER) for _ in range(SLOTS)], route='/run/batch')
        for result in receivers:
            survived(result)
            got = report_of(result)
            if slot_of is None or got['slot'] == slot_of:
                return first, got
    raise AssertionError("no receiver ran in the sender's slot")


def _view(got: dict[str, Any]) -> tuple[Any, ...]:
    """What a receiver sees that must not depend on earlier executions."""
    return (tuple(sorted(got['inodes'].items())), got['mq'], got['shm_root'], got['workdir_root'], got['child_after'])


def test_a_python_sender_passes_nothing_to_the_next_execution(gateway_url: str, health: SlotHealth) -> None:
    views, pids = [], []
    for bit in (0, 1, 0, 1):
        sent, got = _after(gateway_url, py(PY_SENDER, bit=bit))
        made = report_of(sent)['made']
        assert made['mq'] < 0, f'a POSIX message queue was made: {made}'
        views.append(_view(got))
        pids.append((report_of(sent)['pid'], got['pid']))
        assert got['mq'] != 'EEXIST', f'a queue of an earlier execution is there: {got}'
    assert len(set(views)) == 1, f'the receiver sees what the sender did: {views}'
    assert all(abs(receiver - sender) > 1000 for sender, receiver in pids), f'pids follow each other: {pids}'


@pytest.mark.parametrize(('language', 'sender'), [('c', C_SENDER), ('bash', BASH_SENDER)])
def test_c_and_bash_senders_pass_nothing_either(
    gateway_url: str, health: SlotHealth, language: str, sender: str
) -> None:
    quiet = _view(_after(gateway_url, py(PY_SENDER, bit=0))[1])
    for _ in range(2):  # whichever slot it ran in, every receiver sees what a quiet one sees
        sub = c(sender, 'sent\n') if language == 'c' else bash(sender, 'sent\n')
        results = batch(gateway_url, [sub] * SLOTS, route='/run/batch')
        for result in results:
            survived(result)
            assert result['stdout'] == 'sent\n', result
        for result in batch(gateway_url, [py(RECEIVER) for _ in range(SLOTS)], route='/run/batch'):
            assert _view(report_of(result)) == quiet, report_of(result)


def test_work_dir_names_tell_nothing(gateway_url: str, health: SlotHealth) -> None:
    names = [report_of(r)['cwd'] for r in batch(gateway_url, [py(RECEIVER) for _ in range(4 * SLOTS)])]
    assert len(set(names)) == len(names), names
    tails = [name.rstrip('/').split('/')[-2] for name in names]
    assert all(len(tail) == 17 and tail[0] == 'x' and int(tail[1:], 16) >= 0 for tail in tails), names
