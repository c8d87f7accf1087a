"""The lock (constraints.txt) pins every installed package, satisfies pyproject.toml, and is used."""

from __future__ import annotations

import re
import tomllib
from importlib import metadata

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from scripts.lower_bounds import lower_bounds
from tests.support.paths import ROOT


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / 'constraints.txt').read_text().splitlines():
        if line.strip() and not line.startswith('#'):
            name, _, version = line.partition('==')
            assert version, f'not an exact pin: {line!r}'
            pins[canonicalize_name(name)] = version.strip()
    return pins


def _requirements() -> list[Requirement]:
    project = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']
    return [Requirement(r) for r in [*project['dependencies'], *project['optional-dependencies']['dev']]]


def test_every_dependency_is_pinned_within_its_declared_range() -> None:
    pins = _pins()
    for req in _requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f'{req.name} is not in constraints.txt'
        assert req.specifier.contains(pins[name], prereleases=True), f'{req.name}=={pins[name]} is outside {req}'


def test_the_installed_packages_are_the_locked_versions() -> None:
    """`make install` installs with the lock: this virtualenv holds exactly its versions."""
    pins = _pins()
    installed = {canonicalize_name(d.metadata['Name']): d.version for d in metadata.distributions()}
    installed.pop(canonicalize_name('celery-code-judge'), None)
    assert {n: v for n, v in installed.items() if n in pins} == {n: pins[n] for n in installed if n in pins}
    unpinned = set(installed) - set(pins)
    assert not unpinned, f'installed but not locked: {sorted(unpinned)} (run make lock)'


def test_every_install_line_uses_the_lock() -> None:
    makefile = (ROOT / 'Makefile').read_text()
    installs = [line for line in makefile.splitlines() if re.search(r'\$\(PIP\) install', line)]
    assert installs and all('-c $(CONSTRAINTS)' in line for line in installs), installs
    dockerfile = (ROOT / 'deploy' / 'Dockerfile').read_text()
    assert 'COPY pyproject.toml constraints.txt' in dockerfile and 'pip install -c constraints.txt' in dockerfile
    for doc in ('deploy/README.md', 'deploy/systemd/judge-gateway.service'):
        assert 'constraints.txt' in (ROOT / doc).read_text(), doc


def test_lower_bounds_are_exact_pins_of_every_runtime_dependency() -> None:
    bounds = lower_bounds()
    runtime = tomllib.loads((ROOT / 'pyproject.toml').read_text())['project']['dependencies']
    assert len(bounds) == len(runtime)
    assert 'redis==6.4.0' in bounds and 'celery==5.7.0' in bounds
