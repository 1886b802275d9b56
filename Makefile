# Tasks of the repository. `make check test` is what .ci/run does on a fresh clone.
PY := .venv/bin/python
PIP := .venv/bin/pip

.PHONY: install check lint format types test test-all bench lock

install: .venv/bin/python  ## the development environment, pinned by requirements.lock
	$(PIP) install -c requirements.lock -e ".[dev]"

.venv/bin/python:
	python3 -m venv .venv

check: lint types  ## lint, format and types

lint:
	.venv/bin/ruff check src tests bench
	.venv/bin/ruff format --check src tests bench

format:
	.venv/bin/ruff format src tests bench
	.venv/bin/ruff check --fix src tests bench

types:
	.venv/bin/mypy

test:  ## the default run (long reliability and evaluation runs excluded)
	$(PY) -m pytest

test-all:  ## the default run, then the slow one
	$(PY) -m pytest
	$(PY) -m pytest -m slow

bench:  ## the benchmarks at their documented sizes; figures go to bench/RESULTS.md
	$(PY) -m bench.mine --files 5000 --runs 3 --write
	$(PY) -m bench.search_stages --files 6000 --queries 100 --write
	$(PY) -m bench.search --drawers 100000 --queries 200 --vectors synthetic --store pgserver --write
	$(PY) -m bench.judged

lock:  ## re-pin every dependency of .[dev] (the package itself keeps version ranges)
	.venv/bin/uv pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements.lock
