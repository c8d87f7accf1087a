"""Rust: ``rustc -O`` (edition 2021) in the sandbox into the node's compile cache, then run.

rustc writes temporaries to ``$TMPDIR`` (the work dir) and links with the system ``cc``; one codegen
unit keeps its threads (counted by the pids limit) few and the code fast.
"""

from __future__ import annotations

from judge.executors.compiled import CompiledExecutor


class RustExecutor(CompiledExecutor):
    """rustc -O --edition 2021, one codegen unit."""

    language = 'rust'
    control_source = 'fn main() {}\n'
    source_name = 'main.rs'
    version_argv = ('rustc', '--version')
    compile_argv = ('rustc', '-O', '--edition', '2021', '-C', 'codegen-units=1', '-o', '{out}', '{src}')
    run_argv = ('./{out}',)
    oom_markers = ('memory allocation of',)
