"""Exceptions, tracebacks and exit codes, from the language and from the scientific libraries."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'errors',
    {
        'nested_traceback': (
            'def a(n):\n    return b(n) + 1\n\ndef b(n):\n    return {"k": 1}[n]\n\nprint("start")\na("missing")'
        ),
        'chained_exceptions': ('try:\n    int("x")\nexcept ValueError as e:\n    raise RuntimeError("wrapped") from e'),
        'context_exceptions': 'try:\n    1 / 0\nexcept ZeroDivisionError:\n    [][1]',
        'exception_group': (
            'raise ExceptionGroup("many", [ValueError("v"), TypeError("t"), ExceptionGroup("inner", [KeyError("k")])])'
        ),
        'exception_notes_and_caret': (
            'e = ValueError("bad")\ne.add_note("a note")\nx = {"a": [1, 2]}\ntry:\n    x["a"][5]\n'
            'except IndexError as err:\n    print(repr(err))\nraise e'
        ),
        'exit_codes_sys_exit': 'import sys\nprint("out")\nsys.stdout.flush()\nsys.exit(42)',
        'exit_code_message': 'raise SystemExit("goodbye message")',
        'exit_code_wraps': 'import sys\nsys.exit(256 + 7)',
        'keyboard_interrupt': 'print("before")\nraise KeyboardInterrupt',
        'abort_signal': 'import os, sys\nprint("aborting", flush=True)\nos.abort()',
        'assertion_error': 'x = 3\nassert x == 4, f"x is {x}"',
        'recursion_error': 'def f(n):\n    return f(n + 1)\nf(0)',
        'sympy_sympify_error': 'import sympy\nprint(sympy.sympify("2*x"))\nsympy.sympify("x +* 2")',
        'sympy_not_implemented': (
            'import sympy as sp\nx = sp.symbols("x")\ntry:\n    sp.solve(sp.cos(x) - x**3 + sp.exp(sp.sin(x)), x)\n'
            'except NotImplementedError as e:\n    print("NotImplementedError:", str(e).splitlines()[0])\n'
            'sp.Matrix([[1, 2], [2, 4]]).inv()'
        ),
        'sympy_polynomial_error': (
            'import sympy as sp\nx, y = sp.symbols("x y")\nprint(sp.Poly(x**2 + y, x).degree())\nsp.Poly(sp.sin(x), x)'
        ),
        'numpy_linalg_error': (
            'import numpy as np\ntry:\n    np.linalg.inv(np.ones((3, 3)))\nexcept np.linalg.LinAlgError as e:\n'
            '    print("LinAlgError:", e)\nnp.ones((2, 3)) @ np.ones((2, 3))'
        ),
        'numpy_index_and_broadcast': (
            'import numpy as np\ntry:\n    np.zeros(3)[5]\nexcept IndexError as e:\n    print(e)\n'
            'np.ones((2, 3)) + np.ones((4,))'
        ),
        'scipy_errors': (
            'import numpy as np\nfrom scipy import linalg, optimize\ntry:\n'
            '    linalg.solve(np.zeros((2, 2)), np.ones(2))\n'
            'except linalg.LinAlgError as e:\n    print("LinAlgError:", e)\noptimize.brentq(lambda x: x**2 + 1, 0, 1)'
        ),
        'del_at_exit': (
            'class Noisy:\n    def __del__(self):\n        print("Noisy.__del__ at exit")\nkeep = Noisy()\n'
            'print("body done")'
        ),
        'finalizers_and_atexit': (
            'import atexit, weakref\nclass T:\n    pass\nt = T()\nweakref.finalize(t, print, "finalize at exit")\n'
            'atexit.register(print, "atexit 1")\n@atexit.register\ndef boom():\n    raise ValueError("in atexit")\n'
            'print("body")'
        ),
        'excepthook_replaced': (
            'import sys\ndef hook(t, v, tb):\n    print("hooked:", t.__name__, v, file=sys.stderr)\n'
            'sys.excepthook = hook\nraise LookupError("custom hook")'
        ),
        'unraisable_exception': (
            'import gc\nclass Bad:\n    def __del__(self):\n        raise RuntimeError("in __del__")\n'
            'b = Bad()\ndel b\ngc.collect()\nprint("after")'
        ),
    },
)
