"""Batch runs: start one, watch its progress live, cancel it, read its test report, compare
it with another run, and re-run its failed states."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from questions import charts, metrics, roles, selectors, services
from questions.models import BatchRun, Version
from questions.services.batches import DEFAULT_CONCURRENCY, DEFAULT_THRESHOLD
from questions.views import whole_number


@require_POST
def run_create(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = get_object_or_404(
        Version.objects.select_related("question_set"), question_set__slug=slug, number=number
    )
    try:
        concurrency = int(request.POST.get("concurrency") or DEFAULT_CONCURRENCY)
        threshold = float(request.POST.get("threshold") or DEFAULT_THRESHOLD)
    except (ValueError, OverflowError):
        messages.error(request, "Concurrency is a whole number and the threshold a number.")
        return redirect(version)
    try:
        run = services.batch_create(
            version=version,
            backend=request.POST.get("backend", "typesafe"),
            user=request.user,
            concurrency=concurrency,
            threshold=threshold,
            tag=request.POST.get("tag", "").strip(),
        )
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect(version)
    return redirect("run-detail", run.pk)


#: what the states table of a run shows (not the states' contents nor the answers)
RUN_ITEM_FIELDS = (
    "run_id",
    "status",
    "attempts",
    "error_status",
    "error_detail",
    "sample_state__name",
    "sample_state__revision",
)


#: the states table shows this many rows at a time; the next load as it scrolls
ITEMS_PAGE = 100


def _items_context(run: BatchRun, request: HttpRequest) -> dict:
    start = whole_number(request.GET.get("items_from", "0"), digits=9) or 0
    items = list(
        run.items.select_related("sample_state")
        .only(*RUN_ITEM_FIELDS)
        .order_by("sample_state__name", "pk")[start : start + ITEMS_PAGE + 1]
    )
    more = len(items) > ITEMS_PAGE
    return {
        "run": run,
        "items": items[:ITEMS_PAGE],
        "items_next": start + ITEMS_PAGE if more else None,
        "items_page": ITEMS_PAGE,
    }


def _progress_context(run: BatchRun) -> dict:
    counts = selectors.run_counts(run)
    return {"run": run, "counts": counts}


@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        BatchRun.objects.select_related("question_set", "version", "created_by", "rerun_of"),
        pk=pk,
    )
    if request.htmx and request.GET.get("items_from"):  # the next rows of the states table
        return render(request, "questions/run_detail.html#run-items", _items_context(run, request))
    if request.htmx and request.htmx.target == "run-progress":
        response = render(request, "questions/run_detail.html#run-progress", _progress_context(run))
        if run.finished:
            response["HX-Refresh"] = "true"  # the report is ready: show the whole page
        return response
    report = selectors.run_report(run)
    other = None
    changes = []
    other_pk = request.GET.get("against")
    if other_pk and other_pk.isdigit():
        other = BatchRun.objects.filter(pk=int(other_pk), question_set=run.question_set).first()
        if other:
            changes = metrics.compare_runs(
                selectors.run_cases(other), selectors.run_cases(run), run.threshold
            )
    context = {
        **_progress_context(run),
        "report": report,
        "questions": [
            {
                "report": q,
                "options": sorted(
                    {k for row in q.confusion.values() for k in row} | set(q.confusion)
                ),
            }
            for q in report.questions.values()
        ],
        "noul_diagram": charts.reliability_diagram(
            "noul: P(true) against outcomes", report.noul_calibration
        ),
        "choice_diagram": charts.reliability_diagram(
            "choice: probability of the chosen option against correctness",
            report.choice_calibration,
        ),
        **_items_context(run, request),
        "runs": run.question_set.batch_runs.exclude(pk=run.pk).select_related("version")[:30],
        "reruns": run.reruns.order_by("pk"),
        "other": other,
        "changes": changes,
        "can_run": roles.may_ask_live(request.user),
    }
    return render(request, "questions/run_detail.html", context)


@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(BatchRun, pk=pk)
    services.batch_cancel(run=run, user=request.user)
    messages.info(request, "Cancelling: no new state is asked; calls in flight finish.")
    return redirect("run-detail", pk)


@require_POST
def run_rerun_failed(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(BatchRun.objects.select_related("version__question_set"), pk=pk)
    try:
        rerun = services.batch_rerun_failed(run=run, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("run-detail", pk)
    return redirect("run-detail", rerun.pk)
