"""Which words decide, on the page: the plan (the calls and their estimated cost, before
anything is asked), the start (an attribution run through the batch engine), its progress with
cancel, and, once it has finished, the words with the decisive parts marked — read from the
run's record, so opening it again costs nothing."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import attribution
from questions.engine import backends
from questions.models import BatchRun
from questions.post_forms import AttributionForm, first_error
from questions.selectors import runs
from questions.selectors.teams import visible_runs, visible_versions
from questions.services import attribution as attribution_services

TEMPLATE = "questions/_attribution.html"
_SLOT = "attribution"


def _into(value: str | None) -> str:
    """The id of the slot the partial replaces: `attribution` or `attribution-<card key>`
    (letters, digits and dashes only: it lands in an attribute and a CSS selector)."""
    text = (value or _SLOT)[:64]
    return text if text.replace("-", "").isalnum() and text.startswith(_SLOT) else _SLOT


def _problem(request: HttpRequest, problem: str, into: str, status: int = 200) -> HttpResponse:
    # 200 by default: htmx swaps it in where the plan would go
    context = {"problem": problem, "into": into}
    return render(request, TEMPLATE + "#attribution-plan", context, status=status)


def _planned(request: HttpRequest, slug: str, number: int):
    version = get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set")
    )
    form = AttributionForm(request.POST)
    into = _into(request.POST.get("into"))
    if not form.is_valid():
        return None, into, first_error(form)
    given = form.cleaned_data
    plan = attribution_services.attribution_plan(
        version=version,
        state=given["state"],
        backend=given["backend"],
        user=request.user,
        question=given["question"],
    )
    return plan, into, ""


@require_POST
def attribution_plan(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """What attributing would ask — how many calls, at what estimated cost — before anything
    is asked."""
    try:
        plan, into, problem = _planned(request, slug, number)
    except services.NotAllowed:
        raise  # Django's 403: a reader may not ask
    except services.Refusal as exc:
        return _problem(request, str(exc), _into(request.POST.get("into")))
    if problem:
        return _problem(request, problem, into)
    context = {"plan": plan, "into": into, "version": plan.version}
    return render(request, TEMPLATE + "#attribution-plan", context)


@require_POST
def attribution_start(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Start the planned attribution: a batch run, recorded; its progress replaces the plan."""
    try:
        plan, into, problem = _planned(request, slug, number)
        if problem:
            return _problem(request, problem, into)
        run = attribution_services.attribution_start(plan=plan, user=request.user)
    except services.NotAllowed:
        raise
    except services.Refusal as exc:
        return _problem(request, str(exc), _into(request.POST.get("into")))
    return render(request, TEMPLATE + "#attribution-run", run_context(run, into))


def run_context(run: BatchRun, into: str) -> dict:
    """What the attribution-run partial shows of `run` (the run page shows it too)."""
    reports = attribution_services.attribution_report(run) if run.finished else []
    plan = attribution.Plan.from_json(run.attribution)
    return {
        "run": run,
        "into": into,
        "counts": runs.run_counts(run),
        "reports": reports,
        "state_name": run.items.select_related("sample_state__sample_state")
        .first()
        .sample_state.sample_state.name,
        "skipped": plan.skipped,
    }


def _run(request: HttpRequest, pk: int) -> BatchRun:
    run = get_object_or_404(
        visible_runs(request.user).select_related("version", "question_set"), pk=pk
    )
    if run.kind != attribution.KIND:
        raise services.NotFound(f"Run {pk} is not an attribution.")
    return run


@require_GET
def attribution_progress(request: HttpRequest, pk: int) -> HttpResponse:
    """An attribution's progress while it runs; its words, marked, once it has finished. Reads
    the record only."""
    run = _run(request, pk)
    return render(
        request, TEMPLATE + "#attribution-run", run_context(run, _into(request.GET.get("into")))
    )


@require_POST
def attribution_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = services.batch_cancel(run=_run(request, pk), user=request.user)
    return render(
        request, TEMPLATE + "#attribution-run", run_context(run, _into(request.POST.get("into")))
    )


@require_GET
def attribution_launch(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The form that starts an attribution from a card, a review or the preview (loaded when
    it is opened): the set's states and the live backends. Reads only."""
    version = get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set")
    )
    context = {
        "set": version.question_set,
        "version": version,
        "question": request.GET.get("question") or "",
        "into": _into(request.GET.get("into")),
        "sample_states": version.question_set.sample_states.only("pk", "name"),
        "live_backends": [b.name for b in backends.available() if b.live],
        "can_ask": roles.may_ask_live(request.user, version.question_set),
    }
    return render(request, TEMPLATE + "#attribution-launch", context)
