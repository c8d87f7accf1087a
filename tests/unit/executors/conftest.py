"""Fixtures of the executor tests."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest


@pytest.fixture
def quiet_pch_build() -> Iterator[None]:
    """Logging off below errors: the faked C++ header build fails on purpose."""
    logging.disable(logging.WARNING)
    yield
    logging.disable(logging.NOTSET)
