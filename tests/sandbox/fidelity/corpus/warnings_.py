"""Warnings: once-per-location semantics, filters a program changes, library warnings."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'warnings',
    {
        'once_per_location': (
            'import warnings\nfor i in range(3):\n    warnings.warn("looped")\n'
            'warnings.warn("second place")\nwarnings.warn("looped")\nprint("done")'
        ),
        'categories_and_defaults': (
            'import warnings\nwarnings.warn("dep in main", DeprecationWarning)\n'
            'warnings.warn("pending", PendingDeprecationWarning)\nwarnings.warn("rt", RuntimeWarning)\n'
            'warnings.warn("future", FutureWarning)\nimport json\nprint(json.dumps([1]))'
        ),
        # Sorted: the filters numpy and sympy add at import do not overlap, so their order (the order
        # of the imports, the warm parent's when it preloads them) changes nothing a program sees.
        'filters_listed': (
            'import warnings, numpy, sympy\n'
            'print(len(warnings.filters), warnings.filters[-5:])\n'
            'for f in sorted(warnings.filters, key=repr):\n'
            '    print(f[0], f[1] and f[1].pattern, f[2].__name__, f[3], f[4])'
        ),
        'simplefilter_error': (
            'import warnings\nwarnings.simplefilter("error")\nprint("set")\nwarnings.warn("now an error")'
        ),
        'filter_changed_then_reset': (
            'import warnings\nwarnings.filterwarnings("ignore", message="hid")\nwarnings.warn("hidden")\n'
            'warnings.warn("shown")\nwarnings.resetwarnings()\nwarnings.warn("after reset")\n'
            'print(len(warnings.filters))'
        ),
        'catch_warnings_record': (
            'import warnings\nwith warnings.catch_warnings(record=True) as got:\n    warnings.simplefilter("always")\n'
            '    for i in range(3):\n        warnings.warn(f"w{i}", UserWarning)\n'
            'print([str(w.message) for w in got], [w.lineno for w in got])\nwarnings.warn("outside")'
        ),
        'numpy_divide_by_zero': (
            'import numpy as np\na = np.array([1.0, 0.0, -1.0])\nfor _ in range(2):\n    print(a / 0)\n'
            'print(np.log(a))\nprint(np.sqrt(-a))'
        ),
        'numpy_seterr_raise': (
            'import numpy as np\nprint(np.geterr())\nold = np.seterr(all="raise")\nprint(old)\n'
            'with np.errstate(divide="ignore"):\n    print(np.array([1.0]) / 0)\nnp.array([1.0]) / 0'
        ),
        'sympy_deprecation': (
            'import warnings\nimport sympy\nimport sympy.core.compatibility\nprint(sympy.core.compatibility.__name__)\n'
            'with warnings.catch_warnings(record=True) as got:\n    warnings.simplefilter("always")\n'
            '    import sympy.utilities.randtest\nprint([w.category.__name__ for w in got])'
        ),
        'scipy_integration_warning': (
            'import numpy as np\nfrom scipy import integrate\n'
            'val, err = integrate.quad(lambda x: np.sin(1 / x), 0, 1, limit=5)\n'
            'print(round(val, 3))'
        ),
        'logging_and_capture': (
            'import logging, warnings\nlogging.warning("plain %s", "log")\nlogging.captureWarnings(True)\n'
            'warnings.warn("captured")\nlogging.getLogger("x.y").error("named")\nprint(logging.getLogger().level)'
        ),
        'showwarning_replaced': (
            'import warnings, sys\ndef show(message, category, filename, lineno, file=None, line=None):\n'
            '    print("custom:", message, category.__name__, lineno)\nwarnings.showwarning = show\n'
            'warnings.warn("via custom")\nimport numpy as np\nnp.float64(1) / 0'
        ),
        'registry_is_per_module': (
            'import warnings\ndef f():\n    warnings.warn("from f")\nfor _ in range(2):\n    f()\n'
            'print(sorted(k[0] for k in __warningregistry__ if isinstance(k, tuple)))\n'
            'print(f.__globals__ is globals())'
        ),
    },
)
