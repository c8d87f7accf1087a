"""A tiny classic-BPF assembler for seccomp filters: opcodes, the layout of ``struct seccomp_data``, and
symbolic forward jumps (`judge.sandbox.kernel.seccomp` builds its program with it)."""

from __future__ import annotations

import struct

SECCOMP_RET_KILL_PROCESS = 0x80000000
SECCOMP_RET_ERRNO = 0x00050000
"""Return the low 16 bits as the call's errno, without running it (0: the call returns 0)."""
SECCOMP_RET_ALLOW = 0x7FFF0000

# classic BPF opcodes (the subset the filter uses)
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6]
OFFSET_NR = 0
OFFSET_ARCH = 4
OFFSET_ARGS = 16

INSN = struct.Struct('<HBBI')
"""struct sock_filter {u16 code; u8 jt; u8 jf; u32 k}"""


def arg_offset(index: int, high: bool = False) -> int:
    """Where the low (or ``high``) 32 bits of ``args[index]`` sit in ``struct seccomp_data`` (little-endian)."""
    if not 0 <= index <= 5:
        raise ValueError(f'no system-call argument {index}')
    return OFFSET_ARGS + 8 * index + (4 if high else 0)


class Assembler:
    """Classic-BPF instructions with symbolic jump targets (classic BPF jumps only forward)."""

    def __init__(self) -> None:
        self._code: list[tuple[int, int | str, int | str, int]] = []
        self._labels: dict[str, int] = {}

    def label(self, name: str) -> None:
        """Name the next instruction."""
        self._labels[name] = len(self._code)

    def load(self, offset: int) -> None:
        """Load the 32-bit word at ``offset`` of ``struct seccomp_data`` into the accumulator."""
        self._code.append((BPF_LD_W_ABS, 0, 0, offset))

    def jump(self, op: int, k: int, jt: int | str, jf: int | str) -> None:
        """Compare the accumulator with ``k``; go to ``jt`` or ``jf`` (a label, or a number of instructions)."""
        self._code.append((op, jt, jf, k))

    def ret(self, action: int) -> None:
        """Return ``action`` (a ``SECCOMP_RET_*`` value)."""
        self._code.append((BPF_RET_K, 0, 0, action))

    def assemble(self) -> bytes:
        """The program as packed ``struct sock_filter`` entries; ValueError for a jump out of range."""
        out = bytearray()
        for pc, (code, jt, jf, k) in enumerate(self._code):
            out += INSN.pack(code, self._offset(pc, jt), self._offset(pc, jf), k)
        return bytes(out)

    def _offset(self, pc: int, target: int | str) -> int:
        if isinstance(target, int):
            return target
        offset = self._labels[target] - pc - 1
        if not 0 <= offset <= 255:
            raise ValueError(f'BPF jump to {target!r} out of range ({offset})')
        return offset
