"""What a program sees of its process: environment, cwd, argv, ``__main__``, stdin, large outputs."""

from tests.sandbox.fidelity.corpus.base import programs

PROGRAMS = programs(
    'process',
    {
        'environment': 'import os\nprint(sorted(os.environ.items()))',
        'environment_changed': (
            'import os\nos.environ["OMP_NUM_THREADS"] = "8"\nos.environ["JUDGE_FIDELITY_MARK"] = "set"\n'
            'os.putenv("PUTENV_ONLY", "1")\n'
            'del os.environ["HOME"]\nprint(os.environ.get("JUDGE_FIDELITY_MARK"), "HOME" in os.environ)'
        ),
        'cwd_and_listing': (
            'import os\nprint(os.getcwd(), os.path.abspath("x.txt"), sorted(os.listdir(".")))\n'
            'open("made.txt", "w").write("data")\nos.mkdir("sub")\nos.chdir("sub")\n'
            'print(os.getcwd(), sorted(os.listdir("..")))'
        ),
        'argv_and_file': (
            'import sys, os\n'
            'print(sys.argv, os.path.basename(__file__), __name__, sys.executable == sys._base_executable)\n'
            'print(os.path.dirname(__file__) == os.getcwd())'
        ),
        'orig_argv_and_flags': 'import sys\nprint(sys.orig_argv[1:])\nprint(sys.flags)',
        'main_module_namespace': (
            'import sys\nprint(sorted(dir()))\nprint(__doc__, __package__, __spec__, type(__builtins__).__name__)\n'
            'print(type(__loader__).__name__, sys.modules["__main__"] is sys.modules[__name__])'
        ),
        'module_docstring_and_annotations': (
            '"""The program\'s docstring."""\nx: int = 3\nprint(__doc__, __annotations__)'
        ),
        'annotations_evaluated': (
            'import dataclasses, typing\n@dataclasses.dataclass\nclass P:\n    x: int\n    y: "list[str]"\n'
            'def f(a: int, b: float = 1.0) -> str:\n    return str(a + b)\n'
            'print(f.__annotations__, [fl.type for fl in dataclasses.fields(P)], typing.get_type_hints(f))'
        ),
        'surrogate_output': ('import sys\nprint(repr(sys.stdin.read()))\nprint("caf\\udce9")', b'caf\xe9\n'),
        'sys_path': 'import sys\nprint(sys.path)\nprint(sys.prefix == sys.base_prefix, sys.platlibdir)',
        'import_from_work_dir': (
            'open("helper_mod.py", "w").write("VALUE = 41\\n")\ntry:\n    import helper_mod\n'
            '    print(helper_mod.VALUE + 1)\n'
            'except ImportError as e:\n    print(type(e).__name__, e)'
        ),
        'inspect_and_pickle_main': (
            'import inspect, pickle\ndef f(a, b=2):\n    return a + b\nclass P:\n    pass\n'
            'print(inspect.getsource(f), end="")\n'
            'print(pickle.loads(pickle.dumps(f))(1), type(pickle.loads(pickle.dumps(P()))).__name__)'
        ),
        'stdin_numbers': (
            'import sys\ndata = sys.stdin.read().split()\nn = int(data[0])\nprint(sum(map(int, data[1:n + 1])))',
            b'5\n10 20 30\n40 50\n',
        ),
        'stdin_input_lines': (
            'n = int(input())\nfor _ in range(n):\n    a, b = map(int, input().split())\n    print(a * b)\ninput()',
            b'3\n1 2\n3 4\n5 6\n',
        ),
        'stdin_binary_and_numpy': (
            'import sys, io\nimport numpy as np\nraw = sys.stdin.buffer.read()\nprint(len(raw))\n'
            'a = np.loadtxt(io.StringIO(raw.decode()))\nprint(a.shape, a.sum(axis=0))',
            b'1 2 3\n4 5 6\n7.5 8 9\n',
        ),
        'stdin_iteration_and_fileinput': (
            'import sys, fileinput\nfirst = sys.stdin.readline()\nprint(repr(first))\n'
            'print([line.rstrip("\\n") for line in fileinput.input()])',
            'line one\nzwei ü\n\nlast without newline'.encode(),
        ),
        'stdin_empty': 'import sys\nprint(repr(sys.stdin.read()))\ntry:\n    input("prompt> ")\n'
        'except EOFError as e:\n    print("EOF", e)',
        'large_output_lines': 'for i in range(60000):\n    print(i, i * i)',
        'large_output_numpy': (
            'import numpy as np, sys\nnp.set_printoptions(threshold=sys.maxsize)\n'
            'print(np.arange(30000).reshape(-1, 10) * 0.5)'
        ),
        'large_output_mixed_streams': (
            'import sys\nfor i in range(20000):\n    print("out", i)\n    if i % 7 == 0:\n'
            '        print("err", i, file=sys.stderr)\n'
            'sys.stdout.write("x" * 300000)'
        ),
        'output_without_newline': 'import sys\nsys.stdout.write("no newline")\nsys.stderr.write("err no newline")',
        'unicode_output': 'print("∫ √x dx = ⅔ x^(3/2)", "中文", "😀")\nimport sys\nprint("é", file=sys.stderr)',
        'files_and_tempfiles': (
            'import os, tempfile\nfd, path = tempfile.mkstemp(suffix=".txt")\nos.write(fd, b"hello")\nos.close(fd)\n'
            'print(os.path.dirname(path) == os.getcwd(), tempfile.gettempdir() == os.getcwd(), open(path).read())\n'
            'with tempfile.TemporaryDirectory() as d:\n    print(os.path.isdir(d))\n'
            'print(os.path.expanduser("~") == os.getcwd())'
        ),
        'subprocess_python': (
            'import subprocess, sys\nr = subprocess.run([sys.executable, "-c", "import sys; print(sys.argv, 6 * 7)"], '
            'capture_output=True, text=True)\nprint(r.returncode, r.stdout.strip(), r.stderr)'
        ),
    },
)
