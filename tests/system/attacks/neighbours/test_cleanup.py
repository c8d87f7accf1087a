"""Clean-up: deep or huge directory trees, odd entries, anything left where a later execution could see it.

Clean-up after an execution must not depend on depth, width or entry kinds (`judge.sandbox.server.files.cleanup`),
and nothing written anywhere writable (work dir, /dev/shm, the slot's own tmp dirs) may reach the next
execution of the slot.  Each test wraps its attacks in the slot-health check (`health`): the canaries
after it list their work dir, /dev/shm and the work dirs of earlier executions.

State an execution leaves where the next one could find it (SysV IPC, POSIX message queues, /dev/shm,
work-dir files) is checked by a creator and readers that land on the same slot.
"""

from __future__ import annotations

import random
import time
import uuid
from typing import Any

import pytest

from tests.support.attacks.kit import SLOTS, SlotHealth, bash, batch, c, py, report_of, survived

pytestmark = [pytest.mark.integration, pytest.mark.attack, pytest.mark.both_paths]

DEEP = """
import time
def deep(root, depth):
    os.chdir(root)
    with open('marker-' + P['tag'], 'w') as f:
        f.write('left for the next execution')
    reached = 0
    try:
        for _ in range(depth):
            os.mkdir('d')
            os.chdir('d')
            reached += 1
        with open('bottom', 'w') as f:
            f.write('x')
    except OSError as e:
        return reached, errno.errorcode.get(e.errno)
    return reached, None
report(where=P['root'], reached=deep(P['root'], P['depth']))
"""

WIDE = """
made = 0
try:
    for i in range(P['files']):
        with open('f%d' % i, 'w'):
            pass
        made += 1
    for i in range(P['dirs']):
        os.mkdir('d%d' % i)
        with open('d%d/x' % i, 'w'):
            pass
        made += 2
except OSError as e:
    report(made=made, errno=errno.errorcode.get(e.errno))
    raise SystemExit(0)
report(made=made, errno=None)
"""

ODD = """
import socket, stat
os.mkfifo('fifo')
os.symlink('loop', 'loop')
os.symlink('/', 'root_link')
os.symlink('/proc/self/cwd', 'cwd_link')
s = socket.socket(socket.AF_UNIX)
s.bind('sock')
os.link('fifo', 'fifo_hard')
for name in ('..\\n', ' ', '-rf', '\\x01', 'é' * 80):
    with open(name, 'w') as f:
        f.write('x')
os.makedirs('locked/a/b/c')
with open('locked/a/b/c/secret', 'w') as f:
    f.write('x')
for path in ('locked/a/b/c', 'locked/a/b', 'locked/a', 'locked'):
    os.chmod(path, 0)
os.makedirs('/dev/shm/shm-' + P['tag'] + '/x')
os.chmod('/dev/shm/shm-' + P['tag'], 0)
os.chmod('.', stat.S_IRUSR | stat.S_IXUSR)  # a work dir its owner cannot write any more
report(done=True)
"""

FILL_INODES = """
made = 0
try:
    while True:
        os.mkdir('i%d' % made)
        made += 1
except OSError as e:
    report(made=made, errno=errno.errorcode.get(e.errno))
"""

C_DEEP = r"""
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
static int deep(const char *root, int depth) {
    if (chdir(root) != 0) return -1;
    int fd = open("marker", O_CREAT | O_WRONLY, 0644);
    if (fd >= 0) close(fd);
    int reached = 0;
    for (; reached < depth; reached++) {
        if (mkdir("d", 0755) != 0 || chdir("d") != 0) break;
    }
    return reached;
}
int main(void) {
    char home[4096];
    if (!getcwd(home, sizeof home)) return 1;
    int a = deep(home, 2500);  /* deeper costs quadratic time: Landlock checks every ancestor */
    int b = deep("/dev/shm", 1500);
    chdir(home);
    int files = 0;
    char name[32];
    for (; files < 10000; files++) {
        snprintf(name, sizeof name, "f%d", files);
        int fd = open(name, O_CREAT | O_WRONLY, 0644);
        if (fd < 0) break;
        close(fd);
    }
    printf("{\"work\":%d,\"shm\":%d,\"files\":%d}\n", a, b, files);
    return 0;
}
"""

BASH_DEEP = """
set -u
chunk=$(printf 'd/%.0s' $(seq 700))  # 1400 deep: past the recursion limit of a recursive clean-up
home=$PWD
echo left > marker
for k in 1 2; do mkdir -p "$chunk" && cd "$chunk" || break; done
echo bottom > bottom
cd /dev/shm && echo left > marker-bash
mkdir -p "$chunk"
cd "$home"
mkdir many && cd many && touch $(seq -f 'f%g' 3000) && cd ..
ln -s / root_link; mkfifo fifo
echo '{"done":true}'
"""


def test_deep_trees_from_python_do_not_break_the_slot(gateway_url: str, health: SlotHealth) -> None:
    subs = [py(DEEP, root='.', depth=3000, tag='py-work'), py(DEEP, root='/dev/shm', depth=3000, tag='py-shm')]
    for result in batch(gateway_url, subs):
        survived(result)
        assert result['verdict'] == 'accepted', result
        reached, stopped = report_of(result)['reached']
        assert reached == 3000 and stopped is None, result  # the tree was really built


def test_deep_trees_from_c_and_bash_do_not_break_the_slot(gateway_url: str, health: SlotHealth) -> None:
    results = batch(gateway_url, [c(C_DEEP), bash(BASH_DEEP), c(C_DEEP), bash(BASH_DEEP)])
    for result in results[::2]:
        survived(result)
        got = report_of(result)
        assert got == {'work': 2500, 'shm': 1500, 'files': 10000}, got
    for result in results[1::2]:
        survived(result)
        assert report_of(result) == {'done': True}, result


def test_wide_trees_and_odd_entries_are_removed(gateway_url: str, health: SlotHealth) -> None:
    subs = [
        py(WIDE, files=20000, dirs=2000),
        py(ODD, tag='odd-1'),
        py(WIDE, files=5000, dirs=5000),
        py(ODD, tag='odd-2'),
    ]
    results = batch(gateway_url, subs)
    for result in results:
        survived(result)
    assert report_of(results[0]) == {'made': 24000, 'errno': None}, results[0]
    assert report_of(results[1]) == {'done': True}, results[1]


def test_filling_the_work_space_inodes_is_bounded_and_cleaned_in_bounded_time(
    gateway_url: str, health: SlotHealth
) -> None:
    start = time.monotonic()
    results = batch(gateway_url, [py(FILL_INODES)])
    for result in results:
        survived(result)
        got = report_of(result)
        assert got['errno'] == 'ENOSPC' and 1000 < got['made'] <= 65536, got  # the work tmpfs's inode bound
    # an execution filling its slot's work space, and its clean-up: a bounded time
    assert time.monotonic() - start < 60


# --- state left for a later execution ------------------------------------------------------------


STATE_CREATE = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
def ipc(ret):
    return 'OK' if ret >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
made = {}
shm = libc.shmget(P['key'], 65536, 0o1000 | 0o600)  # IPC_CREAT
made['shm'] = ipc(shm)
if shm >= 0:
    addr = libc.shmat(shm, None, 0)
    ctypes.memmove(addr, P['marker'].encode(), len(P['marker']))
    libc.shmdt(ctypes.c_void_p(addr))
made['msg'] = ipc(libc.msgget(P['key'], 0o1000 | 0o600))
made['sem'] = ipc(libc.semget(P['key'], 1, 0o1000 | 0o600))
made['mq'] = ipc(libc.mq_open(('/' + P['marker']).encode(), os.O_CREAT | os.O_RDWR, 0o600, None))
def write(path):
    with open(path, 'w') as f:
        f.write(P['marker'])
made['dev_shm'] = attempt(write, '/dev/shm/' + P['marker'])
made['home'] = attempt(write, os.path.join(os.environ['HOME'], P['marker']))
report(made=made, workdir=os.getcwd(), cgroup=[l.strip() for l in open('/proc/self/cgroup') if 'pids' in l])
"""


STATE_READ = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.shmat.restype = ctypes.c_void_p
found = {}
shm = libc.shmget(P['key'], 0, 0)
if shm >= 0:
    addr = libc.shmat(shm, None, 0o10000)  # SHM_RDONLY
    found['shm'] = ctypes.string_at(addr, len(P['marker'])).decode(errors='replace')
    libc.shmdt(ctypes.c_void_p(addr))
    libc.shmctl(shm, 0, None)  # IPC_RMID: clean up what the earlier execution left
for name, get, rm in (('msg', libc.msgget, libc.msgctl), ('sem', libc.semget, libc.semctl)):
    ident = get(P['key'], 0, 0) if name == 'sem' else get(P['key'], 0)
    if ident >= 0:
        found[name] = ident
        rm(ident, 0, 0) if name == 'sem' else rm(ident, 0, None)
mq = ('/' + P['marker']).encode()
if libc.mq_open(mq, os.O_RDONLY, 0, None) >= 0:
    found['mq'] = True
    libc.mq_unlink(mq)
for path in ('/dev/shm/' + P['marker'], P['workdir']):
    if os.path.exists(path):
        found[path] = True
report(found=found, cgroup=[l.strip() for l in open('/proc/self/cgroup') if 'pids' in l])
"""


def test_no_state_survives_between_executions(gateway_url: str) -> None:
    """SysV IPC, POSIX message queues, /dev/shm and work-dir files must not carry over to a later execution.

    The slot's IPC namespace and /dev/shm live as long as the slot server, so anything left there would
    be a channel between executions (and SysV shm would stay charged to the slot's memory cgroup).
    """
    key = random.randrange(0x10000000, 0x7FFFFFFF)
    marker = f'state-{uuid.uuid4().hex[:12]}'
    created = batch(gateway_url, [py(STATE_CREATE, key=key, marker=marker)], route='/run/batch')[0]
    survived(created)
    made = report_of(created)
    assert made['made']['home'] == 'OK', made  # its own work dir is writable
    seen: dict[str, Any] | None = None
    for _ in range(6):  # readers until one lands on the creator's slot (it also removes what it finds)
        readers = [py(STATE_READ, key=key, marker=marker, workdir=made['workdir']) for _ in range(SLOTS)]
        for result in batch(gateway_url, readers, route='/run/batch'):
            survived(result)
            got = report_of(result)
            if got['cgroup'] == made['cgroup']:
                seen = got
        if seen is not None:
            break
    assert seen is not None, 'no reader ran in the creating slot'
    assert seen['found'] == {}, f'an earlier execution left state behind: {made} -> {seen}'
