"""Build the submission runtime once: ``python -m judge.runtime.build`` (a fast no-op when up to date).

Two layers under the runtime root, both named by hashes of their inputs (`judge.runtime`):

* ``env-<env key>``: a virtualenv of the base interpreter (no pip in it) with the pins installed by
  this interpreter's pip (``--no-deps --only-binary``: the pins are the whole environment);
* ``<build key>``: a hard-linked copy of that virtualenv, plus the operator's extra requirements
  (installed with the pins as constraints: pip replaces files by unlinking them, so the shared
  links are never written through), the operator's modules (copied, byte compiled, on ``sys.path``
  through a ``.pth`` file) and the manifest.  Changing what the operator adds therefore costs a copy
  of links and that addition, never a reinstall of the pins.

Builds hold an exclusive lock on the root, work in a temporary directory and rename it into place
when complete, so concurrent builders and readers never see half a runtime.  Everything is made
world-readable: the sandbox's uids import from it.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from judge.errors import JudgeError
from judge.runtime import (
    COMPLETE,
    MANIFEST,
    MODULES_DIR,
    PINS,
    RuntimeInfo,
    RuntimeMissing,
    RuntimeSpec,
    build_key,
    compute_digest,
    env_key,
    inspect_python,
    module_sources,
    python_of,
    read_manifest,
    requirement_lines,
    tree_hash,
)

logger = logging.getLogger('judge.runtime.build')

PTH_NAME = 'judge-runtime-modules.pth'
_PIP_TIMEOUT_S = 1800


class BuildError(JudgeError):
    """The runtime could not be built (pip failed, the root is unusable...)."""


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    fd = os.open(root / '.lock', os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _check_searchable(root: Path) -> None:
    """Every directory above the root must let the slot uids through (o+x); the root itself too."""
    path = root.resolve()
    for part in (path, *path.parents):
        if not os.stat(part).st_mode & stat.S_IXOTH:
            raise BuildError(
                f'runtime root {root}: {part} is not searchable by other users, so the sandbox cannot '
                'import from it; choose another JUDGE_RUNTIME_ROOT (the default is /opt/judge-runtime)'
            )


def _world_readable(path: Path) -> None:
    for dirpath, dirnames, filenames in os.walk(path):
        for name in (*dirnames, *filenames):
            full = os.path.join(dirpath, name)
            st = os.lstat(full)
            if stat.S_ISLNK(st.st_mode):
                continue
            want = st.st_mode | stat.S_IROTH | stat.S_IRGRP | (stat.S_IXOTH | stat.S_IXGRP if st.st_mode & 0o111 else 0)
            if want != st.st_mode:
                os.chmod(full, stat.S_IMODE(want))
    os.chmod(path, 0o755)


def _run(argv: list[str], what: str) -> None:
    logger.info('%s: %s', what, ' '.join(argv))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=_PIP_TIMEOUT_S, check=False)
    if out.returncode != 0:
        raise BuildError(f'{what} failed ({out.returncode}):\n{out.stdout[-3000:]}\n{out.stderr[-3000:]}')


def _pip(python: str, *args: str) -> list[str]:
    # This interpreter's pip installs into the runtime (`--python`): the runtime itself has no pip.
    return [sys.executable, '-m', 'pip', '--python', python, '--disable-pip-version-check', 'install', '-q', *args]


def _build_env(spec: RuntimeSpec, target: Path) -> None:
    tmp = target.with_name(f'.tmp-{target.name}-{os.getpid()}')
    shutil.rmtree(tmp, ignore_errors=True)
    _run([os.path.realpath(spec.base_python), '-m', 'venv', '--without-pip', str(tmp)], 'create the virtualenv')
    python = python_of(tmp)
    _run(_pip(python, '--no-deps', '--only-binary=:all:', '-r', str(PINS)), 'install the pins')
    _world_readable(tmp)
    Path(tmp, COMPLETE).touch(mode=0o644)
    tmp.rename(target)


def _install_extra(python: str, requirements: str) -> None:
    """The operator's requirements, with the pins as constraints (so no pinned version moves)."""
    pins = requirement_lines(PINS.read_text(encoding='utf-8'))
    with tempfile.NamedTemporaryFile('w', suffix='.txt', encoding='utf-8') as constraints:
        # A constraints file may not name extras: `math-verify[antlr4-13-2]==0.9.0` -> `math-verify==0.9.0`.
        constraints.write(''.join(re.sub(r'\[[^\]]*\]', '', line) + '\n' for line in pins))
        constraints.flush()
        _run(_pip(python, '-r', requirements, '-c', constraints.name), 'install the extra requirements')


def _link_or_copy(src: str, dst: str) -> None:
    try:
        os.link(src, dst)
    except OSError:  # a file system without hard links: a real copy
        shutil.copy2(src, dst)


def _remove_leftovers(root: Path) -> None:
    """Temporary directories of builds that were killed (we hold the lock: no build is running)."""
    for path in root.glob('.tmp-*'):
        shutil.rmtree(path, ignore_errors=True)


def _site_packages(python: str) -> str:
    out = subprocess.run(
        [python, '-I', '-c', 'import sysconfig; print(sysconfig.get_path("purelib"))'],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


def _assemble(spec: RuntimeSpec, env_dir: Path, target: Path) -> None:
    """A linked copy of the virtualenv, the operator's modules, the manifest; renamed into place."""
    tmp = target.with_name(f'.tmp-{target.name}-{os.getpid()}')
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(env_dir, tmp, symlinks=True, copy_function=_link_or_copy)
    os.unlink(tmp / COMPLETE)
    python = python_of(tmp)
    if spec.requirements:
        _install_extra(python, spec.requirements)
    files: list[str] = []
    sources = module_sources(spec.modules)
    if sources:
        modules = tmp / MODULES_DIR
        for src, rel in sources:
            (modules / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(Path(src, rel), modules / rel)
            files.append(rel)
        _run([python, '-I', '-m', 'compileall', '-q', str(modules)], 'byte-compile the modules')
        site = Path(_site_packages(python))
        (site / PTH_NAME).write_text(f'{target / MODULES_DIR}\n', encoding='utf-8')
    inspected = inspect_python(python)
    modules_hash = tree_hash(spec.modules)
    manifest = {
        'digest': compute_digest(inspected, modules_hash),
        'python_version': inspected['version'],
        'python_build': inspected['build'],
        'machine': inspected['machine'],
        'packages': inspected['packages'],
        'modules': files,
        'modules_hash': modules_hash,
        'base_python': os.path.realpath(spec.base_python),
        'requirements': spec.requirements,
        'built_at': time.time(),
    }
    Path(tmp, MANIFEST).write_text(json.dumps(manifest, indent=1) + '\n', encoding='utf-8')
    _world_readable(tmp)
    Path(tmp, COMPLETE).touch(mode=0o644)
    tmp.rename(target)


def build(spec: RuntimeSpec) -> RuntimeInfo:
    """The runtime of ``spec``, built first if it is not there yet."""
    root = Path(spec.root)
    try:
        target = root / build_key(spec)[:16]
        return read_manifest(target)
    except RuntimeMissing:
        pass
    old_umask = os.umask(0o022)
    try:
        root.mkdir(mode=0o755, parents=True, exist_ok=True)
        if os.geteuid() == 0:  # only then do submissions run as other uids
            _check_searchable(root)
        with _locked(root):
            try:
                return read_manifest(target)  # built by another process while we waited
            except RuntimeMissing:
                pass
            _remove_leftovers(root)
            env_dir = root / f'env-{env_key(spec)[:16]}'
            try:
                if not (env_dir / COMPLETE).exists():
                    shutil.rmtree(env_dir, ignore_errors=True)
                    started = time.monotonic()
                    _build_env(spec, env_dir)
                    logger.info('built %s in %.1f s', env_dir, time.monotonic() - started)
                _assemble(spec, env_dir, target)
            finally:
                _remove_leftovers(root)  # what a failed step left
            return read_manifest(target)
    finally:
        os.umask(old_umask)


def main(argv: list[str] | None = None) -> int:
    """Entry point: build (or find) the runtime the node's settings describe, print where it is."""
    from judge.settings import Settings

    parser = argparse.ArgumentParser(prog='python -m judge.runtime.build', description=__doc__.split('\n')[0])
    parser.add_argument('--json', action='store_true', help='print the manifest summary as JSON')
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format='%(name)s: %(message)s')
    spec = RuntimeSpec.from_settings(Settings())
    started = time.monotonic()
    try:
        info = build(spec)
    except (BuildError, RuntimeMissing, OSError) as e:
        logger.error('%s', e)
        return 1
    if args.json:
        print(json.dumps(info.to_dict()))  # noqa: T201
    else:
        logger.info(
            'runtime %s at %s (Python %s, %d packages, %d operator module files) in %.2f s',
            info.digest,
            info.path,
            info.python_version,
            len(info.packages),
            len(info.modules),
            time.monotonic() - started,
        )
    return 0


if __name__ == '__main__':
    sys.exit(main())
