"""Process-wide settings a program may change: recursion limit, decimal context, mpmath precision,
numpy error state, signals, umask, integer string digits."""

from tests.sandbox.fidelity.corpus.base import programs

_DEPTH = 'def depth(n=0):\n    try:\n        return depth(n + 1)\n    except RecursionError:\n        return n\n'

PROGRAMS = programs(
    'contexts',
    {
        'recursion_default': f'import sys\n{_DEPTH}print(sys.getrecursionlimit(), depth())',
        'recursion_lowered': f'import sys\n{_DEPTH}sys.setrecursionlimit(120)\nprint(sys.getrecursionlimit(), depth())',
        'recursion_raised': (
            f'import sys\n{_DEPTH}sys.setrecursionlimit(20000)\nprint(sys.getrecursionlimit(), depth())\n'
            'sys.setrecursionlimit(1000)\nprint(depth())'
        ),
        'recursion_in_thread': (
            f'import sys, threading\n{_DEPTH}out = []\nt = threading.Thread(target=lambda: out.append(depth()))\n'
            't.start(); t.join()\nprint(out)'
        ),
        'recursion_in_thread_lowered': (
            f'import sys, threading, _thread, time\n{_DEPTH}sys.setrecursionlimit(200)\nout = []\n'
            't = threading.Thread(target=lambda: out.append(depth()))\nt.start(); t.join()\n'
            '_thread.start_new_thread(lambda: out.append(depth()), ())\n'
            'while len(out) < 2:\n    time.sleep(0.01)\nprint(out, depth())'
        ),
        'sympy_deep_recursion': (
            'import sys\nimport sympy as sp\nx = sp.Symbol("x")\ne = x\nfor i in range(60):\n    e = sp.sin(e)\n'
            'print(sp.count_ops(e), len(str(e)))\nsys.setrecursionlimit(40)\ntry:\n    sp.srepr(e)\n'
            'except RecursionError:\n'
            '    print("RecursionError")'
        ),
        'decimal_context_changed': (
            'import decimal\nfrom decimal import Decimal, getcontext\ngetcontext().prec = 5\n'
            'getcontext().rounding = decimal.ROUND_DOWN\n'
            'print(Decimal(1) / Decimal(7), Decimal("2").sqrt())\ngetcontext().traps[decimal.DivisionByZero] = False\n'
            'print(Decimal(1) / 0)'
        ),
        'decimal_context_default': (
            'import decimal\nfrom decimal import Decimal, getcontext\nprint(getcontext())\n'
            'print(Decimal(1) / Decimal(7), Decimal(2).sqrt())\nwith decimal.localcontext() as c:\n    c.prec = 50\n'
            '    print(Decimal(1) / Decimal(7))\ntry:\n    Decimal(1) / 0\nexcept decimal.DivisionByZero as e:\n'
            '    print(type(e).__name__)'
        ),
        'fractions_arithmetic': (
            'from fractions import Fraction\nimport math\ns = sum(Fraction(1, k) for k in range(1, 30))\n'
            'print(s, float(s), math.floor(s), Fraction("3.1415926535").limit_denominator(1000))'
        ),
        'mpmath_dps_changed': (
            'import mpmath\nmpmath.mp.dps = 60\nprint(mpmath.pi)\nprint(mpmath.zeta(3))\nmpmath.mp.pretty = True\n'
            'print(repr(mpmath.mpf(1) / 3))'
        ),
        'mpmath_dps_default': (
            'import mpmath\nprint(mpmath.mp.dps, mpmath.mp.prec, mpmath.mp.pretty)\nprint(mpmath.pi, mpmath.zeta(3))\n'
            'with mpmath.workdps(30):\n    print(mpmath.sqrt(2))\nprint(mpmath.sqrt(2))'
        ),
        'sympy_mpmath_interplay': (
            'import mpmath\nimport sympy as sp\nprint(sp.N(sp.zeta(3), 20), mpmath.mp.dps)\nmpmath.mp.dps = 5\n'
            'print(sp.N(sp.pi, 30), sp.pi.evalf(), mpmath.mpf(2) ** 0.5)'
        ),
        'numpy_error_state_default': (
            'import numpy as np\nprint(np.geterr(), np.geterrcall())\nprint(np.array([1.0, -1.0]) / 0)'
        ),
        'signals_and_mask': (
            'import signal\n'
            'for s in ("SIGINT", "SIGTERM", "SIGPIPE", "SIGCHLD", "SIGALRM", "SIGXFSZ", "SIGHUP", "SIGUSR1"):\n'
            '    print(s, signal.getsignal(getattr(signal, s)))\n'
            'print(sorted(signal.pthread_sigmask(signal.SIG_BLOCK, [])))'
        ),
        'signals_changed': (
            'import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n'
            'signal.signal(signal.SIGPIPE, signal.SIG_DFL)\n'
            'signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGUSR1])\nsignal.alarm(60)\n'
            'print(signal.getsignal(signal.SIGINT))'
        ),
        'umask_and_limits': (
            'import os, resource\nold = os.umask(0o77)\nprint(oct(old))\n'
            'for r in ("RLIMIT_NOFILE", "RLIMIT_CORE", "RLIMIT_FSIZE", "RLIMIT_STACK"):\n'
            '    print(r, resource.getrlimit(getattr(resource, r)))'
        ),
        'int_max_str_digits_changed': (
            'import sys\nsys.set_int_max_str_digits(0)\nprint(len(str(3**20000)), sys.get_int_max_str_digits())'
        ),
        'interpreter_settings': (
            'import sys, gc, faulthandler, locale\nprint(sys.getswitchinterval(), gc.isenabled(), gc.get_threshold())\n'
            'print(faulthandler.is_enabled(), sys.getdefaultencoding(), sys.getfilesystemencoding(), '
            'locale.getlocale())\n'
            'print([(s.encoding, s.errors, s.line_buffering) for s in (sys.stdin, sys.stdout, sys.stderr)])\n'
            'import time\nprint(time.tzname, time.timezone)'
        ),
    },
)
