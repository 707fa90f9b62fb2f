"""Batch runs: start one, watch its progress live, cancel it, read its test report, compare
it with another run, and re-run its failed states."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import attribution, charts, controls, metrics
from questions.core.numbers import whole_number
from questions.models import BatchItem, BatchRun
from questions.post_forms import RunStartForm, first_error
from questions.selectors import control_reports, disputes
from questions.selectors.runs import (
    FAILING_ITEM,
    paired_verdicts,
    results_order,
    run_counts,
    run_delta,
    run_report_and_misses,
    run_tag_slices,
)
from questions.selectors.teams import visible_runs, visible_versions
from questions.views import attribution as attribution_views


@require_POST
def run_create(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set")
    )
    form = RunStartForm(request.POST)
    if not form.is_valid():
        messages.error(request, first_error(form))
        return redirect(version)
    sent = form.cleaned_data
    try:
        run = services.batch_create(
            version=version,
            backend=sent["backend"],
            user=request.user,
            concurrency=sent["concurrency"],
            threshold=sent["threshold"],
            tag=sent["tag"],
        )
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect(version)
    return redirect("run-detail", run.pk)


#: what the results table of a run reads of its items (not the states' contents)
RUN_ITEM_FIELDS = (
    "run_id",
    "status",
    "attempts",
    "error_status",
    "error_detail",
    "answers",
    "misses",
    "sample_state__name",
    "sample_state__revision",
    "sample_state__expected",
    "sample_state__sample_state_id",
)


#: the results table shows this many states at a time; the next load as it scrolls
ITEMS_PAGE = 100

#: the changed cells the run-vs-run table lists (the compare grid has them all)
CHANGES_SHOWN = 200

#: the results filters: (value, label)
SHOWS = (("all", "every answer"), ("failing", "failures only"))


def declared_questions(document: Any) -> dict[str, tuple[str, list[str]]]:
    """A version's questions in declared order: id → (type, the choice's options or the
    score's levels as strings, in declared order)."""
    out: dict[str, tuple[str, list[str]]] = {}
    for qid, q in (document if isinstance(document, dict) else {}).items():
        if not isinstance(q, dict):
            continue
        criteria = q.get("criteria")
        if q.get("type") == "choice" and isinstance(criteria, dict):
            out[qid] = ("choice", list(criteria))
        elif q.get("type") == "score" and isinstance(criteria, list):
            out[qid] = ("score", [str(i) for i in range(len(criteria))])
        else:
            out[qid] = (str(q.get("type", "")), [])
    return out


#: a state the run has not asked (or stopped before asking): no ✓ or ✗ until it is answered
NOT_ASKED_YET = frozenset(
    {BatchItem.Status.PENDING, BatchItem.Status.RUNNING, BatchItem.Status.CANCELLED}
)


@dataclass
class ResultRow:
    """One (state, question) of a run: expected, answer, ✓/✗ (None: nothing to check)."""

    item: BatchItem
    question: str
    qtype: str
    expected: Any
    answer: str
    passed: bool | None
    error: str = ""


def _result_rows(
    item: BatchItem,
    questions: dict[str, tuple[str, list[str]]],
    run: BatchRun,
    only: str,
    show: str,
) -> list[ResultRow]:
    expected = item.sample_state.expected or {}
    if item.status in NOT_ASKED_YET:  # neither right nor wrong: not asked (yet)
        return [ResultRow(item, "", "", None, "not answered yet", None, item.status)]
    if item.status != BatchItem.Status.ANSWERED:
        detail = f"{item.error_status}: {item.error_detail}" if item.error_status else ""
        return [ResultRow(item, "", "", None, "no answer", False, detail or item.status)]
    answers = item.answers or {}
    rows = []
    for qid in [*questions, *(q for q in answers if q not in questions)]:
        if (only and qid != only) or qid not in answers:
            continue
        answer = answers[qid]
        qtype = answer.get("type", questions.get(qid, ("",))[0])
        case = metrics.Case("", qid, qtype, answer, expected.get(qid))
        ok = metrics.passes(qtype, answer, case.expected, run.threshold) if case.checked else None
        if show == "failing" and ok is not False:
            continue
        rows.append(
            ResultRow(
                item, qid, qtype, expected.get(qid), metrics.shown(qtype, answer, run.threshold), ok
            )
        )
    rows.sort(key=lambda r: r.passed is not False)  # this state's failures first
    return rows


def _items_context(run: BatchRun, request: HttpRequest) -> dict:
    """A page of the results table: failed states and states with a missed answer first,
    then by name; filtered by outcome, state name and question."""
    start = whole_number(request.GET.get("items_from", "0"), digits=9) or 0
    show = request.GET.get("show", "all")
    show = show if show in dict(SHOWS) else "all"
    search = request.GET.get("q", "").strip()[:100].replace("\x00", "")
    questions = declared_questions(run.version.document)
    only = request.GET.get("question", "")
    only = only if only in questions else ""
    items = (  # a control's real calls (variant 0), as its report counts them
        run.items.filter(variant=0).select_related("sample_state").only(*RUN_ITEM_FIELDS)
    )
    if show == "failing":
        items = items.filter(FAILING_ITEM)
    if search:
        items = items.filter(sample_state__name__icontains=search)
    # a finished run stored each item's place in this order with its summary: a page of it is
    # a range of an index, not a sort of every item
    stored = run.finished and run.checked is not None
    items = items.order_by("place") if stored else results_order(items)
    items = list(items[start : start + ITEMS_PAGE + 1])
    more = len(items) > ITEMS_PAGE
    rows = [r for i in items[:ITEMS_PAGE] for r in _result_rows(i, questions, run, only, show)]
    filters = {k: v for k, v in (("show", show), ("q", search), ("question", only)) if v}
    return {
        "run": run,
        "rows": rows,
        "items_next": start + ITEMS_PAGE if more else None,
        "items_page": ITEMS_PAGE,
        "filters": filters,
        "filter_query": urlencode(filters),
        "question_ids": list(questions),
        "shows": SHOWS,
        "compare_base": _compare_base(run),
    }


def _compare_base(run: BatchRun) -> str:
    """The compare screen's address for this run, `state=` last so a state id completes it
    (worked out once a page, not once a row)."""
    url = reverse("set-compare", args=[run.question_set.slug])
    return f"{url}?col=run:{run.pk}&filter=all&state="


def _progress_context(run: BatchRun) -> dict:
    """The progress bar's counts and what they count: a control asks each state once per
    variant, so its counts are calls, not states; an attribution asks its one state many
    times, so it counts the state (done when every call is) and says its calls beside it."""
    counts = run_counts(run)
    unit, states = "states", counts["total"]
    found = {"run": run, "counts": counts, "states_done": None}
    if control_reports.is_control(run):
        variants = controls.variants(run.kind, run.control_count)
        states = counts["total"] // max(1, variants)
        unit = f"calls ({states} states × {variants} calls each)"
    elif run.kind == attribution.KIND and run.attribution:
        calls = attribution.Plan.from_json(run.attribution).calls
        states = counts["total"] // max(1, calls)
        found["states_done"] = counts["done"] // max(1, calls)
        unit = "calls"
    return found | {"unit": unit, "states": states}


#: a confusion matrix, or a calibration's measures, summarise at least this many checked
#: answers (one answer, as an attribution's, is a row of the results table, not a matrix)
MIN_SUMMARISED = 2


def confusion_table(q: metrics.QuestionReport, declared: list[str]) -> dict:
    """A confusion matrix in the declared option (or level) order, then any other value met;
    every cell a number (zeros too), the diagonal marked."""
    seen = set(q.confusion) | {k for row in q.confusion.values() for k in row}
    order = [*declared, *sorted(seen - set(declared))]
    return {
        "question": q.question,
        "qtype": q.qtype,
        "columns": order,
        "rows": [
            (
                expected,
                [
                    (q.confusion.get(expected, {}).get(chosen, 0), chosen == expected)
                    for chosen in order
                ],
            )
            for expected in order
            if expected in q.confusion or expected in declared
        ],
    }


@require_GET
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """A run: its progress while it runs, then its report, its results table (a page at a
    time) and, with `?against=N`, what moved against run N."""
    run = get_object_or_404(
        visible_runs(request.user).select_related(
            "question_set", "version", "created_by", "rerun_of"
        ),
        pk=pk,
    )
    if request.htmx and request.GET.get("items_from"):  # the next rows of the results table
        return render(request, "questions/run_detail.html#run-items", _items_context(run, request))
    if request.htmx and request.htmx.target == "run-progress":
        response = render(request, "questions/run_detail.html#run-progress", _progress_context(run))
        if run.finished:
            response["HX-Refresh"] = "true"  # the report is ready: show the whole page
        return response
    report = _report_context(run)
    progress = _progress_context(run)
    shown = run.finished or progress["counts"]["answered"]
    context = {
        **progress,
        "control": control_reports.section(run) if shown else None,
        "attribution": attribution_views.run_context(run, "attribution")
        if run.kind == attribution.KIND and run.finished
        else None,
        **report,
        **_items_context(run, request),
        **_against_context(run, whole_number(request.GET.get("against", ""))),
        "reruns": run.reruns.order_by("pk"),
        "tag_slices": run_tag_slices(run) if shown else [],
        "can_run": roles.may_ask_live(request.user, run.question_set),
        "answered_by": _answered_by(run),
    }
    return render(request, "questions/run_detail.html", context)


def _report_context(run: BatchRun) -> dict:
    """The run's test report: per question as the version declares them (then any other by
    id) with its confusion matrix, the two calibration figures, and the misses it lists, the
    most confidently wrong first."""
    report, misses = run_report_and_misses(run)
    declared = declared_questions(run.version.document)
    declared_at = {qid: n for n, qid in enumerate(declared)}
    ambiguous = disputes.ambiguous_counts(run.question_set, run=run)
    return {
        "report": report,
        "ambiguous": sum(ambiguous.values()),
        "questions": [
            {
                "report": q,
                "confusion": confusion_table(q, declared.get(q.question, ("", []))[1])
                if q.confusion and q.checked >= MIN_SUMMARISED
                else None,
                "ambiguous": ambiguous.get(q.question, 0),
            }
            for q in sorted(
                report.questions.values(),
                key=lambda q: (declared_at.get(q.question, len(declared_at)), q.question),
            )
        ],
        "calibrations": [
            charts.calibration_figure(
                "noul",
                "P(true) against how often the expected answer was true",
                report.noul_calibration,
            ),
            charts.calibration_figure(
                "choice",
                "probability of the chosen option against how often it was right",
                report.choice_calibration,
            ),
        ],
        "sparse_bin": metrics.SPARSE_BIN,
        "min_summarised": MIN_SUMMARISED,
        "misses": misses,
        "missed": report.checked - report.passed,
    }


def _against_context(run: BatchRun, other_pk: int | None) -> dict:
    """The set's other runs to compare with (the previous one first offered) and, against run
    `other_pk` of the same set, the cells that moved (each with whether it is within the
    repeatability noise floor) and the paired verdicts."""
    runs = list(
        run.question_set.batch_runs.exclude(pk=run.pk)
        .select_related("version")
        .defer("version__document_text")[:30]
    )
    other, delta, paired, noise = None, None, None, None
    if other_pk is not None:
        other = BatchRun.objects.filter(pk=other_pk, question_set=run.question_set).first()
        if other:
            delta = run_delta(other, run, run.version.document, CHANGES_SHOWN)
            paired = paired_verdicts(other, run)
            noise = control_reports.noise_floor(run.question_set, [other.version, run.version])
    return {
        "runs": runs,
        "previous": next((r for r in runs if r.pk < run.pk), runs[0] if runs else None),
        "other": other,
        "delta": delta,
        "paired": paired,
        "paired_questions": [(k, v) for k, v in (paired or {}).items() if k != "overall"],
        "changes_shown": CHANGES_SHOWN,
        "changes_listed": [
            (c, bool(noise and noise.holds(c.question, c.qtype, c.before, c.after)))
            for c in (delta.changes[:CHANGES_SHOWN] if delta else [])
        ],
        "noise": noise,
    }


def _answered_by(run: BatchRun) -> list[str]:
    """The models that answered the run, where they are not the model it asked (a provider's
    alias resolved, or the local stand-in)."""
    answered = (
        run.items.exclude(decision=None)
        .exclude(decision__model_answered__in=("", run.model))
        .values_list("decision__model_answered", flat=True)
        .distinct()
        .order_by()
    )
    return sorted(answered[:4])


@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(visible_runs(request.user), pk=pk)
    services.batch_cancel(run=run, user=request.user)
    messages.info(request, "Cancelling: no new state is asked; calls in flight finish.")
    return redirect("run-detail", pk)


@require_POST
def run_rerun_failed(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(
        visible_runs(request.user).select_related("version__question_set"), pk=pk
    )
    try:
        rerun = services.batch_rerun_failed(run=run, user=request.user)
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("run-detail", pk)
    return redirect("run-detail", rerun.pk)
