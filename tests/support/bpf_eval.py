"""Classic BPF evaluated in Python: what a seccomp program (`judge.sandbox.kernel.seccomp.build_filter`)
decides for one system call, without installing it."""

from __future__ import annotations

import struct

from judge.sandbox.kernel import bpf


def run_bpf(program: bytes, nr: int, arch: int, *args: int) -> int:
    """The action ``program`` returns for syscall ``nr`` of ``arch`` with ``args`` (the rest 0; the subset of
    classic BPF `judge.sandbox.kernel.bpf.Assembler` emits)."""
    padded = [a & 0xFFFFFFFFFFFFFFFF for a in args] + [0] * (6 - len(args))
    data = struct.pack('<IIQ6Q', nr & 0xFFFFFFFF, arch, 0, *padded)
    insns = list(struct.iter_unpack('<HBBI', program))
    pc, acc = 0, 0
    for _ in range(len(insns)):
        code, jt, jf, k = insns[pc]
        if code == bpf.BPF_RET_K:
            return int(k)
        if code == bpf.BPF_LD_W_ABS:
            acc = struct.unpack_from('<I', data, k)[0]
            pc += 1
            continue
        taken = {bpf.BPF_JEQ_K: acc == k, bpf.BPF_JGE_K: acc >= k, bpf.BPF_JSET_K: bool(acc & k)}[code]
        pc += 1 + (jt if taken else jf)
    raise AssertionError('program did not return')
