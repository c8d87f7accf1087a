"""What a warm parent does once, before it forks any child: the scientific warm-up, and finding the
random states its children must reseed.

Runs in the zygote only (`judge.sandbox.zygote.warm.prepare_interpreter` imports it there, uses it and lets it
go: no child can reach this module).  Stdlib only; the scientific packages are reached through
``sys.modules`` once the zygote has imported them.

**Warm-up** (the *scientific* parent, `judge.sandbox.server.warm.parents`): sympy imports many submodules only
on first use and builds tables the first time an algorithm runs, so a child forked from a parent that
merely imported sympy still pays for all of that in each program.  `warm_up` runs one small program
of each kind a math tool call is made of (solve, factorint, summation, integrate, simplify, matrices,
printing; numpy linear algebra and printing), then puts back what a fresh ``import`` would show:
sympy's cache is cleared, ``Dummy``'s counter restored, the warning filters restored and every
warning registry the warm-up filled emptied.  What stays is what a program cannot tell from a fresh
interpreter's: imported submodules and their module-level tables.

**Driver warm-up** (the lean and scientific parents, `driver_warm_up`): a notebook-cell driver of the
kind clients wrap tool calls in, run a few times, so that the library code a wrapped program runs is
already specialised in the parent.

**Random states** (`find_random_states`): generators seeded when their module was imported
(``random.Random`` instances such as sympy's ``rng``, ``_assumptions_rng`` and ``Dummy._prng``,
numpy's global ``RandomState``) would otherwise be the same in every child.  The parent lists them once; each
child reseeds exactly those from fresh entropy (`judge.sandbox.zygote.warm`), without walking its modules
(which would write to every page it touched).
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # every warm parent imports this module (see `judge.sandbox.fdio`)
    from typing import Any

WARM_UP = (
    # sympy: what rStar-style tool calls do most (the bench's kinds first)
    "import sympy as sp\nx, y = sp.symbols('x y')\nk = sp.symbols('k', integer=True)",
    'str(sorted(sp.solve(x**2 - 5*x + 6, x)))',
    'str(sp.solve([x + y - 3, x - y - 1], [x, y]))',
    'str(sorted(sp.factorint(2**4 * 3**2 * 5 * 7 * 11 * 13).items()))',
    'str(sp.summation(k**2 + 3*k, (k, 1, 20)))',
    'str(sp.summation(1/k**2, (k, 1, sp.oo)))',
    'str(sp.integrate(x**3, (x, 0, 2)))',
    'str(sp.integrate(sp.sin(x) * x, x))',
    'str(sp.simplify(sp.sin(x)**2 + sp.cos(x)**2 + (x**2 - 1)/(x - 1)))',
    'str(sp.expand((x + y)**3)); str(sp.factor(x**3 - 1)); str(sp.diff(sp.exp(x) * x**2, x))',
    'str(sp.limit(sp.sin(x)/x, x, 0)); str(sp.series(sp.exp(x), x, 0, 4))',
    'str(sp.Matrix([[1, 2], [3, 4]]).det()); str(sp.Matrix([[2, 1], [1, 2]]).inv())',
    'str(sp.isprime(97)); str(sp.nextprime(100)); str(sp.binomial(10, 3)); str(sp.gcd(12, 18))',
    'str(sp.N(sp.pi, 30)); str(sp.nsimplify(0.5)); str(sp.sqrt(8) + sp.Rational(1, 3)); sp.latex(x**2 / 3)',
    # numpy: linear algebra, reductions and printing
    'import numpy as np\na = np.array([[2.0, 1.0], [1.0, 3.0]])',
    'round(float(np.linalg.det(a))); np.linalg.inv(a); np.linalg.solve(a, np.ones(2)); np.linalg.eig(a)',
    'repr(a); str(a.mean()); str(np.arange(10).sum()); repr(np.linspace(0, 1, 5)); np.sqrt(a).round(3)',
)
"""The warm-up program, one statement group per item (each runs even if an earlier one failed)."""

SCIENTIFIC_NAMES = frozenset({'sympy', 'numpy', 'scipy', 'mpmath', 'networkx', 'math_verify', 'latex2sympy2_extended'})
"""Top-level packages that send a program to the scientific parent (with those it preloads)."""


def warm_up() -> list[str]:
    """Run `WARM_UP` in a namespace of its own, then undo what a program could observe; the
    statements that failed (e.g. a package missing from the runtime)."""
    import warnings

    failed: list[str] = []
    sympy = sys.modules.get('sympy')
    dummy = getattr(getattr(sympy, 'core', None), 'symbol', None)
    dummy_count = getattr(getattr(dummy, 'Dummy', None), '_count', None)
    namespace: dict[str, Any] = {'__name__': '__warm_up__'}
    with warnings.catch_warnings():  # the filters as they were; warnings shown nowhere
        warnings.simplefilter('ignore')
        for statement in WARM_UP:
            try:
                exec(compile(statement, '<warm-up>', 'exec'), namespace)
            except Exception:
                failed.append(statement.split('\n')[0])
    namespace.clear()
    sympy = sys.modules.get('sympy')
    if sympy is not None:
        try:
            sympy.core.cache.clear_cache()
            if dummy_count is not None:
                sympy.core.symbol.Dummy._count = dummy_count
        except Exception:
            failed.append('sympy clean-up')
    for module in list(sys.modules.values()):
        registry = getattr(module, '__warningregistry__', None)
        if isinstance(registry, dict):
            registry.clear()
    warnings._filters_mutated()  # type: ignore[attr-defined]
    return failed


DRIVER_MODULES = ('ast', 'base64', 'contextlib', 'io', 'traceback')
"""What `DRIVER_WARM_UP` uses: it runs only in a parent that has imported them all already."""
DRIVER_WARM_UP = """
def cell(text, namespace):
    tree = ast.parse(text)
    body, tail = text, None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        lines = text.splitlines()
        body = '\\n'.join(lines[: tree.body[-1].lineno - 1])
        tail = '\\n'.join(lines[tree.body[-1].lineno - 1 :])
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        exec(compile(body, '<string>', 'exec'), namespace)
        if tail:
            value = eval(compile(tail, '<string>', 'eval'), namespace)
            if value is not None:
                print(repr(value))
    return out.getvalue()

for i in range(ROUNDS):
    text = base64.b64decode(base64.b64encode(f'x = {i}\\nprint(sum(range(x)))\\nx + 1'.encode())).decode()
    cell(text, {'__name__': '__main__'})
    for broken in ('1/0', 'x = (', 'undefined_name'):
        try:
            cell(broken, {})
        except Exception:
            traceback.format_exc()
            traceback.print_exc(file=io.StringIO())
"""
"""A notebook-cell driver of the kind RL clients wrap tool calls in (decode, ``ast.parse``, split off
the last expression, ``compile``, ``exec``/``eval`` under redirected streams, tracebacks), run
`driver_warm_up`'s rounds times: not any one client's template, the standard library calls they share."""


def driver_warm_up(rounds: int = 16) -> bool:
    """Run `DRIVER_WARM_UP` so that the library code a wrapped program runs is already specialised
    (CPython 3.11+ rewrites a function's bytecode after its first calls) and the type lookup cache
    filled: a child forked afterwards reads those pages instead of writing them.  Nothing a program
    could observe stays: no module is imported, no class defined, and the source lines the tracebacks
    read are dropped from `linecache` again.  False (and nothing run) when one of `DRIVER_MODULES` is
    not imported yet."""
    if any(name not in sys.modules for name in DRIVER_MODULES):
        return False
    namespace: dict[str, Any] = {name: sys.modules[name] for name in DRIVER_MODULES}
    namespace.update(__name__='__warm_up__', ROUNDS=rounds)
    lines = sys.modules['linecache'].cache  # `traceback` imports `linecache`
    cached = set(lines)
    try:
        exec(compile(DRIVER_WARM_UP, '<warm-up>', 'exec'), namespace)
    finally:
        namespace.clear()
        for name in set(lines) - cached:  # the library's sources, read for the tracebacks
            del lines[name]
    return True


def find_random_states() -> list[Any]:
    """Generators seeded at import, at module level or as a class attribute of a module's class
    (sympy's ``Dummy._prng``): ``random.Random`` instances (``random``'s own, which reseeds itself
    after ``fork``, and ``SystemRandom``, which has no state, excepted) and numpy ``RandomState``
    instances.  None when neither `random` nor `numpy.random` was imported."""
    if 'random' not in sys.modules and 'numpy.random' not in sys.modules:
        return []
    import random

    kinds: tuple[type, ...] = (random.Random,)
    numpy_random = sys.modules.get('numpy.random')
    if numpy_random is not None:
        kinds += (numpy_random.RandomState,)
    skip = {id(getattr(sys.modules.get('random'), '_inst', None))}
    found: list[Any] = []
    for name, module in list(sys.modules.items()):
        values = list(getattr(module, '__dict__', {}).values())
        for value in list(values):
            if isinstance(value, type) and getattr(value, '__module__', None) == name:
                values.extend(vars(value).values())
        for value in values:
            if isinstance(value, kinds) and not isinstance(value, random.SystemRandom) and id(value) not in skip:
                skip.add(id(value))
                found.append(value)
    return found


def collapse_huge_pages() -> int:
    """Back the parent's anonymous memory (heap and arenas) with transparent huge pages where the
    kernel can (``MADV_COLLAPSE``, Linux 6.1+); how many bytes it took.

    ``fork`` copies one page-table entry per 2 MB huge page instead of 512, and an exiting child tears
    down as few: with a parent as large as the scientific one, both are a large share of a child's cost.
    A child writing to such a page only gets that 4 KB page copied (the kernel splits the mapping).
    Without the kernel's support nothing changes.  ``ctypes`` is dropped again from ``sys.modules``.
    """
    before = set(sys.modules)
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        madvise = libc.madvise
        madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    except (ImportError, OSError, AttributeError):
        return 0
    done = 0
    try:
        with open('/proc/self/maps') as maps:
            ranges = [line.split() for line in maps]
        for fields in ranges:
            if fields[1] != 'rw-p' or (len(fields) > 5 and fields[5] != '[heap]'):
                continue
            low, high = (int(x, 16) for x in fields[0].split('-'))
            start, end = -(-low // _HUGE) * _HUGE, high // _HUGE * _HUGE
            if end > start and madvise(start, end - start, _MADV_HUGEPAGE) == 0:
                done += (end - start) if madvise(start, end - start, _MADV_COLLAPSE) == 0 else 0
    except OSError:
        pass
    finally:
        for name in set(sys.modules) - before:
            del sys.modules[name]
    return done


_HUGE = 2 << 20
_MADV_HUGEPAGE, _MADV_COLLAPSE = 14, 25


def uses_scientific(source: str, names: frozenset[str]) -> bool:
    """Whether ``source`` mentions one of ``names`` as a word (an import, or anything else: a
    mention in a comment only costs the program a heavier parent).  Cheap: substring tests first."""
    return any(name in source and _word(source, name) for name in names)


def _word(source: str, name: str) -> bool:
    start = source.find(name)
    while start >= 0:
        before = source[start - 1] if start else ' '
        end = start + len(name)
        after = source[end] if end < len(source) else ' '
        if not (before.isalnum() or before == '_') and not (after.isalnum() or after == '_'):
            return True
        start = source.find(name, end)
    return False
