"""A small seccomp deny-list, compiled to classic BPF without libseccomp.

`build_filter` assembles the program once (in the slot server); each forked child then only calls
`install`, which is two ``prctl`` calls.  The policy (docs/sandbox.md, "Seccomp and Landlock"):
default ALLOW; kill the process on a foreign architecture and on x32 system calls; EPERM for
non-AF_UNIX ``socket``, namespace creation, mounts, ptrace, kernel-facing administration calls and
io_uring; ENOSYS for ``clone3`` so glibc falls back to ``clone``, whose flags a classic BPF filter
can inspect.

Syscall numbers live in explicit per-architecture tables below (x86_64 and aarch64).
"""

from __future__ import annotations

import ctypes
import errno
import os
import struct

from judge.sandbox.kernel import libc, namespaces
from judge.sandbox.lazylog import get_logger

TYPE_CHECKING = False
if TYPE_CHECKING:  # imported by the warm parents: see `judge.sandbox.fdio`
    from collections.abc import Mapping

logger = get_logger('judge.sandbox.kernel.seccomp')

# --- kernel ABI constants ------------------------------------------------------------------------
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
SECCOMP_RET_ALLOW = 0x7FFF0000

AUDIT_ARCH_X86_64 = 0xC000003E
AUDIT_ARCH_AARCH64 = 0xC00000B7
X32_SYSCALL_BIT = 0x40000000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
OFFSET_NR = 0
OFFSET_ARCH = 4
OFFSET_ARG0_LO = 16  # low 32 bits of args[0] (little-endian)

# classic BPF opcodes
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06

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
}  # fmt: skip

# machine name -> (AUDIT_ARCH value, syscall table, has the x32 ABI)
ARCHES: Mapping[str, tuple[int, Mapping[str, int], bool]] = {
    'x86_64': (AUDIT_ARCH_X86_64, SYSCALLS_X86_64, True),
    'aarch64': (AUDIT_ARCH_AARCH64, SYSCALLS_AARCH64, False),
}
_MACHINE_ALIASES = {'amd64': 'x86_64', 'arm64': 'aarch64'}

_INSN = struct.Struct('<HBBI')  # struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}


def native_arch() -> str:
    """The running machine's architecture name as used in `ARCHES`."""
    machine = os.uname().machine.lower()
    return _MACHINE_ALIASES.get(machine, machine)


class _Assembler:
    """A tiny classic-BPF assembler with symbolic jump targets (classic BPF jumps only forward)."""

    def __init__(self) -> None:
        self._code: list[tuple[int, int | str, int | str, int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        self._labels[name] = len(self._code)

    def load(self, offset: int) -> None:
        self._code.append((BPF_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, jt: int | str, jf: int | str) -> None:
        self._code.append((op, jt, jf, k))

    def ret(self, action: int) -> None:
        self._code.append((BPF_RET_K, 0, 0, action))

    def assemble(self) -> bytes:
        out = bytearray()
        for pc, (code, jt, jf, k) in enumerate(self._code):
            out += _INSN.pack(code, self._offset(pc, jt), self._offset(pc, jf), k)
        return bytes(out)

    def _offset(self, pc: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        offset = self._labels[target] - pc - 1
        if not 0 <= offset <= 255:
            raise ValueError(f'BPF jump to {target!r} out of range ({offset})')
        return offset


def build_filter(arch: str | None = None) -> bytes:
    """Return the deny-list as packed ``struct sock_filter`` entries for *arch* (default: this machine).

    Raises ValueError for an architecture without a syscall table.
    """
    name = arch if arch is not None else native_arch()
    if name not in ARCHES:
        raise ValueError(f'no seccomp syscall table for architecture {name!r}')
    audit_arch, table, has_x32 = ARCHES[name]
    a = _Assembler()
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
    a.label('eperm')
    a.ret(SECCOMP_RET_ERRNO | errno.EPERM)
    a.label('enosys')
    a.ret(SECCOMP_RET_ERRNO | errno.ENOSYS)
    a.label('kill')
    a.ret(SECCOMP_RET_KILL_PROCESS)
    a.label('allow')
    a.ret(SECCOMP_RET_ALLOW)
    program = a.assemble()
    logger.debug('seccomp filter for %s: %d instructions', name, len(program) // _INSN.size)
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
        if not program or len(program) % _INSN.size or len(program) // _INSN.size > 4096:
            raise ValueError('not a classic BPF program')
        buf = ctypes.create_string_buffer(program, len(program))
        fprog = _SockFprog(len(program) // _INSN.size, ctypes.addressof(buf))
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
