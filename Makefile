# Rynn Teleop: the commands a developer needs. `make setup` once, then `make test`.
VENV ?= .venv
PY := $(VENV)/bin/python

.PHONY: setup build test test-fast test-under-load bench demo train-default clean

setup:  ## create .venv, install pinned deps and Debian packages, colcon-build everything
	bash scripts/setup.sh

build:  ## rebuild the five packages into the venv after changing messages or package data
	SKIP_DEPS=1 bash scripts/setup.sh

test:  ## ruff, then the unit tests of every package and the integration tests in test/
	$(VENV)/bin/ruff check .
	$(PY) -m pytest

test-fast:  ## only the ROS-free unit tests (no DDS processes)
	$(PY) -m pytest -m "not ros and not slow"

# Pytest arguments for test-under-load, e.g. TEST_ARGS='-m ros' or a path.
TEST_ARGS ?=

test-under-load:  ## the suite while two busy processes hold both cores; must pass (no reruns: flakes are bugs)
	@$(PY) -c 'while True: pass' & first=$$!; $(PY) -c 'while True: pass' & second=$$!; \
	trap 'kill $$first $$second 2>/dev/null' EXIT INT TERM; \
	echo "busy background processes: $$first $$second"; \
	$(PY) -m pytest $(TEST_ARGS)

bench:  ## every benchmark script; each prints its figures
	@for b in benchmarks/bench_*.py; do echo "== $$b"; $(PY) $$b || exit 1; done

train-default:  ## reproduce the shipped embedded_cpu world model and its card (~1.5 h on 2 cores)
	PY=$(PY) bash scripts/train_default_model.sh

clean:
	rm -rf build log

demo:  ## the one-command demo: digital + real episode, LeRobot export, videos, summary (outputs/demo)
	$(PY) -m rynn_world.demo --out outputs/demo
