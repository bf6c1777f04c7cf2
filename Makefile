# mrtrweb: `make run` serves the app, `make test` proves it. Both set up what they need.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --no-builtin-rules

PYTHON ?= python3
HOST ?= 127.0.0.1
PORT ?= 8000
# The app reads them too: links in emails point where `make run` serves (mrtrweb/env.py, base_url).
export HOST PORT
PYTEST_ARGS ?=
# `make test` runs modules in parallel, each module whole on one worker (its module- and
# package-scoped stacks started once there). Most tests wait on child processes, browsers and
# sockets, so three workers keep two cores busy; PYTEST_WORKERS=0 runs in this one process.
PYTEST_WORKERS ?= 3
# Modules are handed out in the suite's own order (tests/conftest.py puts the long ones first),
# not xdist's default of the most tests first.
PARALLEL = -n $(PYTEST_WORKERS) --dist loadscope --no-loadscope-reorder

VENV := .venv
PY := $(VENV)/bin/python
VENV_STAMP := $(VENV)/.installed

# Node 22 and the MCP conformance suite, kept inside the project. The stamp's name carries a
# hash of the package list, so changing a version here installs again.
NODE_DIR := var/node
NODE_PACKAGES := node@22 @modelcontextprotocol/conformance@0.2.0-alpha.12 axe-core@4
NODE_STAMP := $(NODE_DIR)/.installed-$(shell printf '%s' '$(NODE_PACKAGES)' | cksum | cut -d' ' -f1)
NODE_BIN := $(CURDIR)/$(NODE_DIR)/node_modules/node/bin
# The handshake-era peers (tests/peers/mcp1_server.py) run the official SDK 1.x, which cannot
# share the project's venv (it holds mcp 2.x): a venv of its own, its version in the stamp's name.
MCP1_DIR := var/mcp1
MCP1_SPEC := mcp>=1.30,<2
MCP1_STAMP := $(MCP1_DIR)/.installed-$(shell printf '%s' '$(MCP1_SPEC)' | cksum | cut -d' ' -f1)
# The TypeScript SDK 1.x server for the handshake-era peer tests/peers/ts_server.cjs (run on the
# Node 22 above), in a prefix of its own so the conformance suite's tree is never touched.
NODE_SDK_DIR := var/node-sdk
NODE_SDK_PACKAGES := @modelcontextprotocol/sdk@1.32 express@5 zod@3
NODE_SDK_STAMP := $(NODE_SDK_DIR)/.installed-$(shell printf '%s' '$(NODE_SDK_PACKAGES)' | cksum | cut -d' ' -f1)
# Tests find `node` (22, not the system's) and `conformance` on PATH.
TEST_PATH := $(NODE_BIN):$(CURDIR)/$(NODE_DIR)/node_modules/.bin:$(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: help run test test-fast setup lint fmt clean bench mcp1 node-sdk

help:
	@echo "make run    set up (venv, migrations, admin user, static files) and serve on $(HOST):$(PORT)"
	@echo "make test   set up, install the Node tools, lint, then run pytest"
	@echo "make test-fast  the inner loop: lint, then pytest without the browser, conformance,"
	@echo "            fault, scale-out, fuzz and bench tests (PYTEST_ARGS=... passes more)"
	@echo "make lint   ruff check + ruff format --check + the import contracts (lint-imports) + mypy"
	@echo "make fmt    ruff format + ruff check --fix"
	@echo "make bench  set up, then measure latency, throughput, scale, storage and memory"
	@echo "            (BENCH_ARGS=--quick for a short run; figures in var/bench/last.json)"
	@echo "make clean  remove the venv, Node tools, collected static files and caches"
	@echo "            (keeps var/db.sqlite3 and var/secret_key; delete var/ to start afresh)"

$(PY):
	@# A failed venv (no ensurepip, say) would otherwise leave a python without pip behind.
	$(PYTHON) -m venv $(VENV) || { rm -rf $(VENV); exit 1; }

$(VENV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --disable-pip-version-check --no-input -q -e ".[dev]"
	touch $@

$(NODE_STAMP):
	@command -v npm >/dev/null || { echo "npm is needed to install Node 22 and the conformance suite" >&2; exit 1; }
	mkdir -p $(NODE_DIR)
	npm install --prefix $(NODE_DIR) --no-audit --no-fund --loglevel=error $(NODE_PACKAGES)
	@# npm 11 warns that the node package's install script is not allow-listed; make sure
	@# it ran all the same.
	@"$(NODE_BIN)/node" --version | grep -q '^v22\.' || { echo "$(NODE_BIN)/node is missing or not Node 22" >&2; exit 1; }
	@test -x $(NODE_DIR)/node_modules/.bin/conformance || { echo "the conformance CLI is missing" >&2; exit 1; }
	@test -f $(NODE_DIR)/node_modules/axe-core/axe.min.js || { echo "axe-core is missing" >&2; exit 1; }
	rm -f $(NODE_DIR)/.installed-*
	touch $@

$(MCP1_STAMP):
	rm -rf $(MCP1_DIR)
	$(PYTHON) -m venv $(MCP1_DIR)
	$(MCP1_DIR)/bin/pip install --disable-pip-version-check --no-input -q '$(MCP1_SPEC)'
	@$(MCP1_DIR)/bin/python -c 'import mcp.server.fastmcp' || { echo "mcp 1.x is missing from $(MCP1_DIR)" >&2; exit 1; }
	touch $@

mcp1: $(MCP1_STAMP)

$(NODE_SDK_STAMP): | $(NODE_STAMP)
	mkdir -p $(NODE_SDK_DIR)
	npm install --prefix $(NODE_SDK_DIR) --no-audit --no-fund --loglevel=error $(NODE_SDK_PACKAGES)
	@test -f $(NODE_SDK_DIR)/node_modules/@modelcontextprotocol/sdk/package.json || { echo "the TypeScript SDK is missing from $(NODE_SDK_DIR)" >&2; exit 1; }
	rm -f $(NODE_SDK_DIR)/.installed-*
	touch $@

node-sdk: $(NODE_SDK_STAMP)

setup: $(VENV_STAMP)
	$(PY) manage.py migrate --noinput -v0
	$(PY) manage.py ensure_admin
	$(PY) manage.py collectstatic --noinput -v0

# The demo MCP server (mrtrweb/demo, docs/demo.md), registered as the connection `demo`.
# DEMO=0 leaves it out.
DEMO ?= 1
DEMO_PORT ?= 8765

# The demo server (and, when tasks do not run inside the web process, a task worker) run beside
# the web server and stop with it. With no REDIS_URL the web process runs the tasks and the
# scheduler itself (MRTRWEB_INPROCESS_WORKER, docs/architecture.md); with REDIS_URL (or
# MRTRWEB_INPROCESS_WORKER=0) `manage.py db_worker` runs both, and more can be started anywhere.
run: setup
	@if [ "$(DEMO)" != 0 ]; then \
	  $(PY) manage.py mcp_server add --update --name demo --title "Demo server" \
	    --url http://127.0.0.1:$(DEMO_PORT)/mcp; \
	fi
	pids=; trap 'kill $$pids 2>/dev/null; wait $$pids 2>/dev/null || true' EXIT; \
	proxies=$$($(PY) -c 'import os; from mrtrweb.env import uvicorn_proxy_flags; print(*uvicorn_proxy_flags(os.environ))') || exit 1; \
	if [ "$(DEMO)" != 0 ]; then \
	  $(PY) -m mrtrweb.demo.server --host 127.0.0.1 --port $(DEMO_PORT) & pids="$$pids $$!"; \
	fi; \
	if ! $(PY) -c 'import os, sys; from mrtrweb.env import inprocess_worker; sys.exit(0 if inprocess_worker(os.environ) else 1)'; then \
	  $(PY) manage.py db_worker --no-reload --interval 0.2 & pids="$$pids $$!"; \
	fi; \
	$(VENV)/bin/uvicorn mrtrweb.asgi:application --host $(HOST) --port $(PORT) --lifespan on $$proxies

# The suite's SQLite databases are thrown away after it: they need not survive a power cut,
# and flushing every commit to disk (the app's default, MRTRWEB_SQLITE_SYNCHRONOUS=FULL) would
# slow the whole suite; tests/core/test_env.py checks that default on a real connection.
TEST_ENV = MRTRWEB_SQLITE_SYNCHRONOUS=NORMAL

test: setup $(NODE_STAMP) $(MCP1_STAMP) $(NODE_SDK_STAMP) lint
	PATH="$(TEST_PATH)" $(TEST_ENV) $(VENV)/bin/pytest $(PARALLEL) $(PYTEST_ARGS)

# The inner loop: the suites that start browsers, app servers in numbers, the conformance CLI
# or fault injection, and the fuzzers and benchmarks (tests/conftest.py's LONG_SUITES, marked
# long_suite), are left to `make test` (the whole suite); property tests draw a fifth of their
# examples (tests/support/examples.py).
test-fast: setup $(NODE_STAMP) $(MCP1_STAMP) $(NODE_SDK_STAMP) lint
	PATH="$(TEST_PATH)" $(TEST_ENV) MRTRWEB_PROPERTY_SCALE=$${MRTRWEB_PROPERTY_SCALE:-0.2} \
	  $(VENV)/bin/pytest $(PARALLEL) -m "not long_suite" $(PYTEST_ARGS)

# Benchmarks (bench/, docs/performance.md): SQLite, and PostgreSQL when 127.0.0.1:5432 answers.
BENCH_ARGS ?=
bench: setup
	$(PY) -m bench $(BENCH_ARGS)

lint: $(VENV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	@# Who may import whom: the contracts in pyproject.toml (about a second, so no cache).
	$(VENV)/bin/lint-imports --no-cache --no-logo
	@# Types: mypy's defaults on mrtrweb/, strict on mcp, oauth, elicitation and the engine
	@# ([tool.mypy] in pyproject.toml; its cache in var/mypy).
	$(VENV)/bin/mypy

fmt: $(VENV_STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf $(VENV) $(NODE_DIR) $(MCP1_DIR) $(NODE_SDK_DIR) staticfiles *.egg-info .pytest_cache .ruff_cache .hypothesis
	find . -name __pycache__ -type d -not -path './.git/*' -prune -exec rm -rf {} +
