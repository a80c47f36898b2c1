# The two commands that do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: demo test lint bench bench-explain celery-env clean

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

# The median of 3 runs of 20,000 tasks per figure; Celery on Redis too once `make celery-env`
# has been run and redis-server is installed (apt-get install redis-server).
bench: $(DEV_STAMP)
	$(BIN)/python -m bench.throughput

# EXPLAIN ANALYZE of the claim statements with 1,000,000 queued tasks.
bench-explain: $(DEV_STAMP)
	$(BIN)/python -m bench.explain_claim

# A separate venv with Celery 5 and the redis client, for the reference figures only.
celery-env:
	$(PYTHON) -m venv .venv-celery
	.venv-celery/bin/python -m pip install --quiet 'celery[redis]>=5.3,<6'

clean:
	rm -rf $(VENV) build *.egg-info pgtasks-demo.sqlite3*
