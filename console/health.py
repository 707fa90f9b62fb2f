"""`GET /healthz`: is this console able to serve? No sign-in; nothing secret in the answer.

200 `{"status": "ok", "database": "ok", "migrations": "ok", "worker": "ok"|"idle"|"none"}`;
503 with the failing part ("unreachable", "pending") when the database cannot be reached or
migrations are missing. The worker part is reported, never a failure: a console without task
workers still serves every page, only batch runs wait.
"""

from __future__ import annotations

import logging

from django.contrib.auth.decorators import login_not_required
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from questions.engine import workers

log = logging.getLogger("console.health")


def _migrations_pending() -> bool:
    connection = connections[DEFAULT_DB_ALIAS]
    executor = MigrationExecutor(connection)
    return bool(executor.migration_plan(executor.loader.graph.leaf_nodes()))


@login_not_required
@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    body = {"status": "ok", "database": "ok", "migrations": "ok", "worker": "none"}
    try:
        connections[DEFAULT_DB_ALIAS].ensure_connection()
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
        pending = _migrations_pending()
        if not pending:  # the heartbeat table may be one of the missing migrations
            body["worker"] = workers.worker_health()
    except Exception as exc:
        log.warning("health check: the database is unreachable (%s)", type(exc).__name__)
        body.update(status="failing", database="unreachable", migrations="unknown")
        body["worker"] = "unknown"
        return JsonResponse(body, status=503)
    if pending:
        body.update(status="failing", migrations="pending", worker="unknown")
        return JsonResponse(body, status=503)
    return JsonResponse(body)
