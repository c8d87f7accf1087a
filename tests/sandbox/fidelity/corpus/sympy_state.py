"""sympy's global state: assumptions, evaluate and distribute flags, printing settings, caches."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'sympy_state',
    {
        'assumptions': (
            'import sympy as sp\nx = sp.Symbol("x")\np = sp.Symbol("x", positive=True)\n'
            'print(sp.sqrt(x**2), sp.sqrt(p**2), x == p, x.is_positive, p.is_positive, (p - 1).is_positive)\n'
            'n = sp.Symbol("n", integer=True)\n'
            'print(sp.cos(sp.pi * n), (-1) ** (2 * n), sp.simplify(sp.sin(n * sp.pi)))'
        ),
        'assumptions_refine': (
            'import sympy as sp\nx = sp.Symbol("x")\n'
            'print(sp.refine(sp.Abs(x), sp.Q.positive(x)), sp.ask(sp.Q.even(x**2), sp.Q.even(x)))\n'
            'with sp.assuming(sp.Q.negative(x)):\n    print(sp.ask(sp.Q.positive(x**3)))\n'
            'print(sp.ask(sp.Q.positive(x**3)))'
        ),
        'evaluate_false_context': (
            'import sympy as sp\nx = sp.Symbol("x")\nwith sp.evaluate(False):\n    e = x + x + 2 * 3\n'
            '    print(e, sp.sqrt(4))\n'
            'print(e, x + x + 2 * 3, e.doit())'
        ),
        'evaluate_flag_set_globally': (
            'import sympy as sp\nfrom sympy.core.parameters import global_parameters as gp\nx = sp.Symbol("x")\n'
            'gp.evaluate = False\nprint(x + x, sp.Integer(2) + 3, gp.evaluate)'
        ),
        'distribute_flag': (
            'import sympy as sp\nfrom sympy.core.parameters import global_parameters as gp, distribute\n'
            'x = sp.Symbol("x")\n'
            'print(2 * (x + 1))\nwith distribute(False):\n    print(2 * (x + 1))\ngp.distribute = False\n'
            'print(2 * (x + 1), gp.distribute)'
        ),
        'init_printing_called': (
            'import sys\nimport sympy as sp\nx = sp.Symbol("x")\nsp.init_printing(use_unicode=False, order="rev-lex")\n'
            'print(x**2 + x + 1, sp.sqrt(x))\nsys.displayhook(x**2 + 1)\nprint()'
        ),
        'printer_defaults_mutated': (
            'import sympy as sp\nfrom sympy.printing.str import StrPrinter\nx = sp.Symbol("x")\n'
            'print(sorted(StrPrinter._default_settings.items()))\nStrPrinter._default_settings["order"] = "rev-lex"\n'
            'print(sp.sstr(x**3 + x + 1), sp.sstr(x**3 + x + 1, order="lex"))'
        ),
        'default_printing_state': (
            'import sympy as sp\nfrom sympy.printing.str import StrPrinter\nx, y = sp.symbols("x y")\n'
            'print(sorted(StrPrinter._default_settings.items()))\nprint(x**3 + 3 * x * y + y**2 + 1, sp.sqrt(x) / 2)\n'
            'from sympy.core.parameters import global_parameters as gp\n'
            'print(gp.evaluate, gp.distribute, gp.exp_is_pow)'
        ),
        'cache_clear_and_cacheit': (
            'import sympy as sp\nfrom sympy.core.cache import cacheit, clear_cache\ncalls = []\n@cacheit\ndef f(n):\n'
            '    calls.append(n)\n    return sp.Integer(n) ** 2\nprint(f(3), f(3), f(4), calls)\nclear_cache()\n'
            'print(f(3), calls)'
        ),
        'symbol_identity_and_dummies': (
            'import sympy as sp\nprint(sp.Symbol("x") is sp.Symbol("x"), sp.Symbol("x") == sp.Symbol("x", real=True))\n'
            'd1, d2 = sp.Dummy("d"), sp.Dummy("d")\n'
            'print(d1 == d2, d1.name, str(d1), sp.Wild("w").match(sp.Symbol("z")) is not None)\n'
            'print(sp.integrate(sp.exp(-sp.Symbol("t")**2), (sp.Symbol("t"), 0, sp.oo)))'
        ),
        'var_injects_globals': (
            'import sympy as sp\nsp.var("alpha beta")\n'
            'print(alpha + beta, sorted(k for k in globals() if k in ("alpha", "beta")))\n'
            'print(sp.symbols("a0:4"), sp.numbered_symbols("t").__next__())'
        ),
        'monkeypatched_library': (
            'import math\nimport sympy as sp\nimport numpy as np\nmath.pi = 3\nnp.pi = 3\n'
            'sp.Symbol.__str__ = lambda self: "PATCHED"\n'
            'sp.Add.__repr__ = lambda self: "PATCHED-ADD"\n'
            'print(math.pi, np.pi, str(sp.Symbol("x")), repr(sp.Symbol("y") + 1))'
        ),
        'library_defaults_seen': (
            'import math\nimport sympy as sp\nimport numpy as np\nx = sp.Symbol("x")\n'
            'print(math.pi, np.pi, str(x), repr(x + 1), sp.Add.__repr__ is sp.Basic.__repr__)'
        ),
        'ground_types_and_config': (
            'import sympy\nfrom sympy.external.gmpy import GROUND_TYPES\nprint(sympy.__version__, GROUND_TYPES)\n'
            'from sympy.core.cache import USE_CACHE\nprint(USE_CACHE, sympy.core.cache.SYMPY_CACHE_SIZE)'
        ),
    },
)
