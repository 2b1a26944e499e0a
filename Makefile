# mpiworkbench — the two commands a user needs: `make lab` and `make test`.
# Both create .venv when missing and are quick the second time (stamp files); `make test`
# also installs the Debian packages the suite needs when they are missing (as root; otherwise
# it stops and prints the one command to run).

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
PROXY_STAMP   := $(VENV)/.proxy-installed
LABEXT_STAMP  := $(VENV)/.labextension-built

# Debian packages for the cluster tier (a private single-node Slurm: slurm-wlm, munge) and the
# browser tier (chromium), Node.js for JupyterHub's proxy (`mpiworkbench hub`, the cluster tier's
# class), Debian's Open MPI and MPICH standing in for a cluster's MPI (`site`, the notebook tier's
# tests/notebooks/test_site_mpi.py): each program the suite runs, and the package that brings it. Only the packages of
# missing programs are installed: a machine's own Node.js (NodeSource's, say, which provides npm
# and conflicts with Debian's npm package) is kept as it is.
SYSTEM_NEEDS := chromium:chromium slurmctld:slurm-wlm slurmd:slurm-wlm munged:munge sinfo:slurm-wlm \
                squeue:slurm-wlm sbatch:slurm-wlm ip:iproute2 nsenter:util-linux unshare:util-linux \
                node:nodejs npm:npm openssl:openssl ruby:ruby \
                mpiexec.openmpi:openmpi-bin mpicc.openmpi:libopenmpi-dev mpiexec.mpich:mpich mpicc.mpich:libmpich-dev

.PHONY: bytecode lab labextension node test test-full test-setup test-quick docs screenshots install install-test install-proxy install-ecosystem install-mpi4jax install-pympdata-mpi build-mpi4jax install-mpis site-venvs profile system-packages test-unit test-mpi test-cluster test-notebooks test-browser bench clean

# JupyterLab gets none of the test suite's settings: a wall-clock limit in its environment would
# reach every kernel, and every MPI world a kernel starts would die when it expired.
LAB_UNSET := MPIEXEC_TIMEOUT

lab: $(PROFILE_STAMP) $(LABEXT_STAMP)
	env $(addprefix -u ,$(LAB_UNSET)) $(BIN)/mpiworkbench lab

install: $(RUNTIME_STAMP)
install-test: $(TEST_STAMP) $(LABEXT_STAMP)
labextension: $(LABEXT_STAMP)
install-proxy: $(PROXY_STAMP)
profile: $(PROFILE_STAMP)

$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 10) else "mpiworkbench needs Python >= 3.10; got " + sys.version.split()[0])'
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip setuptools wheel

# The project installed editable, built with the venv's own setuptools and wheel (upgraded when
# the venv was made): without build isolation pip makes no throwaway environment for each install
# (the set-up 171 s -> 138 s with the test extras in one install: docs/measurements.md). Such a
# build writes no mpiworkbench.egg-info into the checkout; one an older install left there would
# stand for the installed metadata wherever the checkout is on sys.path: it goes.
EDITABLE := install --no-build-isolation -e

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	rm -rf mpiworkbench.egg-info
	$(PIP) $(EDITABLE) '.[mpich]'
	@touch $@

# The test extras in one install (one resolution, one build), then what pip cannot do by itself.
$(TEST_STAMP): pyproject.toml $(RUNTIME_STAMP)
	$(PIP) $(EDITABLE) '.[test,ecosystem,mpi4jax]'
	$(MAKE) --no-print-directory -j1 install-pympdata-mpi build-mpi4jax install-mpis
	@touch $@

# JupyterHub's proxy (`mpiworkbench hub`) from npm, into the venv's node/ prefix, where
# mpiworkbench.course.hub finds it; Node.js itself comes with the system packages.
$(PROXY_STAMP): | system-packages $(RUNTIME_STAMP)
	npm install --silent --no-fund --no-audit --prefix $(VENV)/node configurable-http-proxy
	@touch $@

# The lab's MPI world sidebar (mpiworkbench/lab): its server extension enabled for the venv's
# Jupyter servers (a jupyter_server_config.d file, as `jupyter server extension enable --sys-prefix`
# writes), and its lab extension built from TypeScript (mpiworkbench/lab/extension) by JupyterLab's
# builder against the core of the venv's JupyterLab, as a prebuilt federated extension, then
# copied where JupyterLab loads it. The build happens in a copy of the sources in the venv
# (LABEXT_BUILD; the builder writes beside it, ../labextension), so node_modules (~400 MB) never
# sits in the package; its packages come from npm through jlpm with the committed yarn.lock,
# reinstalled only when package.json or yarn.lock change, and nothing is rebuilt while no source
# changed (the stamp). Node.js (Debian's) is installed as root when missing; otherwise the one
# command is printed. A changed dependency: run `jlpm install` in $(LABEXT_BUILD) after copying
# package.json there, and copy its yarn.lock back into $(LABEXT_SRC).
LABEXT_NAME    := mpiworkbench-world-sidebar
LABEXT_SRC     := mpiworkbench/lab/extension
LABEXT_OUT     := mpiworkbench/lab/labextension
LABEXT_BUILD   := $(VENV)/lab-extension-build/extension
LABEXT_DEPS    := $(LABEXT_SRC)/package.json $(LABEXT_SRC)/yarn.lock $(LABEXT_SRC)/.yarnrc.yml
LABEXT_SOURCES := $(LABEXT_DEPS) $(LABEXT_SRC)/tsconfig.json $(wildcard $(LABEXT_SRC)/src/*.ts) $(wildcard $(LABEXT_SRC)/style/*.css)
LABEXT_PATH    := PATH="$(abspath $(VENV)/bin):$$PATH"
SERVER_CONFIG  := $(VENV)/etc/jupyter/jupyter_server_config.d

node:
	@if ! command -v node >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "node missing; installing nodejs"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs >/dev/null; \
	  else \
	    echo "The lab's world sidebar is built with Node.js, which is missing. Install it with:" >&2; \
	    echo "  sudo sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y nodejs'" >&2; \
	    exit 1; \
	  fi; \
	fi

# (the venv first only while it has no jlpm: an up-to-date build asks nothing of the venv's stamps)
$(LABEXT_BUILD)/.installed: $(LABEXT_DEPS) | node $(if $(wildcard $(VENV)/bin/jlpm),,$(RUNTIME_STAMP))
	mkdir -p $(LABEXT_BUILD)
	cp $(LABEXT_DEPS) $(LABEXT_BUILD)/
	cd $(LABEXT_BUILD) && $(LABEXT_PATH) jlpm install --immutable --mode=skip-build >jlpm-install.log 2>&1 \
	  || { tail -n 30 jlpm-install.log >&2; exit 1; }
	@touch $@

$(LABEXT_STAMP): $(LABEXT_SOURCES) $(LABEXT_BUILD)/.installed
	rm -rf $(LABEXT_BUILD)/src $(LABEXT_BUILD)/style $(LABEXT_BUILD)/lib $(LABEXT_BUILD)/../labextension
	cp -R $(LABEXT_SRC)/src $(LABEXT_SRC)/style $(LABEXT_SRC)/tsconfig.json $(LABEXT_BUILD)/
	cd $(LABEXT_BUILD) && $(LABEXT_PATH) jlpm exec tsc
	cd $(LABEXT_BUILD) && $(LABEXT_PATH) jupyter-builder build \
	  --core-package-file="$$($(abspath $(VENV)/bin)/python -c 'import jupyterlab, os; print(os.path.join(os.path.dirname(jupyterlab.__file__), "staging", "package.json"))')" . \
	  >build.log 2>&1 || { tail -n 30 build.log >&2; exit 1; }
	rm -rf $(LABEXT_OUT) $(VENV)/share/jupyter/labextensions/$(LABEXT_NAME)
	cp -R $(LABEXT_BUILD)/../labextension $(LABEXT_OUT)
	mkdir -p $(VENV)/share/jupyter/labextensions $(SERVER_CONFIG)
	cp -R $(LABEXT_OUT) $(VENV)/share/jupyter/labextensions/$(LABEXT_NAME)
	cp mpiworkbench/lab/jupyter-config/mpiworkbench.json $(SERVER_CONFIG)/mpiworkbench.json
	@touch $@

# The MPI implementations beside the venv's own MPICH (Open MPI, Intel MPI), each into a prefix
# of its own under $(VENV)/mpi/ (their wheels overwrite each other's files in one venv); the
# packages and versions are registered once, in mpiworkbench/core/implementations.py.
install-mpis: $(RUNTIME_STAMP)
	$(BIN)/python -m mpiworkbench.core.implementations install openmpi impi

# Venvs whose mpi4py is built from source against Debian's Open MPI and MPICH, in .venv/site/ (the
# suite's stand-ins for a cluster's MPI; tests/site_venvs.py): quick when they are there, about two
# minutes the first time (the builds, at -O0, are cached in ~/.cache/mpiworkbench).
site-venvs: $(RUNTIME_STAMP) system-packages
	$(BIN)/python -m tests.site_venvs build

# A JupyterLab environment with nothing of the workbench (.venv/lab-only: jupyterlab and ipywidgets
# only, at the main venv's versions): a centre's lab, for the browser tier's test of the lab part
# (tests/lab_venv.py; about a minute the first time, from pip's cache).
LAB_ONLY_STAMP := $(VENV)/lab-only/.built
$(LAB_ONLY_STAMP): $(RUNTIME_STAMP)
	$(BIN)/python -m tests.lab_venv build

# The optional extras beside `.[ecosystem]` and `.[mpi4jax]` that pip cannot resolve by itself
# (pyproject.toml says why): PyMPDATA-MPI without its stale pins, and mpi4jax built from source
# with the venv's mpicc, without build isolation (jax and nanobind come first), and with CUDA_PATH
# an empty directory so that its setup.py builds the CPU bridge only (a CUDA directory without
# headers, as some machines have in /usr/local/cuda, otherwise breaks the build).
PYMPDATA_MPI := pympdata-mpi==1.7.2
MPI4JAX      := mpi4jax==0.9.1.post2
install-ecosystem: $(RUNTIME_STAMP)
	$(PIP) $(EDITABLE) '.[ecosystem]'
	$(MAKE) --no-print-directory install-pympdata-mpi
install-mpi4jax: $(RUNTIME_STAMP)
	$(PIP) $(EDITABLE) '.[mpi4jax]'
	$(MAKE) --no-print-directory build-mpi4jax
install-pympdata-mpi:
	$(PIP) install --no-deps '$(PYMPDATA_MPI)'
build-mpi4jax:
	@nocuda=$$(mktemp -d) && \
	MPI4JAX_BUILD_MPICC="$(abspath $(BIN))/mpicc" CUDA_PATH="$$nocuda" \
	  $(PIP) install --no-build-isolation --no-deps --no-binary mpi4jax '$(MPI4JAX)'; \
	rc=$$?; rmdir "$$nocuda"; exit $$rc

# The package's and the tests' byte-code, written at the suite's set-up (compileall: about a second;
# only what changed is written again): every process of the suite imports them from this tree (an
# editable install), and where PYTHONDONTWRITEBYTECODE is set (some machines set it for everything)
# none writes its own, so each engine, kernel and command compiled what it imported, every time
# (about 0.3 CPU-s for the client alone).
bytecode:
	@$(BIN)/python -m compileall -q -j 0 mpiworkbench tests benchmarks docs

$(PROFILE_STAMP): $(RUNTIME_STAMP)
	$(BIN)/mpiworkbench profile create --name mpi
	@touch $@

# A quick check each time (no stamp: a removed package is noticed); apt-get runs only when
# something is missing.
system-packages:
	@export PATH="$$PATH:/usr/sbin:/sbin"; missing=""; packages=""; \
	for need in $(SYSTEM_NEEDS); do prog=$${need%%:*}; package=$${need#*:}; \
	  if ! command -v $$prog >/dev/null 2>&1; then missing="$$missing $$prog"; \
	    case " $$packages " in *" $$package "*) ;; *) packages="$$packages $$package";; esac; fi; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ]; then \
	  echo "missing:$$missing; installing$$packages"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$packages >/dev/null; \
	else \
	  echo "The test suite needs Debian packages that are missing (programs:$$missing). Install them with:" >&2; \
	  echo "  sudo sh -c 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y$$packages'" >&2; \
	  exit 1; \
	fi

# The whole suite: unit, mpi (1, 2 and 3 ranks), cluster, notebooks, browser. The browser tier's
# documentation site renders the notebooks the notebook tier executed (docs/build.py --stored),
# so the notebook tier comes before it.
# Every run ends with its time table (tests/timetable.py): each tier's wall time and the run's ten
# slowest tests, printed and kept in the test artifacts' time-table.txt, also when a tier failed.
# The unit tier first, beside the MPI tier at one rank (one process: nothing of it busy-polls,
# and it takes the core the unit tier leaves), then the MPI tier at 2 and 3 ranks and under the
# other libraries alone (their ranks busy-poll: beside other work each message waits for a time
# slice, and run beside the unit and notebook tiers the MPI tier took 1,173 s instead of 360:
# docs/measurements.md). Then two lanes side by side, each line of output prefixed with its lane:
# the cluster tier in one, the notebook then browser tiers in the other (most of the cluster and
# browser tiers' time is waiting). The site venvs come before the lanes: both use them (the
# notebook tier, and the cluster tier's tests/cluster/test_job_sbatch.py).
test: test-setup
	@$(TIMETABLE) begin
	@$(TIMETABLE) lanes unit='$(MAKE) --no-print-directory test-unit' \
	                    mpi-1='$(MAKE) --no-print-directory test-mpi MPI_RANKS=1 TIER_MPIS=' && \
	  $(MAKE) --no-print-directory test-mpi MPI_RANKS='2 3' && \
	  $(TIMETABLE) lanes cluster='$(MAKE) --no-print-directory test-cluster' \
	                     notebooks+browser='$(MAKE) --no-print-directory test-notebooks test-browser'; \
	  rc=$$?; $(TIMETABLE) show; exit $$rc

# The suite's full form (tests/costs.py): what `make test` proves, some of it again many times or
# once more (docs/architecture.md, "The suite's two forms"; a few minutes longer: docs/measurements.md).
# `make test` is the fast form, the one CI runs.
test-full:
	@MPIWORKBENCH_TEST_FULL=1 $(MAKE) --no-print-directory test

# What the suite needs installed. Once the runtime is, the test extras, the site venvs, the
# lab-only venv, the lab extension's npm packages and the hub's proxy are made side by side (each
# waits mostly for an index or a build: docs/measurements.md, "The machine is busy in every
# tier"); then the lab extension's build and the profile, once nothing installs into .venv.
# The system packages come first, alone (apt-get takes one lock); the pip installs into .venv
# stay one after the other (TEST_STAMP's sub-make runs with -j1).
SETUP_JOBS ?= 4
test-setup: system-packages $(RUNTIME_STAMP)
	@$(MAKE) --no-print-directory --output-sync=target -j$(SETUP_JOBS) $(TEST_STAMP) site-venvs $(LAB_ONLY_STAMP) $(PROXY_STAMP) $(LABEXT_BUILD)/.installed
	@$(MAKE) --no-print-directory $(LABEXT_STAMP) $(PROFILE_STAMP) bytecode

# A developer's loop (a few minutes): the unit tier and the MPI tier at 2 ranks under the venv's
# MPICH only. `make test` is what CI runs.
test-quick: $(TEST_STAMP)
	@$(TIMETABLE) begin
	@$(MAKE) --no-print-directory test-unit test-mpi MPI_RANKS=2 TIER_MPIS=; \
	  rc=$$?; $(TIMETABLE) show; exit $$rc

# Each tier ends with its slowest tests and their times (CI has 90 minutes for the whole suite).
DURATIONS ?= --durations=15
# The tiers run through tests/timetable.py: `tier` runs a pytest tier on TEST_WORKERS processes
# (pytest-xdist; a test file's tests stay on one worker, so module fixtures are built once), then
# its leftover checks (test_zz_*.py) alone, after everything else; `run` times any command.
# TEST_WORKERS=1 runs every tier in one process, as before.
TIMETABLE    := $(BIN)/python -m tests.timetable
TEST_WORKERS ?= 2
# The tiers that run in lanes report one line per test (a lane's output is passed on line by line).
LANE_REPORT  ?= -v

test-unit: $(TEST_STAMP) $(LABEXT_STAMP)
	$(TIMETABLE) tier unit --workers $(TEST_WORKERS) -- tests/unit $(DURATIONS)

# Every MPI test file runs at 1, 2 and 3 ranks; `python -m mpi4py` turns an unhandled
# exception on any rank into MPI_Abort, and MPIEXEC_TIMEOUT bounds every job. The ranks run
# with the MPI interposer preloaded, as engines do (tests/mpi/test_trace.py needs it).
# Then at 2 ranks under Open MPI and Intel MPI (their prefixes in .venv/mpi, installed by
# install-mpis), through python -m mpiworkbench.core.launch: each one's own mpiexec and
# environment, the world size checked, what a failed job's ranks leave removed (~50 s and ~30 s).
MPI_RANKS ?= 1 2 3
TIER_MPIS ?= openmpi impi
test-mpi: $(TEST_STAMP)
	@for n in $(MPI_RANKS); do \
	  echo "== tests/mpi at $$n rank(s) =="; \
	  $(TIMETABLE) run mpi -- $(BIN)/mpiexec $$($(BIN)/python -m mpiworkbench.trace.library) -n $$n $(BIN)/python -m mpi4py -m pytest tests/mpi -p no:cacheprovider || exit 1; \
	done
	@for impl in $(TIER_MPIS); do \
	  echo "== tests/mpi at 2 ranks under $$impl =="; \
	  $(TIMETABLE) run mpi -- $(BIN)/python -m mpiworkbench.core.launch --mpi $$impl -n 2 $$(MPIWORKBENCH_MPI=$$impl $(BIN)/python -m mpiworkbench.trace.library) \
	    -- $(BIN)/python -m mpi4py -m pytest tests/mpi -p no:cacheprovider || exit 1; \
	done

test-cluster: $(TEST_STAMP) system-packages $(PROXY_STAMP)
	$(TIMETABLE) tier cluster --workers $(TEST_WORKERS) -- tests/cluster $(DURATIONS) $(LANE_REPORT)

test-notebooks: $(TEST_STAMP) site-venvs
	$(TIMETABLE) tier notebooks --workers $(TEST_WORKERS) -- tests/notebooks $(DURATIONS) $(LANE_REPORT)

test-browser: $(TEST_STAMP) $(LABEXT_STAMP) system-packages $(PROXY_STAMP) $(LAB_ONLY_STAMP)
	$(TIMETABLE) tier browser --workers $(TEST_WORKERS) -- tests/browser $(DURATIONS) $(LANE_REPORT)

# The documentation site, offline, warnings as errors, each notebook with the outputs of its run:
# those the notebook tier stored for these sources when it has run, or else executed into the site
# (docs/build.py says how; --execute always executes); then open docs/_build/html/index.html.
docs: $(TEST_STAMP)
	$(BIN)/python docs/build.py --out docs/_build/html

# The README's and the site's picture of the control panel, taken by the browser tier's test of
# 00_start_here (JupyterLab in Chromium) and written to docs/screenshot.png (the whole file runs:
# its second test shuts the kernel down and checks that the cluster went with it). Writing that
# picture into the working tree is the point here, so the suite's check that tests leave the tree
# alone is off. docs/speedup_panel.png is the speedup panel after a traced sweep (its browser
# test), docs/speedup_factors.png (docs/tracing.md) the same figure for a traced wave sweep at
# 1-3 ranks on this machine, drawn by the CLI that the panel's driver runs. docs/world_sidebar_bound_rank1_stopped.png
# (docs/debugging.md) is the MPI world sidebar and JupyterLab's Debugger on rank 1 stopped in a %%px --debug cell. docs/hub_class_lab.png
# and docs/hub_time_limit.png (docs/course_on_cluster.md) are a student's JupyterLab in the class on the
# simulated cluster and its last cell a minute before the job's time limit (as root).
screenshots: $(TEST_STAMP) system-packages
	MPIWORKBENCH_TREE_CHECK=0 MPIWORKBENCH_SCREENSHOT_DIR=$(abspath docs) $(BIN)/python -m pytest tests/browser/test_start_here.py tests/browser/test_widget_speedup.py tests/browser/test_world_sidebar.py tests/browser/test_hub_class.py
	$(BIN)/mpiworkbench speedup wave --np 1,2,3 --mesh 65 --steps 10 --repeats 3 --trace --plot docs/speedup_factors.png

# Benchmarks are run on demand, never as part of `make test`.
bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/run_all.py

clean:
	rm -rf $(VENV) build *.egg-info docs/_build
