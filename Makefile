# mpiworkbench — the two commands a user needs: `make lab` and `make test`.
# Both create .venv when missing and are quick the second time (stamp files).

PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PIP    := $(BIN)/python -m pip --disable-pip-version-check -q
# Wall-clock limit (seconds) for every MPI job the test suite starts.
MPIEXEC_TIMEOUT ?= 600
export MPIEXEC_TIMEOUT

RUNTIME_STAMP := $(VENV)/.runtime-installed
TEST_STAMP    := $(VENV)/.test-installed
PROFILE_STAMP := $(VENV)/.profile-created

.PHONY: lab test install install-test profile test-unit test-mpi test-cluster test-notebooks test-browser bench clean

lab: $(PROFILE_STAMP)
	$(BIN)/mpiworkbench lab

install: $(RUNTIME_STAMP)
install-test: $(TEST_STAMP)
profile: $(PROFILE_STAMP)

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "mpiworkbench needs Python >= 3.10; got " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(PIP) install -e .
	@touch $@

$(TEST_STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(PIP) install -e '.[test]'
	@touch $@

$(PROFILE_STAMP): $(RUNTIME_STAMP)
	$(BIN)/mpiworkbench profile create --name mpi
	@touch $@

# The whole suite: unit, mpi (1, 2 and 3 ranks), cluster, notebooks, browser.
test: $(TEST_STAMP) $(PROFILE_STAMP)
	$(MAKE) --no-print-directory test-unit test-mpi test-cluster test-notebooks test-browser

test-unit: $(TEST_STAMP)
	$(BIN)/python -m pytest tests/unit

# Every MPI test file runs at 1, 2 and 3 ranks; `python -m mpi4py` turns an unhandled
# exception on any rank into MPI_Abort, and MPIEXEC_TIMEOUT bounds every job.
test-mpi: $(TEST_STAMP)
	@for n in 1 2 3; do \
	  echo "== tests/mpi at $$n rank(s) =="; \
	  $(BIN)/mpiexec -n $$n $(BIN)/python -m mpi4py -m pytest tests/mpi -p no:cacheprovider || exit 1; \
	done

test-cluster: $(TEST_STAMP)
	$(BIN)/python -m pytest tests/cluster

test-notebooks: $(TEST_STAMP)
	$(BIN)/python -m pytest tests/notebooks

test-browser: $(TEST_STAMP)
	$(BIN)/python -m pytest tests/browser

# Benchmarks are run on demand, never as part of `make test`.
bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info test-artifacts
