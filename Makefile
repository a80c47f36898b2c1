# The two commands that do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
# The dashboard tests drive Debian's chromium through chromium-driver (apt-get, as root).
BROWSER_STAMP := $(VENV)/.browser
# Debian's PgBouncer, for the suites run through it in transaction pooling mode.
PGBOUNCER_STAMP := $(VENV)/.pgbouncer
# Debian's redis-server and the real Celery in a venv of its own: the broker `pgtasks
# import-celery` reads, fed by real Celery producers (tests/migration).
REDIS_STAMP := $(VENV)/.redis
CELERY_VENV_STAMP := .venv-celery/.installed
# pgqueuer in a venv of its own: the peer `make bench` measures in the same run (bench/peers.py).
PGQUEUER_VENV_STAMP := .venv-pgqueuer/.installed

.PHONY: demo test test-setup test-lint test-floors lint failover sustained fleet bench bench-asyncio bench-tracing bench-delays bench-explain bench-dashboard celery-env loadtest soak clean dashboard-screenshots

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP)

$(BROWSER_STAMP): | $(BIN)/python
	command -v chromium >/dev/null && command -v chromedriver >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver)
	touch $@

# (after the browser's: the apt-get installs take turns at dpkg's lock when make runs them with -j)
$(PGBOUNCER_STAMP): | $(BIN)/python $(BROWSER_STAMP)
	test -x /usr/sbin/pgbouncer || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pgbouncer)
	touch $@

$(REDIS_STAMP): | $(BIN)/python $(PGBOUNCER_STAMP)
	command -v redis-server >/dev/null || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server)
	touch $@

$(CELERY_VENV_STAMP):
	$(MAKE) --no-print-directory celery-env
	touch $@

$(PGQUEUER_VENV_STAMP):
	$(PYTHON) -m venv .venv-pgqueuer
	.venv-pgqueuer/bin/python -m pip install --quiet 'pgqueuer>=0.19' asyncpg
	touch $@

demo: $(STAMP)
	$(BIN)/pgtasks demo

PGBOUNCER_SUITES := tests/integration/test_engine.py tests/integration/test_canvas_links.py \
	tests/integration/sysdb tests/compat/test_canvas.py \
	tests/acceptance/test_crash_recovery.py tests/acceptance/test_prefork.py tests/acceptance/test_beat.py

WORKER_ROLE_SUITES := tests/integration/sysdb tests/integration/test_canvas_links.py \
	tests/integration/test_schedules_store.py tests/integration/test_schedules_beat.py \
	tests/integration/test_engine.py

# Starts its own throwaway PostgreSQL (initdb in a temporary folder) unless
# PGTASKS_TEST_DATABASE_URL names a server; SQLite needs nothing. Two pytest processes (xdist),
# each with its own server: most tests wait on subprocesses and the database, so the suite
# takes about half the time of one process on two cores.
# The set-up (and the lint) runs first, its independent installs at once.
test:
	$(MAKE) --no-print-directory -j4 --output-sync=target test-setup
	@# Compiled once here: the passes start hundreds of worker, beat and command processes
	@# from this checkout (and the test apps they import), and where PYTHONDONTWRITEBYTECODE
	@# is set (as in CI) each compiled every module afresh. pytest rewrites test modules itself.
	$(BIN)/python -m compileall -q -j 0 pgtasks pgtasks_celery_hook.py tests bench loadtest examples
	$(BIN)/python -m pytest -q -n 3
	@echo "The system database suites again, connected as the least-privilege worker role:"
	PGTASKS_TEST_AS_ROLE=worker $(BIN)/python -m pytest -q -n 3 -p no:cacheprovider -k postgres $(WORKER_ROLE_SUITES)
	@echo "The storage, engine, canvas, worker, beat and crash suites again, through PgBouncer (transaction pooling):"
	PGTASKS_TEST_THROUGH=pgbouncer $(BIN)/python -m pytest -q -n 3 -p no:cacheprovider -k "not sqlite" $(PGBOUNCER_SUITES)
	$(MAKE) --no-print-directory test-floors

# Everything the passes of `make test` need, and its lint: run with -j, the venvs (dev,
# Celery's, the floors') install side by side, and the lint runs once the dev venv is there.
test-setup: $(DEV_STAMP) $(BROWSER_STAMP) $(PGBOUNCER_STAMP) $(REDIS_STAMP) $(CELERY_VENV_STAMP) $(FLOORS_STAMP) test-lint

test-lint: $(DEV_STAMP)
	$(BIN)/ruff check pgtasks pgtasks_celery_hook.py setup.py tests bench loadtest examples
	$(BIN)/mypy

# Part of the suite (storage, engine, links, schedules, workers, beat, crash recovery) in a venv
# holding the lowest versions pyproject.toml allows, so the floors stay true: the suites that
# drive the database driver, its pool and croniter, not every integration test again.
FLOOR_SUITES := tests/integration/sysdb tests/integration/test_engine.py tests/integration/test_canvas_links.py \
	tests/integration/test_schedules_store.py tests/integration/test_schedules_beat.py \
	tests/acceptance/test_crash_recovery.py tests/acceptance/test_beat.py
FLOORS_STAMP := .venv-floors/.installed

$(FLOORS_STAMP): pyproject.toml tests/support/floors.py | $(BIN)/python
	rm -rf .venv-floors
	$(PYTHON) -m venv .venv-floors
	$(BIN)/python -m tests.support.floors > .venv-floors/floors.txt
	.venv-floors/bin/python -m pip install --quiet -r .venv-floors/floors.txt 'pytest>=8' pytest-xdist 'hypothesis>=6'
	.venv-floors/bin/python -m pip install --quiet --no-deps -e .
	touch $@

test-floors: $(FLOORS_STAMP)
	@echo "Part of the suite at the dependency floors: $$(tr '\n' ' ' < .venv-floors/floors.txt)"
	.venv-floors/bin/python -m pytest -q -n 3 -p no:cacheprovider $(FLOOR_SUITES)

lint: $(DEV_STAMP)
	$(BIN)/ruff check pgtasks pgtasks_celery_hook.py setup.py tests bench loadtest examples
	$(BIN)/ruff format --check pgtasks pgtasks_celery_hook.py setup.py tests bench loadtest
	$(BIN)/mypy

# The median of 3 runs of 20,000 tasks per figure, beside the raw SQL ceiling and pgqueuer
# measured in the same run, then every target as a ratio; Celery on Redis too once `make
# celery-env` has been run and redis-server is installed (apt-get install redis-server).
bench: $(DEV_STAMP) $(PGQUEUER_VENV_STAMP)
	$(BIN)/python -m bench.throughput $(ARGS)

# How late countdown tasks, retries and refills under a global limit start on an idle worker.
bench-delays: $(DEV_STAMP)
	$(BIN)/python -m bench.delay_precision

# EXPLAIN ANALYZE of the claim statements with 1,000,000 queued tasks, and of durable waiting's.
bench-explain: $(DEV_STAMP)
	$(BIN)/python -m bench.explain_claim
	$(BIN)/python -m bench.explain_waiting

# Locust producers against W workers for T seconds, a drain, one summary with the invariant
# check (see loadtest/run.py): make loadtest ARGS="--workers 2 --time 30 --users 20 --fault kill"
loadtest: $(DEV_STAMP)
	$(BIN)/python -m loadtest.run $(ARGS)

# One hour at 1,000 tasks/s (no-op, three steps, countdowns, retries) with retention on: sizes,
# dead rows, the claim's time and start latency every minute, then the ledger check
# (loadtest/sustained.py; figures in docs/performance.md). Shorter: make sustained ARGS="--minutes 10"
sustained: $(DEV_STAMP)
	$(BIN)/python -m loadtest.sustained --out sustained-report.md $(ARGS)

# Random faults (kill -9, SIGSTOP, PostgreSQL restarts, crash points) against 3 workers while a
# producer enqueues, then the invariant report (docs/reliability.md). Default 5 minutes:
# make soak ARGS="--minutes 10 --seed 2"
soak: $(DEV_STAMP)
	$(BIN)/python -m tests.faults.soak $(ARGS)

# A separate venv with Celery 5, the redis client and locust, for the reference figures only.
celery-env:
	$(PYTHON) -m venv .venv-celery
	.venv-celery/bin/python -m pip install --quiet 'celery[redis]>=5.3,<6' 'locust>=2.20'

clean:
	rm -rf $(VENV) .venv-floors .venv-pgqueuer .venv-realapps build *.egg-info pgtasks-demo.sqlite3*

# The asyncio pool: 10,000 one-second sleepers on -P asyncio -c 5000, async vs sync drain rates,
# and get_async() vs get() latency (docs/async.md).
bench-asyncio: $(DEV_STAMP)
	$(BIN)/python -m bench.asyncio_pool $(ARGS)

# Failover onto a promoted standby after 30 s without a primary, with a producer and two
# workers running: the counts for a synchronous and an asynchronous standby (docs/production.md).
# The synchronous case is also a test of `make test` (tests/faults/test_failover.py).
failover: $(DEV_STAMP)
	$(BIN)/python -m tests.faults.failover $(ARGS)
	$(BIN)/python -m tests.faults.failover --async $(ARGS)
	$(BIN)/python -m tests.faults.failover --async --lag 2 $(ARGS)

# What the OpenTelemetry hooks cost per task (send, run, one step), with and without a provider.
bench-tracing: $(DEV_STAMP)
	$(BIN)/python -m bench.tracing_overhead

# 16 worker processes x -c 8 draining 100,000 no-op tasks from one database: throughput,
# connections held, lock waits (bench/fleet.py; figures in docs/performance.md).
fleet: $(DEV_STAMP)
	$(BIN)/python -m bench.fleet $(ARGS)

# Render time of every dashboard page and API endpoint with 10 million finished tasks.
bench-dashboard: $(DEV_STAMP)
	$(BIN)/python -m bench.dashboard_pages $(ARGS)

# Screenshots of every dashboard page for docs/dashboard.md (the browser tests take them).
dashboard-screenshots: $(DEV_STAMP) $(BROWSER_STAMP)
	PGTASKS_SCREENSHOTS=docs/dashboard $(BIN)/python -m pytest -q -p no:cacheprovider tests/acceptance/test_dashboard.py
