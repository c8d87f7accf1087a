"""Threads and processes: threading, concurrent.futures, BLAS threads, multiprocessing."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'threads',
    {
        'threading_basics': (
            'import threading\nresults = [0] * 4\ndef work(i):\n    results[i] = sum(range(i * 1000))\n'
            'ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]\n'
            '[t.start() for t in ts]\n[t.join() for t in ts]\n'
            'print(results, [t.name for t in ts], threading.active_count(), threading.current_thread().name)'
        ),
        'thread_names_and_local': (
            'import threading\nprint(threading.Thread().name, threading.main_thread().name, threading.active_count())\n'
            'local = threading.local()\nlocal.v = 1\nseen = []\n'
            't = threading.Thread(target=lambda: seen.append(getattr(local, "v", None)))\nt.start(); t.join()\n'
            'print(seen)'
        ),
        'thread_exception_hook': (
            'import threading\ndef boom():\n    raise ValueError("in thread")\nt = threading.Thread(target=boom)\n'
            't.start(); t.join()\nprint("main continues")'
        ),
        'non_daemon_thread_at_exit': (
            'import threading, time\ndef late():\n    time.sleep(0.2)\n    print("late thread done")\n'
            'threading.Thread(target=late).start()\nprint("main done")'
        ),
        'daemon_thread_at_exit': (
            'import threading, time\ndef forever():\n    while True:\n        time.sleep(0.05)\n'
            'threading.Thread(target=forever, daemon=True).start()\nprint("main done, daemon dropped")'
        ),
        'thread_pool_executor': (
            'from concurrent.futures import ThreadPoolExecutor\nimport math\n'
            'with ThreadPoolExecutor(max_workers=3) as ex:\n    print(list(ex.map(math.factorial, range(10))))\n'
            '    f = ex.submit(lambda: 1 / 0)\n    print(type(f.exception()).__name__)'
        ),
        'process_pool_fork': (
            'from concurrent.futures import ProcessPoolExecutor\nimport multiprocessing as mp\n'
            'def sq(x):\n    return x * x\nif __name__ == "__main__":\n'
            '    with ProcessPoolExecutor(2, mp_context=mp.get_context("fork")) as ex:\n'
            '        print(list(ex.map(sq, range(8))))'
        ),
        'multiprocessing_spawn': (
            'import multiprocessing as mp\ndef cube(x):\n    return x ** 3, __name__\nif __name__ == "__main__":\n'
            '    with mp.get_context("spawn").Pool(1) as pool:\n        print(pool.map(cube, range(5)))'
        ),
        'blas_threads': (
            'import os\nimport numpy as np\na = np.random.default_rng(0).random((200, 200))\n'
            'for _ in range(3):\n    a = a @ a / 200\n'
            'print(round(float(a.sum()), 6), len(os.listdir("/proc/self/task")))\n'
            'print({k: v for k, v in sorted(os.environ.items()) if k.endswith("_THREADS")})'
        ),
        'scipy_threads': (
            'import os\nimport numpy as np\nfrom scipy import linalg\n'
            'm = np.random.default_rng(1).random((120, 120)) + 120 * np.eye(120)\n'
            'lu, piv = linalg.lu_factor(m)\n'
            'print(round(float(np.abs(linalg.lu_solve((lu, piv), np.ones(120))).sum()), 8))\n'
            'print(len(os.listdir("/proc/self/task")), os.cpu_count() == len(os.sched_getaffinity(0)) or "restricted")'
        ),
        'raw_thread_exception_and_exit': (
            'import _thread, time\ndef boom(x, y=0):\n    raise ValueError(f"raw {x} {y}")\n'
            'def leave():\n    raise SystemExit(3)\n_thread.start_new_thread(boom, (1,), {"y": 2})\n'
            '_thread.start_new_thread(leave, ())\ntime.sleep(0.3)\nprint("main continues")'
        ),
        'raw_thread_bad_arguments': (
            'import _thread\ndef f():\n    pass\n'
            'for args in [(f,), (f, []), (1, ()), (f, (), None), (f, (), {}, 1)]:\n'
            '    try:\n        _thread.start_new_thread(*args)\n    except TypeError as e:\n        print(e)\n'
            'try:\n    _thread.start_new_thread(function=f, args=())\nexcept TypeError as e:\n    print(e)'
        ),
        'threads_and_numpy_concurrently': (
            'import threading\nimport numpy as np\nout = {}\ndef work(i):\n'
            '    out[i] = float(np.linalg.det(np.eye(50) * (i + 1)))\n'
            'ts = [threading.Thread(target=work, args=(i,)) for i in range(3)]\n[t.start() for t in ts]\n'
            '[t.join() for t in ts]\n'
            'print(sorted(out.items()))'
        ),
    },
)
