"""C: gcc -O2 (GNU C11) in the sandbox into the node's compile cache, then run."""

from __future__ import annotations

from judge.executors.compiled import CompiledExecutor
from judge.executors.toolchain import can_link_static


class CExecutor(CompiledExecutor):
    """gcc -O2 with C11 (GNU dialect) and libm, statically linked where the toolchain allows."""

    language = 'c'
    control_source = 'int main(void) { return 0; }\n'
    source_name = 'source.c'
    version_argv = ('gcc', '--version')
    compile_argv = ('gcc', '-std=gnu11', '-O2', '-pipe', '{src}', '-o', '{out}', '-lm')
    run_argv = ('./{out}',)
    source_suffixes = ('.c',)

    def extra_compile_args(self, source: str) -> list[str]:
        return ['-static'] if can_link_static(self.tool('gcc')) else []

    def compile_key(self, source: str) -> tuple[str, ...]:
        return (*super().compile_key(source), ' '.join(self.extra_compile_args(source)))
