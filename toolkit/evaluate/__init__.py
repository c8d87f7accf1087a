"""Offline evaluation: ``python -m toolkit.evaluate in.jsonl -o out.jsonl`` (and ``--math``)."""
