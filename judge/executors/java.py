"""Java: javac into a jar in the node's compile cache, then ``java -cp main.jar <Main>``.

The main class is the source's public class (its file must be named after it), else the class
that declares ``main``, else ``Main``.  Both JVMs (javac's and the program's) run with the serial
collector, the C1 compiler only, class-data sharing and one visible CPU, which keeps start-up
fast and the thread count (the pids limit counts threads) near 15.  The heap is ``-Xmx`` of 3/4
of the memory limit; the rest is for metaspace, code and stacks.  The JVM reserves far more
address space than it uses, so ``RLIMIT_AS`` (the `uid` tier's memory bound) is off: there
``-Xmx`` bounds the heap.
"""

from __future__ import annotations

import re
from typing import Any

from judge.executors.compiled import CompiledExecutor

JVM_FLAGS = ('-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1', '-Xshare:auto', '-XX:ActiveProcessorCount=1')
_JAVAC_J = ' '.join(f'-J{f}' for f in (*JVM_FLAGS, '-Xmx512m'))
_PUBLIC_CLASS = re.compile(r'\bpublic\s+(?:(?:final|abstract|strictfp)\s+)*class\s+([A-Za-z_$][\w$]*)')
_CLASS = re.compile(r'\bclass\s+([A-Za-z_$][\w$]*)')
_MAIN = re.compile(r'\bstatic\s+(?:final\s+)?void\s+main\s*\(')


def main_class(source: str) -> str:
    """The class to run: the public one, else the last class declared before ``main``, else Main."""
    public = _PUBLIC_CLASS.search(source)
    if public:
        return public.group(1)
    main = _MAIN.search(source)
    if main:
        before = _CLASS.findall(source[: main.start()])
        if before:
            return str(before[-1])
    return 'Main'


class JavaExecutor(CompiledExecutor):
    """OpenJDK javac + java, no preview features."""

    language = 'java'
    control_source = 'public class Main {\n    public static void main(String[] args) {}\n}\n'
    source_name = '{main}.java'
    version_argv = ('javac', '-version')
    artifact_name = 'main.jar'
    compile_argv = (
        'sh',
        '-c',
        f'javac {_JAVAC_J} -encoding UTF-8 -nowarn -d classes "$0" && jar {_JAVAC_J} cf main.jar -C classes .',
        '{src}',
    )
    run_argv = ('java', '-Xmx{heap_mb}m', '-Xss64m', *JVM_FLAGS, '-cp', '{out}', '{main}')
    rlimit_as = False
    oom_markers = ('java.lang.OutOfMemoryError',)

    def fields(self, source: str, memory_mb: int) -> dict[str, Any]:
        values = super().fields(source, memory_mb)
        values['main'] = main_class(source)
        return values

    def source_file(self, source: str) -> str:
        return self.source_name.format(main=main_class(source))
