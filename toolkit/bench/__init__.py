"""Benchmarks against a running gateway: ``python -m toolkit.bench <scenario>`` (not in the client wheel)."""
