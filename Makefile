# The two commands that do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP)

demo: $(STAMP)
	$(BIN)/pgtasks demo

# Starts its own throwaway PostgreSQL (initdb in a temporary folder) unless
# PGTASKS_TEST_DATABASE_URL names a server; SQLite needs nothing.
test: $(DEV_STAMP)
	$(BIN)/ruff check pgtasks tests bench
	$(BIN)/python -m pytest -q

lint: $(DEV_STAMP)
	$(BIN)/ruff check pgtasks tests bench
	$(BIN)/ruff format --check pgtasks tests bench

bench: $(DEV_STAMP)
	$(BIN)/python -m bench.throughput

clean:
	rm -rf $(VENV) build *.egg-info pgtasks-demo.sqlite3*
