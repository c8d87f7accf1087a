"""`judge.sandbox.kernel.procmaps`: a process's shared mappings found from outside, by the kernel's query
and by the text of ``/proc/<pid>/maps``, agree; private mappings are not listed."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from judge.sandbox.kernel import procmaps

CHILD = """
import mmap, sys
shared_rw = mmap.mmap(-1, 3 * 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ | mmap.PROT_WRITE)
shared_ro = mmap.mmap(-1, 4096, flags=mmap.MAP_SHARED, prot=mmap.PROT_READ)
private = mmap.mmap(-1, 5 * 4096, flags=mmap.MAP_PRIVATE, prot=mmap.PROT_READ | mmap.PROT_WRITE)
print(len(shared_rw), len(shared_ro), len(private), flush=True)
sys.stdin.read()
"""


def _text(pid: int) -> list[procmaps.Mapping]:
    fd = os.open(f'/proc/{pid}/maps', os.O_RDONLY)
    try:
        return procmaps._from_text(fd)
    finally:
        os.close(fd)


def test_shared_mappings_are_listed_with_their_protection() -> None:
    child = subprocess.Popen([sys.executable, '-c', CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().split() == [b'12288', b'4096', b'20480']
        found = procmaps.shared_mappings(child.pid)
        assert found == _text(child.pid), 'the query and the text agree'
        sizes = sorted((end - start, prot) for start, end, prot in found)
        assert (3 * 4096, 0b011) in sizes and (4096, 0b001) in sizes, sizes
        assert all(size != 5 * 4096 for size, _ in sizes), 'a private mapping is not shared'
        assert found == sorted(found)
    finally:
        child.kill()
        child.wait()


def test_a_process_without_shared_mappings_has_none() -> None:
    # Read once the child is up (while the interpreter starts, its mappings still change), in the C
    # locale: glibc maps its gconv cache shared as soon as a locale such as C.UTF-8 needs it.
    started = 'import sys; print("up", flush=True); sys.stdin.read()'
    child = subprocess.Popen(
        [sys.executable, '-I', '-S', '-c', started],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={'LC_ALL': 'C'},
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b'up\n'
        assert procmaps.shared_mappings(child.pid) == _text(child.pid) == []
    finally:
        child.kill()
        child.wait()


def test_a_process_that_is_gone_is_an_error() -> None:
    child = subprocess.Popen([sys.executable, '-I', '-S', '-c', 'pass'])
    child.wait()
    with pytest.raises(OSError):
        procmaps.shared_mappings(child.pid)
