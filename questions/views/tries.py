"""Try across states, in the editor: the plan (what would be asked, how many live calls, what
it would cost), the start (save the page, then a batch run that asks the changed questions
only), its progress with cancel, and the answers before → after."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from questions import forms, roles, services
from questions.models import BatchRun
from questions.selectors import runs
from questions.selectors.teams import visible_runs
from questions.services import tries
from questions.views import editor, whole_number

TEMPLATE = "questions/_try.html"


def _problem(
    request: HttpRequest, problem: str, into: str = "try-plan", saved=None
) -> HttpResponse:
    # 200: htmx swaps it in where the plan (or the run) would go; a save that went through
    # still updates the page's revision
    context = {"problem": problem, "into": into, "saved": saved}
    return render(request, TEMPLATE + "#try-plan", context)


def _document(request: HttpRequest, version) -> tuple[dict | None, bool]:
    """The questions on the page (saved or not), and whether they are the page's own; a
    read-only page posts no card, so its stored document is tried."""
    if (
        request.POST.getlist("q")
        and version.is_draft
        and roles.may_write(request.user, version.question_set)
    ):
        edited = forms.document_from_cards(editor.posted_cards(request.POST, version))
        return (edited.document if edited.representable else None), True
    return version.document, False


def _against(request: HttpRequest) -> str:
    """The version a try compares with: a typed number, else the chosen one ("": last run)."""
    number = request.POST.get("try_against_number", "").strip()
    return f"v{number}" if number else request.POST.get("try_against", "")


def _plan(request: HttpRequest, version) -> tries.Plan:
    document, _ = _document(request, version)
    if document is None:
        raise services.Invalid("Fix what is marked in the editor first.")
    return tries.try_plan(
        version=version,
        document=document,
        backend=request.POST.get("try_backend", ""),
        user=request.user,
        against=_against(request),
        tag=request.POST.get("try_tag", "").strip(),
    )


@require_POST
def try_plan(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """What a try would ask, before anything is asked."""
    version = editor._version(request, slug, number)
    try:
        plan = _plan(request, version)
    except services.NotAllowed:
        raise  # Django's 403: a reader may not try
    except services.Refusal as exc:
        return _problem(request, str(exc))
    return render(request, TEMPLATE + "#try-plan", {"plan": plan, "set": version.question_set})


@require_POST
def try_start(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Save the page (an editable draft's), then start the try: a batch run of the version
    that asks the changed questions and replays the rest."""
    version = editor._version(request, slug, number)
    document, own = _document(request, version)
    saved = None
    try:
        plan = _plan(request, version)  # the page's questions, checked before anything is saved
        if own and json.dumps(document) != json.dumps(version.document):
            base = whole_number(request.POST.get("base_revision", ""))
            if base is None:
                base = -1
            saved = version = services.version_save(
                version=version, document=document, base_revision=base, author=request.user
            )
        run = tries.try_start(version=version, plan=plan, user=request.user)
    except services.NotAllowed:
        raise  # Django's 403: a reader may not try
    except services.StaleRevision as exc:
        return _problem(request, f"Not tried: {exc} Save or reload first.", "try-run")
    except services.Refusal as exc:
        return _problem(request, str(exc), "try-run", saved)
    context = _run_context(run)
    context.update(saved=saved, started=plan)
    return render(request, TEMPLATE + "#try-run", context)


def _run_context(run: BatchRun) -> dict:
    return {
        "run": run,
        "counts": runs.run_counts(run),
        "result": tries.try_result(run),
    }


@require_GET
def try_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """A try's progress while it runs; its answers before → after once it has finished."""
    run = get_object_or_404(visible_runs(request.user).select_related("version", "baseline"), pk=pk)
    return render(request, TEMPLATE + "#try-run", _run_context(run))


@require_POST
def try_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(visible_runs(request.user), pk=pk)
    run = services.batch_cancel(run=run, user=request.user)
    return render(request, TEMPLATE + "#try-run", _run_context(run))
