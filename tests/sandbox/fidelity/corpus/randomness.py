"""Randomness, printed normalised: what a value is, and whether draws within one run differ."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'randomness',
    {
        'random_module': (
            'import random\na, b = random.random(), random.random()\n'
            'print(type(a).__name__, 0 <= a < 1, a != b, len({random.randrange(10**12) for _ in range(20)}))'
        ),
        'random_seeded': (
            'import random\nrandom.seed(1234)\n'
            'print(random.random(), random.randint(1, 100), random.sample(range(50), 5))\n'
            'r = random.Random(99)\nprint(r.gauss(0, 1), r.choice("abcdef"))'
        ),
        'numpy_global_state': (
            'import numpy as np\na = np.random.rand(3, 2)\nb = np.random.rand(3, 2)\n'
            'print(a.shape, a.dtype, bool((a != b).any()), bool(((0 <= a) & (a < 1)).all()))'
        ),
        'numpy_seeded_global': (
            'import numpy as np\nnp.random.seed(0)\nprint(np.random.rand(3))\nprint(np.random.randint(0, 100, 5))\n'
            'print(np.random.get_state()[0], np.random.get_state()[2])'
        ),
        'numpy_default_rng': (
            'import numpy as np\ng, h = np.random.default_rng(), np.random.default_rng()\nx = g.normal(size=4)\n'
            'print(type(g).__name__, type(g.bit_generator).__name__, x.shape, bool((x != h.normal(size=4)).any()))'
        ),
        'numpy_seeded_rng': (
            'import numpy as np\ng = np.random.default_rng(42)\nprint(g.integers(0, 1000, 6), g.random(2))\n'
            'print(np.random.Generator(np.random.PCG64(7)).standard_normal(3))'
        ),
        'sympy_random': (
            'import sympy\nfrom sympy.core import random as srandom\n'
            'p, q = sympy.randprime(10**8, 10**9), sympy.randprime(10**8, 10**9)\n'
            'print(sympy.isprime(p), 10**8 <= p < 10**9, sympy.isprime(q))\n'
            'srandom.seed(5)\nprint(srandom.randint(1, 10**6), sympy.randprime(1, 1000))'
        ),
        'sympy_seeded_matrix': (
            'import sympy\nprint(sympy.randMatrix(3, 3, 0, 9, seed=11))\n'
            'from sympy.combinatorics import Permutation\nimport random\nrandom.seed(3)\n'
            'print(Permutation.random(5).array_form == Permutation.random(5).array_form)'
        ),
        'uuid_secrets_urandom': (
            'import os, secrets, uuid\nu = uuid.uuid4()\n'
            'print(u.version, u != uuid.uuid4(), len(secrets.token_hex(16)), '
            'secrets.token_bytes(8) != secrets.token_bytes(8))\n'
            'print(len(os.urandom(32)), secrets.randbelow(10) < 10, uuid.uuid5(uuid.NAMESPACE_DNS, "judge.example"))'
        ),
        'system_random_and_tempnames': (
            'import random, tempfile\nsr = random.SystemRandom()\n'
            'print(0 <= sr.random() < 1, sr.random() != sr.random())\n'
            'names = {next(tempfile._get_candidate_names()) for _ in range(5)}\n'
            'print(len(names), all(len(n) == 8 for n in names))'
        ),
        'networkx_random_graph': (
            'import networkx as nx\ng = nx.gnp_random_graph(30, 0.2, seed=8)\n'
            'print(g.number_of_nodes(), g.number_of_edges(), sorted(d for _, d in g.degree())[:10])\n'
            'h = nx.gnp_random_graph(30, 0.2)\nprint(h.number_of_nodes())'
        ),
        'mpmath_rand': (
            'import mpmath\na, b = mpmath.rand(), mpmath.rand()\nprint(type(a).__name__, 0 <= a < 1, a != b)'
        ),
        'str_hash_normalised': (
            'h = hash("a string")\nprint(type(h).__name__, h == hash("a string"), hash(1), hash(1.5), hash((1, 2)))'
        ),
    },
)
