"""The sandbox's exceptions: one root (`SandboxError`) in an import-free module."""

from __future__ import annotations

import ast

from tests.support.paths import ROOT


def test_every_sandbox_exception_is_a_sandbox_error_from_an_import_free_module() -> None:
    from judge.sandbox import errors

    tree = ast.parse((ROOT / 'judge' / 'sandbox' / 'errors.py').read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom))]
    classes = [v for v in vars(errors).values() if isinstance(v, type) and v.__module__ == errors.__name__]
    assert len(classes) == 8 and all(issubclass(c, errors.SandboxError) for c in classes), classes
    assert issubclass(errors.CleanupError, OSError)  # the slot server catches it as one where it forks spares
    e = errors.CleanupError(2, 'cannot remove x')
    assert (e.errno, str(e)) == (2, '[Errno 2] cannot remove x')
    from judge.sandbox.client import SandboxError  # where callers have always imported it from

    assert SandboxError is errors.SandboxError
