# Two commands do all the set-up on a fresh machine with Python >= 3.11 and make:
#   make run   — install from the lock, migrate, serve the console on http://127.0.0.1:8000
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
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} $(VENV)/bin/python manage.py migrate --noinput
	DJANGO_DEBUG=$${DJANGO_DEBUG:-1} $(VENV)/bin/python manage.py questions demo
	@export DJANGO_DEBUG=$${DJANGO_DEBUG:-1} CONSOLE_PUBLIC_URL=$${CONSOLE_PUBLIC_URL:-http://$(HOST):$(PORT)} \
	        DECISIONS__WEBHOOK_ALLOW_PRIVATE=$${DECISIONS__WEBHOOK_ALLOW_PRIVATE:-1} \
	        DECISIONS__CUSTOM_BACKEND=$${DECISIONS__CUSTOM_BACKEND:-questions.dev.demo_rules:answer}; \
	if [ -z "$${TYPESAFE_API_KEY:-}" ]; then \
	  $(VENV)/bin/python manage.py questions standin --port $(STANDIN_PORT) & \
	  standin=$$!; trap 'kill $$standin 2>/dev/null' EXIT INT TERM; \
	  export TYPESAFE_API_KEY=stand-in-key TYPESAFE_BASE_URL=http://127.0.0.1:$(STANDIN_PORT) \
	         DECISIONS__STANDIN=1; \
	  if [ -z "$${LLM_API_KEY:-}" ]; then \
	    export LLM_API_KEY=stand-in-key LLM_BASE_URL=http://127.0.0.1:$(STANDIN_PORT)/v1; \
	  fi; \
	  echo; echo "  No TYPESAFE_API_KEY: answers come from the local stand-in, not from Jev."; \
	fi; \
	$(VENV)/bin/python manage.py db_worker --no-reload --interval 0.5 & \
	worker=$$!; \
	$(VENV)/bin/python manage.py db_worker --no-reload --interval 0.5 --queue-name webhooks & \
	hooks=$$!; trap 'kill $$worker $$hooks $${standin:-} 2>/dev/null' EXIT INT TERM; \
	echo; \
	echo "  Decision Console: http://$(HOST):$(PORT)/"; \
	echo "  Sign in as author (writes) or reviewer (reviews), password demo."; \
	echo; \
	$(VENV)/bin/python manage.py runserver $(HOST):$(PORT)

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
