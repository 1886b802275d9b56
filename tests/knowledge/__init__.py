"""Tests of the Facts issue: extraction sweep, entities, fact lifecycle, conflicts, dedup, graph expansion.

A package so that `tests/knowledge/test_api.py` does not collide with `tests/api/test_api.py` under pytest's default
import mode.
"""
