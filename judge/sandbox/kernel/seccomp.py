"""A small seccomp deny-list, compiled to classic BPF without libseccomp.

`build_filter` assembles the program once (in the slot server); each forked child then only calls
`install`, which is two ``prctl`` calls.  The policy (docs/sandbox.md, "Seccomp and Landlock"):
default ALLOW; kill the process on a foreign architecture and on x32 system calls; EPERM for
non-AF_UNIX ``socket``, namespace creation, mounts, ptrace, kernel-facing administration calls and
io_uring; ENOSYS for ``clone3`` so glibc falls back to ``clone``, whose flags a classic BPF filter
can inspect; and the rules of `judge.sandbox.kernel.seccomp_args` for file locks, watches, the page
cache and the core-dump limit.

Syscall numbers live in explicit per-architecture tables below (x86_64 and aarch64); the assembler
is `judge.sandbox.kernel.bpf`.
"""

from __future__ import annotations

import ctypes
import errno
import os

from judge.sandbox.kernel import libc, namespaces, seccomp_args
from judge.sandbox.kernel.bpf import (
    BPF_JEQ_K,
    BPF_JGE_K,
    BPF_JSET_K,
    INSN,
    OFFSET_ARCH,
    OFFSET_NR,
    SECCOMP_RET_ALLOW,
    SECCOMP_RET_ERRNO,
    SECCOMP_RET_KILL_PROCESS,
    Assembler,
    arg_offset,
)
from judge.sandbox.kernel.bpf import BPF_LD_W_ABS as BPF_LD_W_ABS  # re-exported for the filter's tests
from judge.sandbox.kernel.bpf import BPF_RET_K as BPF_RET_K
from judge.sandbox.lazylog import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the warm parents: see `judge.sandbox.fdio`
    from collections.abc import Mapping

logger = get_logger('judge.sandbox.kernel.seccomp')

# --- kernel ABI constants ------------------------------------------------------------------------
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

OFFSET_ARG0_LO = arg_offset(0)

AF_UNIX = 1
PER_LINUX = 0
PERSONALITY_QUERY = 0xFFFFFFFF
CLONE_NEW_FLAGS = (
    namespaces.CLONE_NEWNS
    | namespaces.CLONE_NEWCGROUP
    | namespaces.CLONE_NEWUTS
    | namespaces.CLONE_NEWIPC
    | namespaces.CLONE_NEWUSER
    | namespaces.CLONE_NEWPID
    | namespaces.CLONE_NEWNET
)

# Denied outright with EPERM (names missing from an arch's table simply do not exist there).
DENIED_SYSCALLS = (
    'ptrace', 'process_vm_readv', 'process_vm_writev', 'unshare', 'setns',
    'mount', 'umount2', 'pivot_root', 'chroot', 'move_mount', 'open_tree', 'open_tree_attr',
    'fsopen', 'fsconfig', 'fsmount', 'fspick', 'mount_setattr',
    'bpf', 'perf_event_open', 'keyctl', 'add_key', 'request_key',
    'io_uring_setup', 'io_uring_enter', 'io_uring_register', 'userfaultfd',
    'init_module', 'finit_module', 'delete_module', 'kexec_load', 'kexec_file_load',
    'reboot', 'swapon', 'swapoff', 'acct', 'quotactl', 'quotactl_fd', 'syslog',
    'open_by_handle_at', 'name_to_handle_at', 'iopl', 'ioperm',
    'settimeofday', 'clock_settime', 'clock_adjtime', 'adjtimex', 'sethostname', 'setdomainname',
    # SysV IPC objects and POSIX message queues outlive the process that made them: a channel between executions
    'shmget', 'msgget', 'semget',
    'mq_open', 'mq_unlink', 'mq_timedsend', 'mq_timedreceive', 'mq_notify', 'mq_getsetattr',
)  # fmt: skip

SYSCALLS_X86_64: Mapping[str, int] = {
    'socket': 41, 'clone': 56, 'clone3': 435, 'personality': 135,
    'ptrace': 101, 'process_vm_readv': 310, 'process_vm_writev': 311, 'unshare': 272, 'setns': 308,
    'mount': 165, 'umount2': 166, 'pivot_root': 155, 'chroot': 161, 'move_mount': 429, 'open_tree': 428,
    'open_tree_attr': 467, 'fsopen': 430, 'fsconfig': 431, 'fsmount': 432, 'fspick': 433, 'mount_setattr': 442,
    'bpf': 321, 'perf_event_open': 298, 'keyctl': 250, 'add_key': 248, 'request_key': 249,
    'io_uring_setup': 425, 'io_uring_enter': 426, 'io_uring_register': 427, 'userfaultfd': 323,
    'init_module': 175, 'finit_module': 313, 'delete_module': 176, 'kexec_load': 246, 'kexec_file_load': 320,
    'reboot': 169, 'swapon': 167, 'swapoff': 168, 'acct': 163, 'quotactl': 179, 'quotactl_fd': 443,
    'syslog': 103, 'open_by_handle_at': 304, 'name_to_handle_at': 303, 'iopl': 172, 'ioperm': 173,
    'settimeofday': 164, 'clock_settime': 227, 'clock_adjtime': 305, 'adjtimex': 159,
    'sethostname': 170, 'setdomainname': 171, 'shmget': 29, 'semget': 64, 'msgget': 68,
    'mq_open': 240, 'mq_unlink': 241, 'mq_timedsend': 242, 'mq_timedreceive': 243, 'mq_notify': 244,
    'mq_getsetattr': 245,
    # judge.sandbox.kernel.seccomp_args (cachestat: 451 everywhere, newer than Debian 12's headers)
    'flock': 73, 'fcntl': 72, 'fadvise64': 221, 'madvise': 28, 'preadv2': 327, 'pwritev2': 328,
    'cachestat': 451, 'io_setup': 206, 'inotify_init': 253, 'inotify_init1': 294, 'inotify_add_watch': 254,
    'fanotify_init': 300, 'fanotify_mark': 301, 'setrlimit': 160, 'prlimit64': 302,
}  # fmt: skip

SYSCALLS_AARCH64: Mapping[str, int] = {
    'socket': 198, 'clone': 220, 'clone3': 435, 'personality': 92,
    'ptrace': 117, 'process_vm_readv': 270, 'process_vm_writev': 271, 'unshare': 97, 'setns': 268,
    'mount': 40, 'umount2': 39, 'pivot_root': 41, 'chroot': 51, 'move_mount': 429, 'open_tree': 428,
    'open_tree_attr': 467, 'fsopen': 430, 'fsconfig': 431, 'fsmount': 432, 'fspick': 433, 'mount_setattr': 442,
    'bpf': 280, 'perf_event_open': 241, 'keyctl': 219, 'add_key': 217, 'request_key': 218,
    'io_uring_setup': 425, 'io_uring_enter': 426, 'io_uring_register': 427, 'userfaultfd': 282,
    'init_module': 105, 'finit_module': 273, 'delete_module': 106, 'kexec_load': 104, 'kexec_file_load': 294,
    'reboot': 142, 'swapon': 224, 'swapoff': 225, 'acct': 89, 'quotactl': 60, 'quotactl_fd': 443,
    'syslog': 116, 'open_by_handle_at': 265, 'name_to_handle_at': 264,
    'settimeofday': 170, 'clock_settime': 112, 'clock_adjtime': 266, 'adjtimex': 171,
    'sethostname': 161, 'setdomainname': 162, 'msgget': 186, 'semget': 190, 'shmget': 194,
    'mq_open': 180, 'mq_unlink': 181, 'mq_timedsend': 182, 'mq_timedreceive': 183, 'mq_notify': 184,
    'mq_getsetattr': 185,
    'flock': 32, 'fcntl': 25, 'fadvise64': 223, 'madvise': 233, 'preadv2': 286, 'pwritev2': 287,
    'cachestat': 451, 'io_setup': 0, 'inotify_init1': 26, 'inotify_add_watch': 27,
    'fanotify_init': 262, 'fanotify_mark': 263, 'setrlimit': 164, 'prlimit64': 261,
}  # fmt: skip

# machine name -> (AUDIT_ARCH value, syscall table, has the x32 ABI)
ARCHES: Mapping[str, tuple[int, Mapping[str, int], bool]] = {
    'x86_64': (AUDIT_ARCH_X86_64, SYSCALLS_X86_64, True),
    'aarch64': (AUDIT_ARCH_AARCH64, SYSCALLS_AARCH64, False),
}
_MACHINE_ALIASES = {'amd64': 'x86_64', 'arm64': 'aarch64'}


def native_arch() -> str:
    """The running machine's architecture name as used in `ARCHES`."""
    machine = os.uname().machine.lower()
    return _MACHINE_ALIASES.get(machine, machine)


def build_filter(arch: str | None = None) -> bytes:
    """Return the deny-list as packed ``struct sock_filter`` entries for *arch* (default: this machine).

    Raises ValueError for an architecture without a syscall table.
    """
    name = arch if arch is not None else native_arch()
    if name not in ARCHES:
        raise ValueError(f'no seccomp syscall table for architecture {name!r}')
    audit_arch, table, has_x32 = ARCHES[name]
    a = Assembler()
    a.load(OFFSET_ARCH)
    a.jump(BPF_JEQ_K, audit_arch, 0, 'kill')
    a.load(OFFSET_NR)
    if has_x32:  # x32 calls carry bit 30; -1 (0xffffffff) is let through: the kernel answers ENOSYS
        a.jump(BPF_JGE_K, X32_SYSCALL_BIT, 0, 'dispatch')
        a.jump(BPF_JEQ_K, 0xFFFFFFFF, 'allow', 'kill')
    a.label('dispatch')
    a.jump(BPF_JEQ_K, table['socket'], 'socket', 0)
    a.jump(BPF_JEQ_K, table['clone'], 'clone', 0)
    a.jump(BPF_JEQ_K, table['clone3'], 'enosys', 0)
    a.jump(BPF_JEQ_K, table['personality'], 'personality', 0)
    seccomp_args.emit_dispatch(a, table)
    for syscall in DENIED_SYSCALLS:
        if syscall in table:
            a.jump(BPF_JEQ_K, table[syscall], 'eperm', 0)
    a.ret(SECCOMP_RET_ALLOW)
    a.label('socket')  # socket(domain, ...): only AF_UNIX
    a.load(OFFSET_ARG0_LO)
    a.jump(BPF_JEQ_K, AF_UNIX, 'allow', 'eperm')
    a.label('clone')  # clone(flags, ...): flags is args[0] on x86_64 and aarch64
    a.load(OFFSET_ARG0_LO)
    a.jump(BPF_JSET_K, CLONE_NEW_FLAGS, 'eperm', 'allow')
    a.label('personality')  # personality(persona): only PER_LINUX or the 0xffffffff query
    a.load(OFFSET_ARG0_LO)
    a.jump(BPF_JEQ_K, PER_LINUX, 'allow', 0)
    a.jump(BPF_JEQ_K, PERSONALITY_QUERY, 'allow', 'eperm')
    seccomp_args.emit_rules(a)
    a.label('eperm')
    a.ret(SECCOMP_RET_ERRNO | errno.EPERM)
    a.label('enosys')
    a.ret(SECCOMP_RET_ERRNO | errno.ENOSYS)
    a.label('kill')
    a.ret(SECCOMP_RET_KILL_PROCESS)
    a.label('allow')
    a.ret(SECCOMP_RET_ALLOW)
    program = a.assemble()
    logger.debug('seccomp filter for %s: %d instructions', name, len(program) // INSN.size)
    if name == native_arch():
        _prepare(program)
    return program


class _SockFprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]


# program -> (buffer, sock_fprog, address of the sock_fprog), prepared in the parent so that a forked
# child's `install` is two prctl calls: building ctypes objects right after a fork costs more than both.
_prepared: dict[bytes, tuple[ctypes.Array[ctypes.c_char], _SockFprog, int]] = {}


def _prepare(program: bytes) -> int:
    entry = _prepared.get(program)
    if entry is None:
        if not program or len(program) % INSN.size or len(program) // INSN.size > 4096:
            raise ValueError('not a classic BPF program')
        buf = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // INSN.size, ctypes.addressof(buf))
        entry = _prepared[program] = (buf, fprog, ctypes.addressof(fprog))
    return entry[2]


def install(program: bytes) -> None:
    """Set no_new_privs and load *program* (from `build_filter`) into the calling thread.

    Meant for a freshly forked child; the program is prepared for loading once per process (programs from
    `build_filter` already are).  Raises OSError with the kernel's errno on failure.
    """
    fprog_address = _prepare(program)
    libc.set_no_new_privs()
    libc.check(libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, fprog_address, 0, 0), 'prctl(PR_SET_SECCOMP)')
