"""Sets list, set page, version history, diff, and the version actions (new draft, discard)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from questions import roles, services
from questions.core import diff
from questions.models import IngestSettings, QuestionSet, SampleState, Team, Version
from questions.selectors import disputes, holdout, sets
from questions.selectors.teams import several_teams, visible_sets, visible_versions
from questions.views import whole_number


def pager(request: HttpRequest, page: sets.Window, param: str) -> dict:
    """What a pager under a long list shows: which rows, of how many, and the links to the
    pages before and after (the request's other parameters kept)."""

    def link(start: int | None) -> str | None:
        if start is None:
            return None
        query = request.GET.copy()
        query[param] = str(start)
        return f"?{query.urlencode()}"

    return {
        "first": page.start + 1 if page.rows else 0,
        "last": page.end,
        "total": page.total,
        "previous": link(page.previous_start),
        "next": link(page.next_start),
    }


def start_of(request: HttpRequest, param: str) -> int:
    return whole_number(request.GET.get(param, ""), digits=9) or 0


@require_GET
def set_list(request: HttpRequest) -> HttpResponse:
    search = request.GET.get("q", "")
    page = sets.question_sets_page(search, start_of(request, "from"), user=request.user)
    context = {
        "sets": page.rows,
        "pager": pager(request, page, "from"),
        "search": search,
        "can_author": roles.may_write(request.user, None),
        "show_teams": several_teams(request.user),
    }
    template = "questions/set_list.html"
    if request.htmx and request.htmx.target == "set-rows":
        template += "#set-rows"
    return render(request, template, context)


@require_http_methods(["GET", "POST"])
def set_create(request: HttpRequest) -> HttpResponse:
    """The new-set form, in one of the teams the user writes in; a set starts with a first
    draft to write in."""
    teams = roles.teams_where(request.user, roles.may_write)
    if not teams:
        raise PermissionDenied("Only authors create question sets.")
    first = next((t for t in teams if t.slug == Team.DEFAULT), teams[0])
    values = {"slug": "", "name": "", "description": ""}
    team = request.POST.get("team") or request.GET.get("team") or first.slug
    error, status = None, 200
    if request.method == "POST":
        values = {k: request.POST.get(k, "").strip() for k in values}
        try:
            question_set = services.question_set_start(
                owner=request.user, team=services.team_named(team, user=request.user), **values
            )
        except services.ServiceError as exc:
            error, status = str(exc), exc.status
        else:
            messages.success(request, f"Created {question_set.slug} with a first draft.")
            return redirect("version-edit", question_set.slug, 1)
    return render(
        request,
        "questions/set_create.html",
        {"values": values, "error": error, "teams": teams, "team": team},
        status=status,
    )


def _states_context(request: HttpRequest, question_set: QuestionSet) -> dict:
    """The set page's list of states as the request finds them (its htmx partial's context)."""
    finding = {
        "name": request.GET.get("state_name", ""),
        "tag": request.GET.get("state_tag", ""),
        "show": request.GET.get("state_show", "all"),
        "source": request.GET.get("state_source", ""),
    }
    if finding["show"] not in sets.STATE_SHOWS:
        finding["show"] = "all"
    if finding["source"] not in sets.STATE_SOURCES:
        finding["source"] = ""
    last_run = sets.last_finished_run(question_set) if finding["show"] == "failing" else None
    states = sets.sample_states_page(
        question_set, **finding, start=start_of(request, "states_from"), failing_in=last_run
    )
    return {
        "set": question_set,
        "states": states.rows,
        "states_pager": pager(request, states, "states_from"),
        "finding": finding,
        "finding_any": any(finding[k].strip() for k in ("name", "tag", "source"))
        or finding["show"] != "all",
        "state_shows": sets.STATE_SHOWS,
        "state_sources": sets.STATE_SOURCES,
        "failing_run": last_run,
        "can_author": roles.may_write(request.user, question_set),
        # production's figures say their sampling rate and retention wherever they show
        "ingest": IngestSettings.of(question_set)
        if finding["source"] == SampleState.Source.PRODUCTION
        else None,
    }


@require_GET
def set_detail(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user).select_related("owner"), slug=slug)
    states_context = _states_context(request, question_set)
    if request.htmx and request.htmx.target == "state-rows":
        return render(request, "questions/set_detail.html#state-rows", states_context)
    versions = list(sets.versions_of(question_set))
    labels = sets.labels_fetched(question_set)
    context = {
        **states_context,
        "versions": versions,
        "draft": next((v for v in versions if v.is_draft), None),
        "can_author": roles.may_write(request.user, question_set),
        "can_review": roles.may_review(request.user, question_set),
        "labels": [shown.label for shown in labels],
        "label_fetches": labels,
        "label_moves": sets.label_moves_of(question_set)[:50],
        "disputed": disputes.disputed_count(question_set),
        "split": holdout.holdout_split(question_set),
        "approved": [v for v in versions if v.status == Version.Status.APPROVED],
        "runs": question_set.batch_runs.select_related("version", "created_by")[:10],
        "records_upload_mib": settings.DATA_UPLOAD_MAX_MEMORY_SIZE // 2**20,
        "states_upload_max_rows": settings.DECISIONS_UPLOAD_MAX_ROWS,
    }
    return render(request, "questions/set_detail.html", context)


@require_GET
def set_history(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    versions = sets.versions_of(question_set).prefetch_related("events__actor")
    return render(
        request, "questions/set_history.html", {"set": question_set, "versions": versions}
    )


@require_GET
def version_diff(request: HttpRequest, slug: str) -> HttpResponse:
    """The semantic diff between any two versions: ?a=N&b=M (default: the newest two)."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    versions = list(sets.versions_of(question_set))
    by_number = {v.number: v for v in versions}
    error = None

    def pick(name: str, default: Version | None) -> Version | None:
        nonlocal error
        raw = request.GET.get(name)
        if raw is None:
            return default
        try:
            return by_number[whole_number(raw, digits=9)]
        except KeyError:
            error = f"{question_set.slug} has no version {raw!r}."
            return default

    newest = versions[0] if versions else None
    b = pick("b", newest)
    a = pick("a", b.parent if b and b.parent else (versions[1] if len(versions) > 1 else b))
    result = diff.document_diff(a.document, b.document) if a and b else None
    return render(
        request,
        "questions/version_diff.html",
        {"set": question_set, "versions": versions, "a": a, "b": b, "diff": result, "error": error},
        status=404 if error else 200,
    )


@require_POST
def version_new_draft(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = get_object_or_404(visible_versions(request.user).of(slug, number))
    try:
        draft = services.version_draft_from(version=version, author=request.user)
    except services.DraftExists as exc:
        messages.warning(request, str(exc))
        return redirect(exc.draft)
    messages.success(request, f"Version {draft.number} is a new draft from version {number}.")
    return redirect(draft)


@require_POST
def version_keep(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = get_object_or_404(visible_versions(request.user).of(slug, number))
    try:
        draft = services.version_keep(version=version, author=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect(version)
    messages.success(
        request,
        f"Kept version {number} as it was saved; you continue in version {draft.number}. "
        f"Version {number} can be run and compared, and submitted for review later.",
    )
    return redirect(draft)


@require_POST
def version_discard(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = get_object_or_404(visible_versions(request.user).of(slug, number))
    try:
        services.version_discard(version=version, author=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect(version)
    messages.success(request, f"Draft version {number} was discarded.")
    return redirect("set-detail", slug)


@require_POST
def version_submit(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = get_object_or_404(visible_versions(request.user).of(slug, number))
    try:
        services.version_submit(version=version, author=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(
            request, f"Version {number} is submitted for review; it no longer changes."
        )
    return redirect(version)
