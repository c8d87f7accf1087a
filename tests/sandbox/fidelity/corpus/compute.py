"""Typical tool calls of math RL: sympy, numpy, scipy, mpmath, networkx, math-verify, the stdlib."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'compute',
    {
        'sympy_solve': (
            'import sympy as sp\nx, y = sp.symbols("x y")\nprint(sp.solve(x**3 - 6 * x**2 + 11 * x - 6, x))\n'
            'print(sp.solve([x + y - 10, x - y - 2], [x, y]), sp.solveset(sp.sin(x), x, sp.Interval(0, 7)))'
        ),
        'sympy_factorint_primes': (
            'import sympy as sp\nprint(sp.factorint(2**64 - 1), sp.primerange(100, 140).__class__.__name__)\n'
            'print(list(sp.primerange(100, 140)), sp.totient(10**6), sp.nextprime(10**12), sp.divisors(360)[-5:])'
        ),
        'sympy_summation': (
            'import sympy as sp\nk, n = sp.symbols("k n", integer=True, positive=True)\n'
            'print(sp.summation(k**3, (k, 1, n)).factor(), sp.summation(1 / k**2, (k, 1, sp.oo)), sp.Sum(1 / 2**k, '
            '(k, 0, 10)).doit())'
        ),
        'sympy_integrate': (
            'import sympy as sp\nx = sp.Symbol("x")\n'
            'print(sp.integrate(x**2 * sp.exp(-x), (x, 0, sp.oo)), sp.integrate(1 / (1 + x**2), x))\n'
            'print(sp.integrate(sp.sin(x)**2, (x, 0, sp.pi)), sp.integrate(sp.log(x), x))'
        ),
        'sympy_limits_series': (
            'import sympy as sp\nx = sp.Symbol("x")\n'
            'print(sp.limit(sp.sin(x) / x, x, 0), sp.limit((1 + 1 / x) ** x, x, sp.oo))\n'
            'print(sp.series(sp.exp(x) * sp.cos(x), x, 0, 6))\nprint(sp.diff(sp.atan(x**2), x, 2))'
        ),
        'sympy_simplify': (
            'import sympy as sp\nx = sp.Symbol("x")\n'
            'print(sp.simplify(sp.sin(x)**2 + sp.cos(x)**2), sp.factor(x**4 - 1))\n'
            'print(sp.expand((x + 2) ** 5), sp.apart(1 / (x**2 - 1)), sp.trigsimp(sp.sin(2 * x) / sp.cos(x)))'
        ),
        'sympy_matrix': (
            'import sympy as sp\nm = sp.Matrix([[2, 1, 0], [1, 3, 1], [0, 1, 4]])\n'
            'print(m.det(), m.inv(), m.charpoly().as_expr())\n'
            'print(sorted(m.eigenvals(), key=sp.default_sort_key), m.rank(), m.rref()[1])'
        ),
        'sympy_number_theory': (
            'import sympy as sp\nfrom sympy.ntheory.modular import crt\n'
            'print(crt([3, 5, 7], [2, 3, 2]), sp.mod_inverse(17, 3120))\n'
            'print(sp.binomial(50, 25), sp.fibonacci(100), sp.partition(50), sp.isprime(2**61 - 1))'
        ),
        'sympy_rsolve': (
            'import sympy as sp\nn = sp.Symbol("n", integer=True)\na = sp.Function("a")\n'
            'print(sp.rsolve(a(n + 2) - a(n + 1) - a(n), a(n), {a(0): 0, a(1): 1}))'
        ),
        'sympy_parse_and_lambdify': (
            'import sympy as sp\n'
            'from sympy.parsing.sympy_parser import parse_expr, standard_transformations as std, convert_xor, '
            'implicit_multiplication as im\n'
            'e = parse_expr("2x^2 + 3x", transformations=std + (convert_xor, im))\n'
            'print(e)\nx = sp.Symbol("x")\ne = sp.sympify("2*x**2 + 3*x")\nf = sp.lambdify(x, e, "math")\n'
            'print(f(2.5), sp.lambdify(x, e, "numpy")(2))'
        ),
        'numpy_linalg': (
            'import numpy as np\na = np.array([[4.0, 1, 2], [1, 5, 3], [2, 3, 6]])\n'
            'print(np.linalg.det(a), np.linalg.inv(a))\n'
            'w, v = np.linalg.eigh(a)\nprint(w)\n'
            'print(np.linalg.solve(a, np.array([1.0, 2, 3])), np.linalg.matrix_rank(a), np.linalg.norm(a))'
        ),
        'numpy_fft_and_stats': (
            'import numpy as np\nx = np.sin(np.linspace(0, 8 * np.pi, 64))\nf = np.fft.rfft(x)\n'
            'print(np.round(np.abs(f[:6]), 6))\n'
            'd = np.arange(1, 11) ** 1.5\n'
            'print(d.mean(), d.std(), np.median(d), np.percentile(d, [10, 90]), np.cumsum(d)[-1])'
        ),
        'numpy_integer_overflow_and_dtypes': (
            'import numpy as np\na = np.array([2**62], dtype=np.int64)\nprint(a * 4, np.int8(127) + np.int8(1))\n'
            'print(np.array([1, 2]).dtype, (np.array([1]) / 2).dtype, np.result_type(np.int32, np.float32), '
            'np.uint8(250) + 10)'
        ),
        'numpy_polynomial': (
            'import numpy as np\np = np.polynomial.Polynomial([1, -3, 2])\n'
            'print(p, p.roots(), np.roots([1, -6, 11, -6]))\n'
            'print(np.polyfit(np.arange(5), np.arange(5) ** 2, 2).round(10), np.polyval([1, 0, -1], 3))'
        ),
        'scipy_optimize': (
            'from scipy import optimize\nr = optimize.minimize_scalar(lambda x: (x - 2) ** 2 + 1)\n'
            'print(round(r.x, 6), round(r.fun, 6))\n'
            'print(round(optimize.brentq(lambda x: x**3 - 2, 0, 2), 10))\n'
            'res = optimize.minimize(lambda v: (v[0] - 1) ** 2 + (v[1] + 2) ** 2, [0, 0], method="Nelder-Mead")\n'
            'print([round(float(t), 3) for t in res.x], res.success)'
        ),
        'scipy_integrate_special': (
            'import numpy as np\nfrom scipy import integrate, special\n'
            'val, err = integrate.quad(lambda t: np.exp(-t**2), -np.inf, np.inf)\n'
            'print(round(val, 12), special.gamma(5.5), special.comb(30, 15, exact=True), special.erf(0.5))\n'
            'sol = integrate.solve_ivp(lambda t, y: -y, (0, 1), [1.0], rtol=1e-8, atol=1e-10)\n'
            'print(round(float(sol.y[0, -1]), 6))'
        ),
        'scipy_stats': (
            'import numpy as np\nfrom scipy import stats\nx = stats.norm.rvs(size=5)\n'
            'print(x.shape, bool((x != stats.norm.rvs(size=5)).any()))\n'
            'print(stats.norm.rvs(size=3, random_state=np.random.default_rng(1)), stats.poisson.rvs(4, size=4, '
            'random_state=5))\n'
            'print(stats.norm.cdf(1.96), stats.binom.pmf(3, 10, 0.5), stats.t.ppf(0.975, 10))\n'
            'r = stats.linregress([1, 2, 3, 4, 5], [2.1, 3.9, 6.2, 7.8, 10.1])\n'
            'print(round(r.slope, 6), round(r.intercept, 6), round(r.rvalue, 6))'
        ),
        'scipy_linalg_sparse': (
            'import numpy as np\nfrom scipy import linalg, sparse\nfrom scipy.sparse.linalg import spsolve\n'
            'print(np.round(linalg.expm(np.array([[0.0, 1], [-1, 0]])), 8))\n'
            'm = sparse.diags([1, -2, 1], [-1, 0, 1], shape=(6, 6), format="csc")\nprint(spsolve(m, np.ones(6)))'
        ),
        'mpmath_numerics': (
            'import mpmath\nprint(mpmath.quad(mpmath.sin, [0, mpmath.pi]), mpmath.findroot(lambda x: x**2 - 2, 1))\n'
            'print(mpmath.nsum(lambda k: 1 / k**4, [1, mpmath.inf]), mpmath.binomial(100, 50), mpmath.gamma(0.5) ** 2)'
        ),
        'networkx_graphs': (
            'import networkx as nx\ng = nx.Graph()\n'
            'g.add_weighted_edges_from([(1, 2, 4), (1, 3, 1), (3, 2, 1), (2, 4, 5), (3, 4, 8)])\n'
            'print(nx.shortest_path(g, 1, 4, weight="weight"), nx.shortest_path_length(g, 1, 4, weight="weight"))\n'
            'print(sorted(nx.minimum_spanning_tree(g).edges(data="weight")), nx.is_connected(g), nx.diameter(g))\n'
            'print(sorted((k, round(v, 6)) for k, v in nx.pagerank(g).items()))'
        ),
        'math_verify_grading': (
            'from math_verify import parse, verify\ngold = parse("$\\\\frac{1}{2}$")\n'
            'for answer in ("The answer is $\\\\boxed{0.5}$", "$\\\\frac{2}{4}$", "$\\\\boxed{3}$"):\n'
            '    print(answer, verify(gold, parse(answer)))\n'
            'print(parse("$x^2 + 2x + 1$"), parse("$\\\\sqrt{8}$"), parse("\\\\boxed{\\\\{1, 2\\\\}}"))'
        ),
        'stdlib_itertools_math': (
            'import itertools, math, functools, collections\n'
            'print(sum(1 for p in itertools.permutations(range(7)) if all(p[i] != i for i in range(7))))\n'
            'print(math.comb(40, 20), math.gcd(2**40 - 1, 2**30 - 1), math.isqrt(10**30 + 7), math.lcm(*range(1, '
            '21)))\n'
            'print(functools.reduce(lambda a, b: a * b, range(1, 15)), '
            'collections.Counter("mississippi").most_common(3))'
        ),
        'stdlib_heavy_loop': (
            'def collatz(n):\n    steps = 0\n    while n != 1:\n        n = n // 2 if n % 2 == 0 else 3 * n + 1\n'
            '        steps += 1\n'
            '    return steps\nprint(max(range(1, 20000), key=collatz))'
        ),
    },
)
