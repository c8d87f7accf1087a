"""Seeded Python runs: the start-up hook that makes a program's randomness replayable.

A submission with a ``seed`` runs in a fresh interpreter (`judge.executors.python`), whatever the
node's Python mode: ``str`` hashing can only be seeded when an interpreter starts
(``PYTHONHASHSEED``), and a warm parent's is fixed.  This file's *source* is written into the
run's work dir as ``sitecustomize.py`` and the interpreter started with ``PYTHONPATH=.`` and
``PYTHONHASHSEED=<seed>``; ``site`` imports it before the program, and it

* removes itself (the file, its ``sys.path`` entry, ``PYTHONPATH``, its ``sys.modules`` entry) and
  runs the interpreter's own ``sitecustomize``, if there is one;
* seeds `random` with the seed;
* reseeds, right after their module is imported, every generator a module creates at import
  (``random.Random`` instances at module level or in a module's classes, such as sympy's ``rng``
  and ``Dummy._prng``; numpy ``RandomState`` instances, the global one included), each from the
  seed and its module's and attribute's names, so that the order of imports does not matter;
* gives numpy's ``SeedSequence`` a seeded source of entropy, so that ``default_rng()`` and
  ``RandomState()`` without a seed give the same streams on every run with the same seed.

What stays random: ``os.urandom``, `secrets`, `uuid`, and ``random.Random()`` instances the
program creates itself without a seed.  Stdlib only; nothing of the judge is importable there.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # `typing` is not imported in the seeded program
    from typing import Any


class _Loader:
    """Wraps a module's loader to reseed what the module created at import, then steps aside."""

    def __init__(self, loader: Any, seeder: _Seeder) -> None:
        self._loader = loader
        self._seeder = seeder

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        try:
            self._loader.exec_module(module)
        finally:
            module.__loader__ = self._loader  # the program sees the real loader
            if getattr(module, '__spec__', None) is not None:
                module.__spec__.loader = self._loader
        self._seeder.reseed(module)


class _Seeder:
    """A meta path finder that finds nothing itself: it wraps the loader the other finders return."""

    def __init__(self, seed: int) -> None:
        self.seed = seed

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        for finder in sys.meta_path:
            find = getattr(finder, 'find_spec', None)
            if finder is self or find is None:
                continue
            spec = find(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, 'exec_module'):
                    spec.loader = _Loader(spec.loader, self)
                return spec
        return None

    def reseed(self, module: Any) -> None:
        import random

        name = getattr(module, '__name__', '')
        if name == 'numpy.random.bit_generator':
            module.randbits = random.Random(f'{self.seed}:numpy-entropy').getrandbits
        mtrand = sys.modules.get('numpy.random.mtrand')
        state_type = getattr(mtrand, 'RandomState', None)
        found: list[tuple[str, Any]] = []
        for attr, value in list(vars(module).items()):
            found.append((attr, value))
            if isinstance(value, type) and getattr(value, '__module__', None) == name:
                found.extend((f'{attr}.{k}', v) for k, v in list(vars(value).items()))
        for attr, value in found:
            derived = f'{self.seed}:{name}:{attr}'
            if isinstance(value, random.Random) and not isinstance(value, random.SystemRandom):
                if value is not getattr(random, '_inst', None):
                    value.seed(derived)
            elif state_type is not None and isinstance(value, state_type):
                value.seed(random.Random(derived).getrandbits(32))
        if name == 'sympy.core.symbol':  # drawn from `Dummy._prng` while the module ran
            dummy = module.Dummy
            dummy._base_dummy_index = dummy._prng.randint(10**6, 9 * 10**6)


def install() -> None:
    """What ``site`` runs when it imports this file as ``sitecustomize`` (see the module doc)."""
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        os.unlink(__file__)
    except OSError:
        pass
    if here in sys.path:
        sys.path.remove(here)
    os.environ.pop('PYTHONPATH', None)
    sys.modules.pop('sitecustomize', None)
    sys.path_importer_cache.pop(here, None)
    try:
        import sitecustomize  # noqa: F401  # the interpreter's own, if any
    except ImportError:
        pass
    seed = os.environ.get('PYTHONHASHSEED', '')
    if not seed.isdigit():
        return
    import random

    random.seed(int(seed))
    sys.meta_path.insert(0, _Seeder(int(seed)))


if __name__ == 'sitecustomize':
    install()
