# Taskwright: `make run` brings the product up, `make test` runs every check.
# Needs nothing but a Python >= 3.12 somewhere on the machine; see README.md.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV := .venv
PY := $(VENV)/bin/python
# Stamps inside .venv: requirements are installed again only when their file changed.
RUN_STAMP := $(VENV)/.installed-requirements
DEV_STAMP := $(VENV)/.installed-requirements-dev

# Settings refuse to start with DEBUG off unless a real SECRET_KEY is set; for the
# developer's machine a key is generated once under var/. Override with DEBUG=0 make run.
DEBUG ?= 1
export DEBUG

# make test runs the suite in this many processes (pytest-xdist; each has its own test
# database, Redis database and var folder: tests/xdist_isolation.py). TEST_PROCESSES=0 runs it in one.
TEST_PROCESSES ?= 2

# Candidates in order; each is actually run with a version check, since pyenv shims exist
# for versions that are not selected and fail when called.
PYTHON_CANDIDATES := python3.12 python3.13 python3 \
	$(sort $(wildcard $(HOME)/.pyenv/versions/3.1[2-9]*/bin/python3)) \
	$(sort $(wildcard /usr/local/bin/python3.1[2-9] /usr/bin/python3.1[2-9] /opt/homebrew/bin/python3.1[2-9] /opt/python*/bin/python3))

.PHONY: help run serve test lint migrate seed clean requirements

help:
	@echo "make run      migrate, load the demo data, start the web server and a Celery worker"
	@echo "make test     ruff, makemigrations --check, then the whole pytest suite (browser tests included)"
	@echo "make lint     ruff only"
	@echo "make migrate  apply database migrations"
	@echo "make seed     load the demo data (idempotent) and print the demo logins"
	@echo "make clean    remove .venv, caches, test artifacts and the embedded broker's queue (keeps var/db.sqlite3)"
	@echo "make serve    production-like web server: gunicorn, DEBUG off (needs SECRET_KEY, ALLOWED_HOSTS; see README)"
	@echo "make requirements  compile requirements*.txt from requirements*.in (uv; existing pins are kept)"

# The virtualenv. A .venv whose interpreter no longer runs (e.g. its Python was removed) is rebuilt.
$(PY):
	@found=""; \
	for candidate in $(PYTHON_CANDIDATES); do \
	  if "$$candidate" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 12) else 1)' >/dev/null 2>&1; then \
	    found="$$candidate"; break; \
	  fi; \
	done; \
	if [ -z "$$found" ]; then \
	  echo "error: Taskwright needs Python 3.12 or newer, and none was found." >&2; \
	  echo "       Tried: $(PYTHON_CANDIDATES)" >&2; \
	  echo "       Install one (e.g. apt-get install python3.12 python3.12-venv, or pyenv install 3.12) and run make again." >&2; \
	  exit 1; \
	fi; \
	echo "Creating $(VENV) with $$found ($$("$$found" -c 'import sys; print(sys.version.split()[0])'))"; \
	rm -rf $(VENV); \
	"$$found" -m venv $(VENV)

$(RUN_STAMP): requirements.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements.txt
	@touch $@

$(DEV_STAMP): requirements.txt requirements-dev.txt | $(PY)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	@touch $@ $(RUN_STAMP)

run: $(RUN_STAMP)
	@PYTHON=$(PY) bash scripts/run.sh

# Production-like: DEBUG off (settings then refuse to start without a real SECRET_KEY),
# static files collected for whitenoise, gunicorn with config/gunicorn.conf.py (BIND,
# WEB_CONCURRENCY and the rest from the environment; docs/deploy.md).
serve: $(RUN_STAMP)
	DEBUG=0 $(PY) manage.py collectstatic --noinput --verbosity 0
	DEBUG=0 $(VENV)/bin/gunicorn -c config/gunicorn.conf.py

# Pins come from the .in files; a pin already in a .txt file is kept unless an .in change needs another.
requirements: $(DEV_STAMP)
	$(VENV)/bin/uv pip compile requirements.in -o requirements.txt --python-version 3.12 --quiet --custom-compile-command "make requirements"
	@tmp=$$(mktemp); grep -v '^-r ' requirements-dev.txt > $$tmp; \
	$(VENV)/bin/uv pip compile requirements-dev.in -o $$tmp --python-version 3.12 --quiet --custom-compile-command "make requirements"; \
	{ echo "-r requirements.txt"; cat $$tmp; } > requirements-dev.txt; rm -f $$tmp

test: $(DEV_STAMP)
	$(PY) -m ruff check .
	$(PY) manage.py makemigrations --check --dry-run
	$(PY) -m pytest -n $(TEST_PROCESSES) --dist loadfile

lint: $(DEV_STAMP)
	$(PY) -m ruff check .

migrate: $(RUN_STAMP)
	$(PY) manage.py migrate

seed: $(RUN_STAMP)
	$(PY) manage.py seed_demo

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache artifacts var/broker var/cache var/test.sqlite3 var/log
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
