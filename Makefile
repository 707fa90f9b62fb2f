# Two commands do all the set-up on a fresh machine with Python >= 3.11 and make:
#   make run   — install from the lock, migrate, serve the console on http://127.0.0.1:8000
#                (console/run: the demo, the stand-in, the task workers, runserver; Ctrl-C or
#                a TERM to make stops them all)
#   make test  — install from the lock, run the whole suite
#   (make test-fast — the inner loop: the suite without the tests marked slow)
# and one runs it for a team (docs/operating.md, "Run it for a team"):
#   make serve — production mode: gunicorn, whitenoise static files, task workers
# Dependencies come from uv.lock into .venv; uv itself is pinned and kept in .uv.

PYTHON ?= python3
UV_VERSION := 0.13.9
UV := .uv/bin/uv
VENV := .venv
HOST ?= 127.0.0.1
PORT ?= 8000
STANDIN_PORT ?= 8765

export UV_PYTHON_DOWNLOADS := never
export UV_PROJECT_ENVIRONMENT := $(VENV)

.PHONY: run serve test test-fast lint format bench docs screenshots

$(UV):
	$(PYTHON) -m venv .uv
	.uv/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

$(VENV)/.synced: uv.lock pyproject.toml | $(UV)
	$(UV) sync --frozen --python $(PYTHON)
	@touch $@

run: $(VENV)/.synced
	@HOST=$(HOST) PORT=$(PORT) STANDIN_PORT=$(STANDIN_PORT) exec console/run

serve: $(VENV)/.synced
	@for name in DJANGO_SECRET_KEY DJANGO_ALLOWED_HOSTS; do \
	  if [ -z "$$(printenv $$name)" ]; then \
	    echo "make serve: set $$name (see docs/operating.md, Run it for a team)." >&2; exit 2; \
	  fi; \
	done
	@# stdout is for the JSON log lines; what set-up says goes to stderr
	@DJANGO_DEBUG=0 $(VENV)/bin/python manage.py migrate --noinput >&2
	@DJANGO_DEBUG=0 $(VENV)/bin/python manage.py collectstatic --noinput --verbosity 0 >&2
	@HOST=$(HOST) PORT=$(PORT) exec console/serve

test: $(VENV)/.synced
	$(VENV)/bin/python -m pytest

test-fast: $(VENV)/.synced
	$(VENV)/bin/python -m pytest -m "not slow"

lint: $(VENV)/.synced
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(VENV)/.synced
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

bench: $(VENV)/.synced
	$(VENV)/bin/python bench/editor_validation.py
	$(VENV)/bin/python bench/decisions_overhead.py
	$(VENV)/bin/python bench/batch_span.py
	$(VENV)/bin/python bench/control_span.py

# docs/cli.md from the argument parsers (a test fails when it is stale)
docs: $(VENV)/.synced
	$(VENV)/bin/python -m questions.cli.reference

# docs/img/*.png from a console running the demo (make run in another terminal first)
screenshots: $(VENV)/.synced
	$(VENV)/bin/python docs/screenshots.py --url http://$(HOST):$(PORT)
