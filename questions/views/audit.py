"""A team's audit log, for its admins: the page (filtered by user, action, set and time, a
page of rows at a time) and its exports, CSV and JSON Lines, of every row the filter keeps."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, render
from django.utils import timezone
from django.views.decorators.http import require_GET

from questions import roles
from questions.core import audit_files
from questions.models import Team
from questions.selectors import audit, teams
from questions.selectors.sets import window
from questions.services.audit import ACTIONS
from questions.services.errors import Invalid, require, storable
from questions.views import whole_number
from questions.views.sets import pager

AUDIT_READERS_ONLY = "Only the team's admins read its audit log."


def _team(request: HttpRequest, slug: str) -> Team:
    found = get_object_or_404(teams.visible_teams(request.user), slug=slug)
    require(request.user, roles.may_manage_team, AUDIT_READERS_ONLY, on=found)
    return found


def _filter(request: HttpRequest) -> tuple[audit.AuditFilter, str]:
    """The filter the query names, and what is wrong with it ("" when nothing is)."""
    given = {k: request.GET.get(k, "").strip() for k in ("user", "action", "set", "since", "until")}
    try:
        for name, value in given.items():
            storable(value, name, 200)
        now = timezone.now()
        since = audit_files.moment(given["since"], now) if given["since"] else None
        until = audit_files.moment(given["until"], now) if given["until"] else None
    except (ValueError, Invalid) as exc:  # a moment that is none, a NUL, too long
        return audit.AuditFilter(), str(exc)
    if given["action"] and given["action"] not in ACTIONS:
        return audit.AuditFilter(), f"{given['action'][:40]!r} is no action of the log."
    found = audit.AuditFilter(given["user"], given["action"], given["set"], since, until)
    return found, ""


@require_GET
def team_audit(request: HttpRequest, team: str) -> HttpResponse:
    """The team's audit log, newest first, as the query filters it."""
    found = _team(request, team)
    chosen, problem = _filter(request)
    rows = window(
        audit.audit_rows(found, chosen),
        whole_number(request.GET.get("from", ""), digits=9) or 0,
        audit.AUDIT_PAGE,
    )
    query = request.GET.copy()
    query.pop("from", None)
    context = {
        "team": found,
        "rows": rows.rows,
        "pager": pager(request, rows, "from"),
        "query": query.urlencode(),
        "typed": {k: request.GET.get(k, "") for k in ("user", "action", "set", "since", "until")},
        "actions": ACTIONS,
        "members": teams.members_of(found),
        "sets": found.question_sets.order_by("slug").values_list("slug", flat=True),
        "problem": problem,
    }
    template = "questions/team_audit.html"
    if request.htmx and request.htmx.target == "audit-rows":
        template += "#audit-rows"
    return render(request, template, context, status=400 if problem else 200)


def _export(request: HttpRequest, team: str, file_format: str) -> HttpResponse:
    found = _team(request, team)
    chosen, problem = _filter(request)
    if problem:
        return HttpResponse(problem, status=400, content_type="text/plain; charset=utf-8")
    lines = audit_files.csv_lines if file_format == "csv" else audit_files.jsonl_lines
    media = "text/csv" if file_format == "csv" else "application/x-ndjson"
    response = StreamingHttpResponse(
        lines(audit.export_rows(found, chosen)), content_type=f"{media}; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{found.slug}-audit.{file_format}"'
    response["X-Content-Type-Options"] = "nosniff"
    return response


@require_GET
def team_audit_csv(request: HttpRequest, team: str) -> HttpResponse:
    """Every row the query keeps, as CSV (`detail` as JSON text; no cell runs as a formula)."""
    return _export(request, team, "csv")


@require_GET
def team_audit_jsonl(request: HttpRequest, team: str) -> HttpResponse:
    """Every row the query keeps, as JSON Lines."""
    return _export(request, team, "jsonl")
