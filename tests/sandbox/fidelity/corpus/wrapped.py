"""Programs as clients send them: the model's code inside a tool-call template, imports hidden from a scan.

rStar2-Agent's shape (`toolkit.bench.templates.rstar_shape`: base64 text run through ``exec``, errors
told with the cell's line, ``os._exit(1)`` after an error, history cells replayed silently) in its two
uses (``python_code_with_standard_io`` with stdin, ``jupyter_code`` with history), the toolkit's own
template (`toolkit.wrapper.wrap_code`), and plain programs that hide their imports (``importlib``,
an import inside a function, ``exec`` of decoded text).  A warm slot runs those that need sympy in
the lean parent first, then again in the scientific one (`judge.sandbox.zygote.upgrade`), or cold in
the lean one while the scientific one starts: every way must print what a fresh interpreter prints.
"""

import base64

from tests.sandbox.fidelity.corpus.base import programs
from toolkit.bench.templates import rstar_shape
from toolkit.wrapper import wrap_code

_SOLVE = 'import sympy as sp\nx = sp.symbols("x")\nsp.solve(x**2 - 5*x + 6, x)'
_HIDDEN = base64.b64encode(b'import sympy\nprint(sympy.factorint(2**5 * 3**4 * 7))').decode()

PROGRAMS = programs(
    'wrapped',
    {
        'rstar_sympy_value': rstar_shape(_SOLVE),
        'rstar_numpy_print': rstar_shape('import numpy as np\nprint(np.linalg.det(np.array([[2.0, 1], [1, 3]])))'),
        'rstar_stdin': (
            rstar_shape('import sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums), len(nums))'),
            b'4 5 6\n7\n',
        ),
        'rstar_stdin_then_sympy': (
            rstar_shape('n = int(input())\nimport sympy\nprint(n, sympy.isprime(n), sympy.nextprime(n))'),
            b'97\n',
        ),
        'rstar_print_then_sympy': rstar_shape(
            'print("before", flush=True)\nprint("buffered")\nimport sympy\nprint(sympy.Rational(3, 12))'
        ),
        'rstar_error_line': rstar_shape('import sympy as sp\na = 1\nb = a + undefined_name\nprint(b)'),
        'rstar_error_in_tail': rstar_shape('import sympy as sp\nx = sp.symbols("x")\nsp.solve(x**2 - 1, y)'),
        'rstar_syntax_error': rstar_shape('import numpy as np\nprint(np.arange(3)\nprint("never")'),
        'rstar_sys_exit': rstar_shape('import sympy\nprint(sympy.prime(10))\nimport sys\nsys.exit(3)'),
        'rstar_output_lost_on_error': rstar_shape('import sympy\nprint(sympy.pi.evalf(20))\n1 / 0'),
        'rstar_random_per_call': rstar_shape(
            'import random\nimport numpy as np\nimport sympy\n'
            'a = [random.random() for _ in range(4)]\nb = np.random.rand(4)\n'
            'print(len(set(a)) == 4, len(set(b.tolist())) == 4, 0 < sympy.randprime(10, 1000) < 1000)'
        ),
        'rstar_history': rstar_shape(
            'y = sp.expand((x + k) ** 2)\ny',
            ['import sympy as sp\nx = sp.symbols("x")\nprint("silent")', 'k = 3', 'raise ValueError("ignored")'],
        ),
        'rstar_history_error_then_cell': rstar_shape('print(total)', ['total = sum(range(5))', '1 / 0']),
        'rstar_importlib': rstar_shape('import importlib\nm = importlib.import_module("sym" + "py")\nm.factorint(360)'),
        'rstar_trivial': rstar_shape('print(sum(range(10)))\n[i * i for i in range(5)]'),
        'rstar_traceback_from_library': rstar_shape('import sympy\nsympy.sympify("x +* 2")'),
        'toolkit_sympy': wrap_code('import sympy\nsympy.factorint(1001)'),
        'toolkit_history_error': wrap_code('print(z * 2)\nz / 0', ['import numpy as np\nz = np.arange(3)']),
        'hidden_import_in_function': 'def area(r):\n    import sympy\n    return sympy.pi * r**2\nprint(area(3))',
        'hidden_exec_decoded': f'import base64\nexec(base64.b64decode("{_HIDDEN}").decode())',
        'hidden_dunder_import': 'mod = __import__("num" + "py")\nprint(mod.array([1, 2, 3]).sum())',
        'hidden_import_after_work': (
            'total = 0\nfor i in range(3 * 10**6):\n    total += i % 7\nprint(total)\n'
            'import sympy\nprint(sympy.factorint(total))'
        ),
    },
)
