"""Benchmarks and the judged evaluation, run on purpose: `python -m bench.<name>` from the repository root."""
