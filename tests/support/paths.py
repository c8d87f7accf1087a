"""Where the checkout is, for tests that read its files (standard library only)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The repository's root directory."""
