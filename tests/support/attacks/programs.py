"""The programs of the attack suite's main batch (`tests.support.attacks.batch`), one per case.

Each Python program runs after `tests.support.attacks.kit.PRELUDE` (its parameters in ``P``, ``attempt``,
``read``, ``report``) and prints one compact JSON report that the tests read with ``report_of``."""

from __future__ import annotations

NETWORK = """
import socket
def connect(family, kind, addr):
    s = socket.socket(family, kind)
    try:
        s.settimeout(2)
        s.connect(addr)
        s.send(b'PING\\r\\n')
    finally:
        s.close()
A4, A6, TCP, UDP = socket.AF_INET, socket.AF_INET6, socket.SOCK_STREAM, socket.SOCK_DGRAM
report(
    redis_tcp=attempt(connect, A4, TCP, ('127.0.0.1', P['redis_port'])),
    gateway_tcp=attempt(connect, A4, TCP, ('127.0.0.1', P['gateway_port'])),
    redis_tcp6=attempt(connect, A6, TCP, ('::1', P['redis_port'])),
    outside_tcp=attempt(connect, A4, TCP, ('1.1.1.1', 53)),
    udp=attempt(connect, A4, UDP, ('127.0.0.1', 53)),
    udp6=attempt(connect, A6, UDP, ('::1', 53)),
    raw=attempt(socket.socket, socket.AF_PACKET, socket.SOCK_RAW),
    netlink=attempt(socket.socket, socket.AF_NETLINK, socket.SOCK_RAW, 0),
)
"""


DNS = """
import socket
try:
    socket.getaddrinfo('example.com', 80)
    outcome = 'RESOLVED'
except socket.gaierror as e:
    outcome = 'gaierror:' + str(e)
except OSError as e:
    outcome = errno.errorcode.get(e.errno, 'OSError')
report(dns=outcome)
"""


READ_FILES = """
report(
    shadow=attempt(read, '/etc/shadow'),
    project_file=attempt(read, P['project_file']),
    project_dir=attempt(os.listdir, P['repo']),
    root_dir=attempt(os.listdir, '/root'),
    root_profile=attempt(read, '/root/.profile'),
    tmp_secret=attempt(read, P['tmp_secret']),
    var_tmp_secret=attempt(read, P['var_tmp_secret']),
    host_tmp=attempt(os.listdir, '/tmp'),
    init_environ=attempt(read, '/proc/1/environ'),
    init_root=attempt(os.listdir, '/proc/1/root'),
    init_cwd=attempt(os.listdir, '/proc/1/cwd'),
    worker_environ=attempt(read, '/proc/%d/environ' % P['worker_pid']),
)
"""


WRITE_FILES = """
def write(path):
    with open(path, 'x') as f:
        f.write('pwned')
def join_cgroup(path):
    with open(path, 'w') as f:
        f.write(str(os.getpid()))
report(
    tmp=attempt(write, P['tmp']),
    var_tmp=attempt(write, P['var_tmp']),
    dev_shm=attempt(write, P['dev_shm']),
    cache=attempt(write, P['cache']),
    repo=attempt(write, P['repo']),
    slot_dir=attempt(write, os.path.join(os.path.dirname(os.getcwd()), P['name'])),
    cgroup_escape=[attempt(join_cgroup, p) for p in P['cgroup_roots']],
)
"""


LIST_PROC = """
try:
    pids = sorted(int(x) for x in os.listdir('/proc') if x.isdigit())
except OSError as e:
    report(error=errno.errorcode.get(e.errno))
    raise SystemExit(0)
cmdlines = {}
for pid in pids:
    try:
        with open('/proc/%d/cmdline' % pid, 'rb') as f:
            cmdlines[pid] = f.read(8192).replace(b'\\0', b' ').decode(errors='replace')
    except OSError as e:
        cmdlines[pid] = errno.errorcode.get(e.errno)
words = ('celery', 'uvicorn', 'redis-server', 'pytest', 'sshd', 'process_api', 'bash')
report(pids=pids, me=os.getpid(), ppid=os.getppid(),
       host_words=sorted({w for c in cmdlines.values() for w in words if w in c}),
       init=' '.join(cmdlines.get(1, '').split(' ')[:3]))
"""


FORK_BOMB = """
import time
forks = 0
deadline = time.monotonic() + 3.0  # bounded by time; the slot's pids cgroup/RLIMIT_NPROC stop it first
try:
    while time.monotonic() < deadline:
        if os.fork() == 0:
            time.sleep(30)
            os._exit(0)
        forks += 1
except OSError as e:
    report(forks=forks, errno=errno.errorcode.get(e.errno))
    raise
report(forks=forks, errno=None)
"""


THREAD_BOMB = """
import threading, time
threads = 0
deadline = time.monotonic() + 3.0
try:
    while time.monotonic() < deadline:
        threading.Thread(target=time.sleep, args=(30,), daemon=True).start()
        threads += 1
except RuntimeError as e:
    report(threads=threads, error=str(e))
    raise
report(threads=threads, error=None)
"""


MEMORY_BOMB = """
chunks = []
for i in range(64):  # up to 4 GiB in 64 MiB steps, every page touched
    chunks.append(bytearray(64 << 20))
    print((i + 1) * 64, flush=True)
print('done')
"""


RLIMITS = """
import resource
limits = {}
for name in ('RLIMIT_CPU', 'RLIMIT_NPROC', 'RLIMIT_FSIZE', 'RLIMIT_NOFILE', 'RLIMIT_CORE', 'RLIMIT_AS'):
    which = getattr(resource, name)
    soft, hard = resource.getrlimit(which)
    if hard == resource.RLIM_INFINITY:
        outcome = 'unlimited'
    else:
        try:
            resource.setrlimit(which, (hard + 1, hard + 1))
            outcome = 'RAISED'
        except ValueError as e:
            outcome = 'ValueError:' + str(e)
        except OSError as e:
            outcome = errno.errorcode.get(e.errno)
    limits[name[7:]] = [outcome, soft, hard]
report(limits=limits, prlimit_init=attempt(resource.prlimit, 1, resource.RLIMIT_NOFILE, (1, 1)))
"""


ALARM = """
import signal, time
signal.alarm(0)
signal.setitimer(signal.ITIMER_REAL, 0)
for sig in (signal.SIGXCPU, signal.SIGALRM, signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGUSR1):
    signal.signal(sig, signal.SIG_IGN)
print('sleeping', flush=True)
time.sleep(100)
print('woke up')
"""


STDOUT_FLOOD = """
block = 'x' * 65536
while True:
    sys.stdout.write(block)
"""


STDERR_FLOOD = """
block = b'e' * 65536
while True:
    os.write(2, block)
"""


HUGE_FILE = """
mib = 0
try:
    with open(P['name'], 'wb') as f:
        while True:
            f.write(b'\\0' * (1 << 20))
            f.flush()
            mib += 1
except OSError as e:
    report(mib=mib, errno=errno.errorcode.get(e.errno))
    raise
"""


DAEMON = """
import subprocess, time
log = open('daemon.log', 'w')
popen = subprocess.Popen(['sleep', P['popen_marker']], start_new_session=True,
                         stdin=subprocess.PIPE, stdout=log, stderr=log)
child = os.fork()
if child == 0:  # classic double fork: setsid, fork again, the grandchild is re-parented
    os.setsid()
    if os.fork() == 0:
        os.execv('/bin/sleep', ['sleep', P['fork_marker']])
    os._exit(0)
os.waitpid(child, 0)
time.sleep(0.3)
running = []
for pid in os.listdir('/proc'):
    try:
        with open('/proc/%s/cmdline' % pid, 'rb') as f:
            text = f.read().decode(errors='replace')
    except OSError:
        continue
    if P['base'] in text:
        running.append(text.replace('\\0', ' ').strip())
report(running=sorted(running), popen_sid=os.getsid(popen.pid) == popen.pid)
if P['linger']:
    time.sleep(100)
"""


SYMLINKS = """
links = {
    'shadow_link': '/etc/shadow',
    'project_link': P['project_file'],
    'project_dir_link': P['repo'],
    'root_link': '/root',
    'init_root_link': '/proc/1/root/etc/hostname',
    'run': '/etc/shadow',  # named like the binary the C++ compile step exports
}
found = {}
for name, target in links.items():
    os.symlink(target, name)
    found[name] = attempt(os.listdir if target in (P['repo'], '/root') else read, name)
found['hardlink_passwd'] = attempt(os.link, '/etc/passwd', 'hard_passwd')
found['hardlink_shadow'] = attempt(os.link, '/etc/shadow', 'hard_shadow')
report(**found)
"""


SYSCALLS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR = P['nr']
def call(name, *args):
    ctypes.set_errno(0)
    conv = [ctypes.c_long(a) if isinstance(a, int) else ctypes.c_char_p(a) for a in args]
    ret = libc.syscall(ctypes.c_long(NR[name]), *conv)
    if ret == 0 and name == 'clone':  # a namespace-creating clone succeeded: leave quietly
        os._exit(0)
    if ret >= 0:
        return 'OK:%d' % ret
    return errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))
report(
    ptrace_attach_init=call('ptrace', 16, 1, 0, 0),
    ptrace_traceme=call('ptrace', 0, 0, 0, 0),
    process_vm_readv=call('process_vm_readv', 1, 0, 0, 0, 0, 0),
    unshare_user=call('unshare', 0x10000000),
    unshare_mount=call('unshare', 0x00020000),
    unshare_net=call('unshare', 0x40000000),
    setns=call('setns', 0, 0),
    mount=call('mount', b'none', b'.', b'tmpfs', 0, 0),
    bpf=call('bpf', 5, 0, 0),
    perf_event_open=call('perf_event_open', 0, 0, -1, -1, 0),
    clone_newuser=call('clone', 0x10000000 | 17, 0, 0, 0, 0),
    clone3=call('clone3', 0, 0),
    io_uring_setup=call('io_uring_setup', 1, 0),
    keyctl=call('keyctl', 0, 0, 0, 0, 0),
    userfaultfd=call('userfaultfd', 0),
    os_chroot=attempt(os.chroot, '.'),
    os_setuid0=attempt(os.setuid, 0),
    os_setgroups=attempt(os.setgroups, [0]),
)
"""


ENVIRONMENT = """
status = {}
with open('/proc/self/status') as f:
    for line in f:
        key, _, value = line.partition(':')
        if key in ('NoNewPrivs', 'Seccomp', 'CapInh', 'CapPrm', 'CapEff', 'CapAmb', 'Groups'):
            status[key] = value.strip()
def is_open(fd):
    try:
        os.fstat(fd)
        return True
    except OSError:
        return False
report(keys=sorted(os.environ), home=os.environ.get('HOME'), status=status, uid=os.getuid(), gid=os.getgid(),
       groups=os.getgroups(), fds=[fd for fd in range(3, 1024) if is_open(fd)])
"""


DEV_NODES = """
import subprocess
report(
    dev_null_write=attempt(lambda: os.close(os.open('/dev/null', os.O_WRONLY))),
    dev_urandom=attempt(lambda: len(read('/dev/urandom'))),
    subprocess_devnull=attempt(lambda: subprocess.run(['true'], stdout=subprocess.DEVNULL).returncode),
)
"""


DEV_SHM = """
import multiprocessing
def write(path):
    with open(path, 'w') as f:
        f.write('x')
report(dev_shm_write=attempt(write, '/dev/shm/' + P['name']), mp_lock=attempt(multiprocessing.Lock))
"""


FORGED_DONE = """
import stat, struct, time
path = os.getcwd() + '.done'  # the FIFO warm Python reports its end in (judge.sandbox.zygote.warm)
st = os.stat(path)
report(fifo=stat.S_ISFIFO(st.st_mode), mode=oct(stat.S_IMODE(st.st_mode)), mine=st.st_uid == os.getuid())
fd = os.open(path, os.O_WRONLY)
os.write(fd, struct.pack('>idq', 0, 0.0, 0))  # "exit status 0", while still running
os.close(fd)
print('after the forged end', flush=True)
time.sleep(100)
"""


CPP_INCLUDE = '#include "%s"\nint main() { return 0; }\n'


# Syscall numbers for SYSCALLS, kept here independently of judge.sandbox.kernel.seccomp's own tables.
SYSCALL_NUMBERS: dict[str, dict[str, int]] = {
    'x86_64': {
        'ptrace': 101, 'process_vm_readv': 310, 'unshare': 272, 'setns': 308, 'mount': 165, 'bpf': 321,
        'perf_event_open': 298, 'clone': 56, 'clone3': 435, 'io_uring_setup': 425, 'keyctl': 250,
        'userfaultfd': 323,
    },
    'aarch64': {
        'ptrace': 117, 'process_vm_readv': 270, 'unshare': 97, 'setns': 268, 'mount': 40, 'bpf': 280,
        'perf_event_open': 241, 'clone': 220, 'clone3': 435, 'io_uring_setup': 425, 'keyctl': 219,
        'userfaultfd': 282,
    },
}  # fmt: skip
