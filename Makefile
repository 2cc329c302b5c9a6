# Continuum — every entry point. `make demo` and `make test` work from a fresh clone:
# they create .venv, install everything (CPU PyTorch first), and start the embedded servers.
VENV    ?= .venv
PY      := $(VENV)/bin/python
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed-$(shell cksum pyproject.toml | cut -d' ' -f1)
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install demo test test-faults test-cluster test-all bench bench-million eval soak lint format up down clean

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check torch==2.13.0
	$(PY) -m pip install --quiet --disable-pip-version-check -e '.[dev]'
	rm -f $(VENV)/.installed-*
	touch $@

install: $(STAMP)

demo: install ## Servers up, migrate, worker, sample conversations, recall, stop.
	$(BIN)/continuum demo

test: install ## The layer contract, then the default suite (fast), against real embedded servers and workers.
	$(BIN)/lint-imports
	@command -v node >/dev/null && command -v npm >/dev/null || echo "node/npm not found: the TypeScript client's tests are skipped (apt-get install nodejs npm)"
	$(BIN)/pytest -m "not slow and not cluster" -q

test-faults: install ## Slow fault-injection tests: killed workers, restarted servers.
	$(BIN)/pytest -m "slow and not cluster" -q

test-cluster: install ## Many hosts on one machine (root: network namespaces): worker hosts killed, frozen, cut off; Redis failover; a Postgres standby.
	$(BIN)/pytest -m cluster -q -s tests/cluster

bench: install ## Benchmarks against real servers; tables printed, saved to bench/results/.
	$(PY) -m bench

bench-million: install ## Recall latency at 10k, 100k and 1M memories (~10 min, mostly the 1M HNSW build).
	$(PY) -m bench --only recall --million

eval: install ## Retrieval quality on the LoCoMo dev split (CONTINUUM_EVAL_LOCOMO; skipped if absent).
	$(PY) -m bench.eval

soak: install ## 30 min (CONTINUUM_SOAK_MINUTES) of mixed traffic, a fault a minute, then every check.
	$(PY) -m bench.soak

test-all: install
	$(BIN)/pytest -q

lint: install
	$(BIN)/lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: install
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

up: install
	$(BIN)/continuum dev up

down: install
	$(BIN)/continuum dev down

clean: down
	rm -rf .continuum .continuum-test
