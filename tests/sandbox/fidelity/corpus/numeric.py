"""More numpy and mpmath programs, spread over the categories: cheap to run (numpy imports in a tenth
of sympy's time), so that most of the corpus exercises the scientific stack."""

from tests.sandbox.fidelity.corpus.base import programs

_NP = 'import numpy as np\n'

PROGRAMS = [
    *programs(
        'printing',
        {
            'numpy_complex_and_structured': (
                f'{_NP}print(np.array([1 + 2j, -0.5j]), np.sqrt(np.array([-4 + 0j])))\n'
                'a = np.zeros(2, dtype=[("x", "i4"), ("y", "f8")])\na["y"] = [1.5, 2.25]\nprint(a, a.dtype)'
            ),
            'numpy_float_types': (
                f'{_NP}for t in (np.float16, np.float32, np.float64, np.longdouble):\n'
                '    print(t.__name__, t(1) / t(3), np.finfo(t).eps)'
            ),
            'numpy_datetime': (
                f'{_NP}d = np.arange("2024-01-01", "2024-01-05", dtype="datetime64[D]")\n'
                'print(d, d[-1] - d[0], np.datetime64("2024-03-01") - np.timedelta64(1, "D"))'
            ),
            'numpy_masked_and_nan': (
                f'{_NP}m = np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])\nprint(m, m.mean())\n'
                'a = np.array([1.0, np.nan, 3.0])\nprint(np.nanmean(a), np.nansum(a), np.isnan(a))'
            ),
            'mpmath_matrices_and_formats': (
                'import mpmath\nm = mpmath.matrix([[1, 2], [3, 4]])\nprint(m ** -1)\n'
                'print(mpmath.det(m), mpmath.nstr(mpmath.pi, 8))\n'
                'print(mpmath.mpc(1, 2) ** 2, mpmath.fraction(1, 3), mpmath.hyp2f1(1, 1, 2, 0.5))'
            ),
        },
    ),
    *programs(
        'warnings',
        {
            'numpy_overflow_and_invalid': (
                f'{_NP}print(np.float32(3e38) * np.float32(10), np.array([0.0]) / np.array([0.0]))\n'
                'print(np.exp(np.array([1000.0])), np.int64(2) ** 64)'
            ),
            'numpy_errstate_nested': (
                f'{_NP}with np.errstate(all="ignore"):\n    print(np.log(0.0))\n'
                '    with np.errstate(divide="warn"):\n        print(np.log(0.0))\nprint(np.log(0.0))'
            ),
            'numpy_deprecations': (
                f'{_NP}import warnings\nwith warnings.catch_warnings(record=True) as got:\n'
                '    warnings.simplefilter("always")\n    np.array([1.0, 2.0]).astype(int, casting="unsafe")\n'
                '    np.float64(np.array([3.0])[0])\nprint(len(got))\nnp.mean(np.array([]))'
            ),
            'mpmath_no_warnings': 'import warnings, mpmath\nwarnings.simplefilter("error")\n'
            'print(mpmath.log(0), mpmath.inf - mpmath.inf)',
        },
    ),
    *programs(
        'errors',
        {
            'numpy_dtype_errors': (
                f'{_NP}try:\n    np.array(["a"]).astype(float)\nexcept ValueError as e:\n    print(e)\n'
                'np.zeros(2, dtype=np.int8)[0] = 300'
            ),
            'numpy_shape_error': f'{_NP}np.arange(6).reshape(4, 2)',
            'numpy_axis_error': (
                f'{_NP}try:\n    np.sum(np.ones(3), axis=2)\nexcept np.exceptions.AxisError as e:\n'
                '    print(type(e).__name__, e)\nnp.concatenate([np.ones(2), np.ones((2, 2))])'
            ),
            'numpy_memory_error_caught': (
                f'{_NP}try:\n    np.empty(10**15)\nexcept MemoryError as e:\n    print("MemoryError", str(e)[:40])'
            ),
            'mpmath_errors': (
                'import mpmath\ntry:\n    mpmath.findroot(lambda x: x**2 + 1, 1.0)\nexcept ValueError as e:\n'
                '    print("ValueError", str(e).splitlines()[0])\nmpmath.mpf("not a number")'
            ),
        },
    ),
    *programs(
        'randomness',
        {
            'numpy_legacy_distributions': (
                f'{_NP}rs = np.random.RandomState(2024)\n'
                f'print(rs.normal(size=3), rs.binomial(10, 0.3, 4), rs.permutation(6))\n'
                'print(np.random.RandomState(7).choice(10, 3, replace=False))'
            ),
            'numpy_generator_methods': (
                f'{_NP}g = np.random.default_rng(123)\n'
                f'print(g.permutation(8), g.choice(5, 3, replace=False), g.poisson(3.0, 4))\n'
                'print(g.multivariate_normal([0, 0], [[1, 0.5], [0.5, 1]], 2).round(6), g.bytes(4).hex())'
            ),
            'numpy_spawned_streams': (
                f'{_NP}ss = np.random.SeedSequence(99)\n'
                f'print([np.random.default_rng(c).integers(100) for c in ss.spawn(4)])\n'
                'unseeded = np.random.SeedSequence()\nprint(type(unseeded.entropy).__name__, unseeded.entropy > 0)'
            ),
        },
    ),
    *programs(
        'threads',
        {
            'numpy_in_thread_pool': (
                f'{_NP}from concurrent.futures import ThreadPoolExecutor\n'
                'def solve(k):\n    a = np.eye(30) * k + 1\n'
                '    return round(float(np.linalg.solve(a, np.ones(30)).sum()), 10)\n'
                'with ThreadPoolExecutor(4) as ex:\n    print(list(ex.map(solve, range(1, 9))))'
            ),
            'numpy_errstate_per_thread': (
                f'{_NP}import threading\nnp.seterr(all="raise")\nout = []\n'
                't = threading.Thread(target=lambda: out.append(np.geterr()["divide"]))\nt.start(); t.join()\n'
                'print(np.geterr()["divide"], out)'
            ),
            'numpy_random_in_threads': (
                f'{_NP}import threading\nout = {{}}\ndef draw(i):\n'
                f'    out[i] = np.random.default_rng(i).integers(1000, size=3).tolist()\n'
                'ts = [threading.Thread(target=draw, args=(i,)) for i in range(4)]\n[t.start() for t in ts]\n'
                '[t.join() for t in ts]\n'
                'print(sorted(out.items()))'
            ),
        },
    ),
    *programs(
        'contexts',
        {
            'numpy_print_context_restored': (
                f'{_NP}with np.printoptions(precision=1):\n    print(np.array([1 / 3]))\nprint(np.array([1 / 3]))\n'
                'np.set_printoptions(floatmode="fixed", precision=4)\nprint(np.array([0.5, 1 / 3]))'
            ),
            'numpy_default_int_and_byteorder': (
                f'{_NP}import sys\nprint(np.array([1]).dtype, np.intp, sys.byteorder, np.dtype(">i4").byteorder)\n'
                'print(np.iinfo(np.int64).max, np.__version__.count(".") >= 1)'
            ),
            'mpmath_precision_contexts': (
                'import mpmath\nwith mpmath.workprec(20):\n    print(mpmath.pi)\nwith mpmath.extradps(30):\n'
                '    print(mpmath.e)\n'
                'print(mpmath.mp.dps, mpmath.pi)\nmpmath.mp.prec = 200\nprint(mpmath.sqrt(3))'
            ),
        },
    ),
    *programs(
        'process',
        {
            'numpy_savetxt_and_load': (
                f'{_NP}a = np.arange(12.0).reshape(3, 4) / 3\nnp.savetxt("a.txt", a, fmt="%.5f")\nnp.save("a.npy", a)\n'
                'print(open("a.txt").read(), np.array_equal(np.load("a.npy"), a))\nimport os\n'
                'print(sorted(os.listdir(".")))'
            ),
            'numpy_stdin_matrix': (
                f'{_NP}import sys\nn = int(sys.stdin.readline())\n'
                f'm = np.array([sys.stdin.readline().split() for _ in range(n)], float)\n'
                'print(np.linalg.det(m).round(6), np.linalg.matrix_power(m, 3))',
                b'3\n2 0 1\n1 3 2\n1 1 1\n',
            ),
            'numpy_large_tostring': (
                f'{_NP}a = np.arange(200000, dtype=np.int64) * 7919 % 100003\nprint(" ".join(map(str, a.tolist())))'
            ),
        },
    ),
    *programs(
        'compute',
        {
            'numpy_eigen_svd': (
                f'{_NP}a = np.array([[2.0, 1], [1, 3]])\nw = np.linalg.eigvalsh(a)\n'
                f'u, s, vt = np.linalg.svd(np.arange(6.0).reshape(2, 3))\n'
                'print(w.round(10), s.round(10), np.linalg.cond(a).round(10), np.linalg.qr(a)[1].round(10))'
            ),
            'numpy_vectorised_sums': (
                f'{_NP}n = np.arange(1, 10**6 + 1, dtype=np.float64)\n'
                f'print((1 / n**2).sum(), np.sqrt(6 * (1 / n**2).sum()))\n'
                'k = np.arange(10**5)\n'
                'print(int((k[(k % 3 == 0) | (k % 5 == 0)]).sum()), np.prod(np.arange(1, 15, dtype=object)))'
            ),
            'numpy_monte_carlo_seeded': (
                f'{_NP}g = np.random.default_rng(2025)\np = g.random((200000, 2))\n'
                f'print(4 * np.mean((p**2).sum(axis=1) < 1))'
            ),
            'numpy_integer_math': (
                f'{_NP}print(np.gcd.reduce([84, 126, 210]), np.lcm.reduce(np.arange(1, 11)), np.cumprod(np.arange(1, '
                f'11))[-1])\n'
                f''
                'print(np.bincount([1, 1, 3, 7]), np.unique([3, 1, 2, 3, 1], return_counts=True), np.convolve([1, '
                '2], [1, 3]))'
            ),
            'mpmath_special_and_constants': (
                'import mpmath\nmpmath.mp.dps = 30\n'
                'print(mpmath.zeta(2), mpmath.catalan, mpmath.euler, mpmath.besselj(0, 1))\n'
                'print(mpmath.polyroots([1, 0, -2]), mpmath.limit(lambda n: (1 + 1 / n) ** n, mpmath.inf))'
            ),
        },
    ),
]
