# make run   set up on embedded defaults (SQLite, filesystem broker), import the sample data and the demo (its
#            claims measured on this machine's CPU once, demo/local.py),
#            serve + the web tier's worker (with the periodic sweep) + a rerun worker for this machine
# make test  the whole test suite (set DATABASE_URL / REDIS_URL to run it on PostgreSQL and Redis)
# make check lint, format, types and migrations

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The full data pack when it sits beside the checkout, else the sample shipped in tests/data.
DATA ?= $(or $(KERNELINDEX_DATA),$(wildcard ../shared/data),tests/data)
SEED := tests/seed/run-01a0352b.manifest.json
# The demo's claims: measured on this machine's CPU once (demo/local.py), or DEMO_CLAIMS=committed, the committed
# runs (class cpu, which a worker serves when KERNELINDEX_HARDWARE_CLASS=cpu says so).
DEMO_CLAIMS ?= measured
VAR := $(or $(KERNELINDEX_VAR_DIR),var)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: run setup sandbox serve worker rerun-worker beat test check clean harness-suite

# The web app's requirements, the development tools, and the harness's (PyTorch) for reruns; on a host with an
# NVIDIA driver, the harness's CUDA requirements too (CUPTI, with which the kernel's calls are timed).
HARNESS_REQUIREMENTS := $(if $(shell command -v nvidia-smi),requirements-harness-cuda.txt,requirements-harness.txt)
$(VENV)/.installed: requirements.txt requirements-dev.txt requirements-harness.txt requirements-harness-cuda.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt -r $(HARNESS_REQUIREMENTS)
	touch $@

# Reruns run solutions in bubblewrap, from the distribution's packages. As root it is installed here;
# otherwise the command to run is printed, and until then reruns fail with that reason.
sandbox:
	@command -v bwrap >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq bubblewrap >/dev/null; \
	  else echo "Reruns need bubblewrap: sudo apt-get install bubblewrap"; fi; }

# VENV=path uses an environment as it is (as `serve` does); only the default .venv is installed here.
setup: $(if $(filter .venv,$(VENV)),$(VENV)/.installed) sandbox
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py import_runs $(DATA)
	$(BIN)/python demo/local.py $(if $(filter committed,$(DEMO_CLAIMS)),--committed)
	$(BIN)/python manage.py import_runs demo/definitions demo/solutions $(VAR)/demo/reported.jsonl
	$(BIN)/python manage.py import_runs --redigest $(SEED)

# The web tier's worker (with the periodic sweep, -B) and a rerun worker with this machine's own key
# (var/worker-local.key, made on first start) run beside the server; Ctrl-C stops all three within seconds
# (deploy/run.py). Permalinks and citations name http://HOST:PORT unless SITE_URL is set.
run: setup
	@echo "KernelIndex on http://$(HOST):$(PORT)/ (Ctrl-C stops the server and the workers)"
	exec $(BIN)/python deploy/run.py --host $(HOST) --port $(PORT)

# Production: nginx on HOST:PORT takes the clients (slow ones too) and serves /static/, gunicorn sits behind it
# on a unix socket (deploy/serve.py); Ctrl-C or SIGTERM stops both. It imports nothing: import_runs does.
# VENV=path uses an environment as it is; only the default .venv is created and kept up to date here.
serve: $(if $(filter .venv,$(VENV)),$(VENV)/.installed)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	exec $(BIN)/python deploy/serve.py --host $(HOST) --port $(PORT)

# The web tier's worker, beside the site: the results queue (the collector) and the default queue. No kernel.
worker: $(VENV)/.installed
	$(BIN)/celery -A kernelindex worker --loglevel=info

# A GPU host's rerun worker: the harness's requirements alone (no web app, no database), the sandbox, and
# python -m harness.worker, which reads KERNELINDEX_BROKER_URL, KERNELINDEX_WORKER_KEY_FILE (the file
# `manage.py worker_key create` printed) and KERNELINDEX_HARDWARE_CLASS (default: the key's one class).
$(VENV)/.installed-harness: requirements-harness.txt requirements-harness-cuda.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r $(HARNESS_REQUIREMENTS)
	touch $@

rerun-worker: $(if $(filter .venv,$(VENV)),$(VENV)/.installed-harness) sandbox
	$(BIN)/python -m harness.worker

# The periodic sweep: exactly one per deployment, beside any number of workers.
beat: $(VENV)/.installed
	$(BIN)/celery -A kernelindex beat --loglevel=info

# The tests whose outcome does not depend on having the CPU to themselves run two at a time: pages, the API,
# records, notes, the browser walk and the docs' checks, and in tests/runs everything but RUNS_ALONE (their
# rerun workers judge at a tolerance of 1.0, tests/runs/conftest.py, and mostly wait on beats and sweeps). Then
# the rest run one at a time, so that nothing else takes the CPU from the sandboxes, workers and servers they
# measure: the harness, make run and serve, the demo's claims measured here, and the reruns at a real tolerance
# or a tight time limit. A folder not listed runs alone.
RUNS_ALONE := $(addprefix tests/runs/test_,rerun_worker.py demo_under_load.py)
SHARED_CPU_TESTS := tests/api tests/web tests/records tests/attestations tests/verification $(wildcard tests/test_*.py) \
  $(filter-out $(RUNS_ALONE),$(wildcard tests/runs/test_*.py))

test: $(VENV)/.installed
	$(BIN)/python -m pytest -n 2 --dist loadgroup $(SHARED_CPU_TESTS); shared=$$?; \
	$(BIN)/python -m pytest $(addprefix --ignore=,$(SHARED_CPU_TESTS)); alone=$$?; \
	exit $$(( shared || alone ))

# After any change to the harness: run the tests that turn hostile kernels on it and record what they found, for
# this harness version's page (records/harness_suites.py); tests/harness/test_suite_record.py asks for it.
harness-suite: $(VENV)/.installed
	$(BIN)/python -m pytest tests/harness -m hostile --harness-suite-record harness/suites

check: $(VENV)/.installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy .
	$(BIN)/python manage.py makemigrations --check --dry-run

clean:
	rm -rf $(VENV) var staticfiles test-artifacts
