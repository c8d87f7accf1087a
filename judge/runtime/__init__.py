"""The managed submission runtime: the Python environment user code runs in.

It is built once per node (``python -m judge.runtime.build``; ``make run``, ``make test``, the deploy
scripts and the container recipe run it) from exact pins kept in the repository (`PINS`), apart from
the service's own virtualenv, in a directory the sandbox's uids can read in every jail tier (by
default under ``/opt/judge-runtime``).  Its directory is named by a hash of everything the build
depends on (the pins, the operator's extra requirements and modules, the base interpreter), so an
up-to-date runtime is found without building anything, and changing any of them builds a new one
beside the old.

Operators add packages (`RuntimeSpec.requirements`, a pip requirements file installed with the pins
as constraints) and a directory of their own modules (`RuntimeSpec.modules`, e.g. a reward scorer),
which is copied into the runtime and put on its ``sys.path`` by a ``.pth`` file: submissions import
it, read-only, in warm and fresh mode alike.

Each runtime has a manifest (`MANIFEST`): its interpreter's version, every installed package's
version, the hash of the operator's modules, and a short `RuntimeInfo.digest` of all of them, which
every result, ``/status`` and the ``judge_runtime_info`` metric name.  Knows nothing of Celery.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from judge.errors import JudgeError

logger = logging.getLogger('judge.runtime')

PINS = Path(__file__).with_name('requirements.txt')
"""The exact pins of the runtime (transitive dependencies included)."""
MANIFEST = 'judge-runtime.json'
COMPLETE = '.complete'
MODULES_DIR = 'modules'
BUILDER_VERSION = 2
"""Bumped when the build's recipe changes, so every node rebuilds."""
DIGEST_CHARS = 12

_INSPECT = (
    'import json, platform, sys\n'
    'from importlib import metadata\n'
    'pk = {}\n'
    'for d in metadata.distributions():\n'
    "    name = d.metadata['Name']\n"
    '    if name:\n'
    "        pk[name.lower().replace('_', '-')] = d.version\n"
    "print(json.dumps({'version': platform.python_version(), 'build': sys.version, "
    "'machine': platform.machine(), 'packages': dict(sorted(pk.items()))}))\n"
)


class RuntimeMissing(JudgeError):
    """The runtime asked for has not been built on this node (or its inputs are unreadable)."""


@dataclass(frozen=True)
class RuntimeSpec:
    """What a runtime is built from."""

    root: str
    """Where runtimes live; every directory above it must be searchable by the slot uids."""
    base_python: str
    """The interpreter the runtime's virtualenv is made from (readable by the slot uids)."""
    requirements: str = ''
    """The operator's extra pip requirements file ('' for none)."""
    modules: str = ''
    """The operator's directories of modules importable by submissions (``os.pathsep``-separated)."""

    @classmethod
    def from_settings(cls, settings: Any) -> RuntimeSpec:
        """The spec of `judge.settings.Settings` (its ``runtime_*`` fields)."""
        return cls(
            root=settings.runtime_root,
            base_python=settings.runtime_base_python,
            requirements=settings.runtime_requirements,
            modules=settings.runtime_modules,
        )


@dataclass
class RuntimeInfo:
    """What a node's submission runtime is: reported in results (`digest`), ``/status`` and metrics."""

    digest: str
    python: str
    python_version: str
    packages: dict[str, str] = field(default_factory=dict)
    managed: bool = True
    path: str = ''
    modules: list[str] = field(default_factory=list)
    """The operator's modules (file names, relative to the modules directory)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (node info in Redis)."""
        return asdict(self)


def requirement_lines(text: str) -> list[str]:
    """The meaningful lines of a requirements file (comments and blank lines dropped)."""
    lines = (
        line.split('#', 1)[0].strip() if not line.lstrip().startswith('-') else line.strip()
        for line in text.splitlines()
    )
    return [line for line in lines if line]


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding='utf-8')
    except OSError as e:
        raise RuntimeMissing(f'{what} {path!r} is unreadable: {e}') from e


def module_files(path: str) -> list[str]:
    """Files of an operator modules directory, relative and sorted (caches and dot files left out)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith('.') and d != '__pycache__')
        for name in filenames:
            if not name.startswith('.') and not name.endswith('.pyc'):
                out.append(os.path.relpath(os.path.join(dirpath, name), path))
    return sorted(out)


def module_sources(modules: str) -> list[tuple[str, str]]:
    """(directory, relative file) of every operator module file; ``modules`` lists directories
    separated by ``os.pathsep``, and a file name may come from one of them only."""
    seen: dict[str, str] = {}
    for path in (p for p in modules.split(os.pathsep) if p):
        if not os.path.isdir(path):
            raise RuntimeMissing(f'runtime modules directory {path!r} does not exist')
        for rel in module_files(path):
            if rel in seen:
                raise RuntimeMissing(f'runtime module file {rel!r} is in both {seen[rel]!r} and {path!r}')
            seen[rel] = path
    return sorted(((d, rel) for rel, d in seen.items()), key=lambda item: item[1])


def tree_hash(modules: str) -> str:
    """sha256 over the names and contents of the `module_sources` ('' for none)."""
    sources = module_sources(modules)
    if not sources:
        return ''
    digest = hashlib.sha256()
    for path, rel in sources:
        digest.update(rel.encode() + b'\0' + hashlib.sha256(Path(path, rel).read_bytes()).digest())
    return digest.hexdigest()


def env_key(spec: RuntimeSpec) -> str:
    """Hash of what the virtualenv and its pinned packages depend on (not the operator's additions)."""
    base = os.path.realpath(spec.base_python)
    try:
        st = os.stat(base)
    except OSError as e:
        raise RuntimeMissing(f'base interpreter {spec.base_python!r}: {e}') from e
    parts = {
        'builder': BUILDER_VERSION,
        'pins': requirement_lines(_read(str(PINS), 'pins file')),
        'base': [base, st.st_size, st.st_mtime_ns],
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def build_key(spec: RuntimeSpec) -> str:
    """Hash of every input of the runtime: `env_key`, the operator's requirements and modules."""
    extra = requirement_lines(_read(spec.requirements, 'requirements file')) if spec.requirements else []
    parts = [env_key(spec), json.dumps(extra), tree_hash(spec.modules)]
    return hashlib.sha256('\0'.join(parts).encode()).hexdigest()


def runtime_dir(spec: RuntimeSpec) -> Path:
    """Where the runtime of ``spec`` lives (built or not)."""
    return Path(spec.root) / build_key(spec)[:16]


def python_of(path: Path | str) -> str:
    """The interpreter of the runtime at ``path``."""
    return os.path.join(path, 'bin', 'python3')


def inspect_python(python: str, timeout_s: float = 60.0) -> dict[str, Any]:
    """Version, build, machine and installed packages of ``python`` (run once, isolated)."""
    out = subprocess.run([python, '-I', '-c', _INSPECT], capture_output=True, timeout=timeout_s, check=False)
    if out.returncode != 0:
        raise RuntimeMissing(f'{python} cannot run: {out.stderr.decode(errors="replace")[-500:]}')
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def compute_digest(inspected: dict[str, Any], modules_hash: str) -> str:
    """The short digest naming a runtime: interpreter build, machine, package versions, operator modules."""
    parts = {k: inspected.get(k) for k in ('build', 'machine', 'packages')} | {'modules': modules_hash}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:DIGEST_CHARS]


def read_manifest(path: Path | str) -> RuntimeInfo:
    """The `RuntimeInfo` of the built runtime at ``path``; `RuntimeMissing` if it is incomplete."""
    if not os.path.exists(os.path.join(path, COMPLETE)):
        raise RuntimeMissing(f'no complete runtime at {path}')
    data = json.loads(Path(path, MANIFEST).read_text(encoding='utf-8'))
    return RuntimeInfo(
        digest=data['digest'],
        python=python_of(path),
        python_version=data['python_version'],
        packages=dict(data.get('packages') or {}),
        managed=True,
        path=str(path),
        modules=list(data.get('modules') or []),
    )


def locate(spec: RuntimeSpec) -> RuntimeInfo:
    """The built runtime of ``spec``; `RuntimeMissing` (saying how to build it) when there is none."""
    path = runtime_dir(spec)
    try:
        return read_manifest(path)
    except (RuntimeMissing, OSError, ValueError, KeyError) as e:
        raise RuntimeMissing(
            f'the submission runtime is not built at {path} ({e}); build it with `make runtime` '
            'or `python -m judge.runtime.build` (same JUDGE_RUNTIME_* settings as the worker)'
        ) from e


def submission_python(settings: Any) -> str:
    """The interpreter of Python submissions: ``PYTHON_EXECUTOR_PATH`` when set, else the managed
    runtime's, else the system's ``python3`` (`judge.settings.default_python`) when it is not built."""
    if settings.python_executor_path:
        return str(settings.python_executor_path)
    try:
        return locate(RuntimeSpec.from_settings(settings)).python
    except RuntimeMissing:
        from judge.settings import default_python

        return default_python()


def describe(python: str) -> RuntimeInfo:
    """What runtime ``python`` belongs to: its manifest when managed, else inspected (one spawn)."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(python)))
    try:
        return read_manifest(prefix)
    except (RuntimeMissing, OSError, ValueError, KeyError):
        pass
    inspected = inspect_python(python)
    return RuntimeInfo(
        digest=compute_digest(inspected, ''),
        python=python,
        python_version=str(inspected.get('version')),
        packages=dict(inspected.get('packages') or {}),
        managed=False,
    )


def describe_runtime(python: str) -> dict[str, Any]:
    """`describe` as a dict for node info; warns when ``python`` is not a managed runtime."""
    try:
        info = describe(python)
    except (RuntimeMissing, OSError, ValueError, subprocess.TimeoutExpired) as e:
        logger.error('submission runtime %s: %s', python, e)
        return {'python': python, 'digest': '', 'managed': False, 'error': str(e)}
    if not info.managed:
        logger.warning(
            'submissions run on %s, not on a managed runtime (%s): build one with `make runtime` '
            'or leave PYTHON_EXECUTOR_PATH unset',
            python,
            info.digest,
        )
    return info.to_dict()
