"""Float printing, numpy print options, sympy and mpmath printing."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'printing',
    {
        'float_repr': (
            'print(0.1 + 0.2, 1 / 3, 1e16, 1e-7, 2.0**60, -0.0, float("nan"), float("-inf"))\n'
            'print(round(2.675, 2), round(0.5), round(1.5), f"{2/3:.10f}", "%g" % 1234567.0, format(1e22, ","))'
        ),
        'float_info': 'import sys\nprint(sys.float_info)\n'
        'print(sys.float_repr_style, sys.int_info, sys.hash_info.width)',
        'complex_and_int': (
            'print(complex(1, -0.0), 1j**2, (-8) ** (1 / 3), 7 // -2, -7 % 3, divmod(-7.5, 2))\n'
            'print(2**100, int("1" * 50) * 3, (10**20) / 3, 10**20 // 3)'
        ),
        'int_max_str_digits': (
            'import sys\nprint(sys.get_int_max_str_digits())\nprint(len(str(2**10000)))\n'
            'try:\n    str(2**20000)\nexcept ValueError as e:\n    print("ValueError", e)'
        ),
        'numpy_default_print': (
            'import numpy as np\nprint(np.arange(12).reshape(3, 4) / 7)\n'
            'print(np.float64(0.1) + 0.2, repr(np.float32(1 / 3)))\n'
            'print(repr(np.array([1e-10, 1.0, 1e10])), np.array([True, False]), np.array(["a", "bc"]))'
        ),
        'numpy_print_options_changed': (
            'import numpy as np\nnp.set_printoptions(precision=3, suppress=True, linewidth=40)\n'
            'print(np.linspace(0, 1, 7))\nprint(np.array([1e-10, 1.0, 1e10]))\n'
            'print(np.get_printoptions()["precision"])'
        ),
        'numpy_print_options_default': (
            'import numpy as np\nopts = np.get_printoptions()\n'
            'print(sorted((k, v) for k, v in opts.items() if k != "formatter"), opts["formatter"])\n'
            'print(np.linspace(0, 1, 7))'
        ),
        'numpy_summarised': (
            'import numpy as np\nprint(np.arange(5000))\nprint(np.eye(40)[:3])\nnp.set_printoptions(threshold=10)\n'
            'print(np.arange(20))\nwith np.printoptions(precision=2):\n    print(np.pi * np.ones(3))\n'
            'print(np.pi * np.ones(3))'
        ),
        'numpy_legacy_and_repr': (
            'import numpy as np\nprint([np.float64(1.5), np.int64(3), np.bool_(True)])\n'
            'np.set_printoptions(legacy="1.25")\nprint([np.float64(1.5), np.int64(3), np.bool_(True)])'
        ),
        'numpy_array2string': (
            'import numpy as np\na = np.array([[1.123456789, -2.5], [np.nan, np.inf]])\n'
            'print(np.array2string(a, precision=4, separator=", "))\n'
            'print(np.format_float_positional(np.float32(0.1)))\n'
            'print(np.format_float_scientific(1 / 3, precision=5), a.tolist())'
        ),
        'sympy_str_pretty_latex': (
            'import sympy as sp\nx, y = sp.symbols("x y")\n'
            'e = sp.Integral(sp.sqrt(x**2 + y) / (1 + x), (x, 0, sp.oo))\n'
            'print(e)\nsp.pprint(e, use_unicode=True)\nsp.pprint(e, use_unicode=False)\nprint(sp.latex(e))\n'
            'print(sp.srepr(x + 1))'
        ),
        'sympy_float_precision': (
            'import sympy as sp\nprint(sp.Float(1) / 3, sp.N(sp.pi, 50), sp.Rational(1, 3).evalf(30))\n'
            'print(sp.nsimplify(0.333333333333), sp.sqrt(2).evalf(), sp.E.n(5), sp.Float("1e-20") + 1)'
        ),
        'mpmath_default_print': (
            'import mpmath\nprint(mpmath.mp)\nprint(mpmath.pi, mpmath.mpf(1) / 3, mpmath.sqrt(2))\n'
            'print(repr(mpmath.mpf("0.1")), mpmath.nstr(mpmath.e, 30))'
        ),
        'fractions_and_decimal_print': (
            'from fractions import Fraction\nfrom decimal import Decimal\n'
            'print(Fraction(1, 3) + Fraction(1, 6), Fraction(0.1), Fraction(0.1).limit_denominator(100))\n'
            'print(Decimal(0.1), Decimal("0.1") + Decimal("0.2"), Decimal(1) / Decimal(7))'
        ),
        'pprint_and_json': (
            'import json, pprint\nd = {"b": [1.5, 2.25], "a": {"z": None, "y": True}, "c": 1e-9}\n'
            'pprint.pprint(d, width=30)\nprint(json.dumps(d, sort_keys=True), json.dumps(float("nan")))'
        ),
    },
)
