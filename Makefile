# Tether — the two commands are `make run` and `make test`.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp

.PHONY: install run test lint format types imports unit bench migration clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv and install Tether with its dev tools (first time only)

run: install ## run the API + worker on the embedded Postgres/Redis (Ctrl-C stops all)
	$(VENV)/bin/tether serve

test: install lint types imports ## lint, type-check, layering, then the whole test suite
	$(PY) -m pytest

lint: install ## ruff lint + format check
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install ## apply ruff fixes and formatting
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

types: install ## mypy --strict on our packages
	$(VENV)/bin/mypy -p tether -p tenancy -p workers

imports: install ## layering contracts (import-linter)
	$(VENV)/bin/lint-imports

bench: install ## the quick benchmark set (~10 min), then its table (full runs: docs/benchmarks.md)
	cd bench && ../$(PY) quick.py

migration: install ## autogenerate a migration: make migration name=add_things (needs TETHER_DATABASE_URL)
	$(VENV)/bin/alembic revision --autogenerate -m "$(name)"

clean: ## remove the virtualenv and caches (keeps .tether data)
	rm -rf $(VENV) .mypy_cache .ruff_cache .pytest_cache
