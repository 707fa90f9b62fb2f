"""The comparison screen: versions × backends × runs, side by side, per state or across all."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_http_methods

from questions.engine import backends
from questions.models import QuestionSet
from questions.selectors import comparison, comparison_formats
from questions.selectors.teams import visible_sets

TEMPLATE = "questions/set_compare.html"


def selection_of(query: QueryDict, question_set: QuestionSet) -> comparison.Selection:
    """The comparison a query string names, read into plain values for `comparison`."""
    return comparison.Selection.read(
        question_set,
        columns=query.getlist("col"),
        state=query.get("state", "all"),
        filter=query.get("filter", "all"),
        threshold=query.get("threshold"),
        start=query.get("start", "0"),
    )


@require_http_methods(["GET", "POST"])
def set_compare(request: HttpRequest, slug: str) -> HttpResponse:
    """The grid of the selection in the query string. A GET only reads: a live column shows
    what its wire recorded. A POST (`ask=<column>`, the selection still in the URL) asks that
    live column about the one state now, records it, and goes back to the grid."""
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    selection = selection_of(request.GET, question_set)
    if request.method == "POST":
        return _compare_ask(request, question_set, selection, request.POST.get("ask", ""))
    fmt = request.GET.get("format")
    if fmt in ("json", "csv"):
        return _compare_download(request, question_set, selection, fmt)
    return _compare_page(request, question_set, selection)


def _compare_ask(
    request: HttpRequest, question_set: QuestionSet, selection: comparison.Selection, key: str
) -> HttpResponse:
    outcome = comparison.ask_column(question_set, selection, key, request.user)
    if outcome.error:
        messages.error(request, f"{key}: {outcome.error.status}: {outcome.error.detail}")
    else:
        messages.success(request, f"Asked {key} and recorded its answer.")
    url = f"{reverse('set-compare', args=[question_set.slug])}?{selection.query()}"
    return redirect(url)


def _compare_download(
    request: HttpRequest, question_set: QuestionSet, selection: comparison.Selection, fmt: str
) -> HttpResponse:
    """Every row, streamed a chunk of states at a time, as JSON or CSV."""
    columns, rows = comparison.stream(question_set, selection, request.user)
    if fmt == "json":
        chunks = comparison_formats.json_chunks(columns, rows, selection)
        content_type = "application/json; charset=utf-8"
    else:
        chunks = comparison_formats.csv_lines(columns, rows)
        content_type = "text/csv; charset=utf-8"
    response = StreamingHttpResponse(chunks, content_type=content_type)
    filename = f"{question_set.slug}-comparison.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _compare_page(
    request: HttpRequest, question_set: QuestionSet, selection: comparison.Selection
) -> HttpResponse:
    """A page of the grid; as the table scrolls (htmx, past the first page) its rows only."""
    columns, rows = comparison.build(question_set, selection, request.user)
    context = {
        "set": question_set,
        "selection": selection,
        "columns": columns,
        "rows": rows,
        "page_states": comparison.PAGE_STATES,
        "state_query": selection.query(state=None),
        "next_query": None
        if selection.next_start is None
        else selection.query(start=selection.next_start),
    }
    if request.htmx and selection.start:  # the next page of rows, as the table scrolls
        return render(request, TEMPLATE + "#compare-rows", context)
    states = list(dict.fromkeys(r.state for r in rows))
    if selection.state != "all" and not states:  # a chosen state with no row to show
        states = list(comparison.states_of(question_set, selection)[:1])
    context |= {
        "evidence": comparison_formats.evidence(columns, selection.noise),
        # each column with its ✕ and, past the first, its "make it the baseline" (the swap)
        "heads": [
            (c, selection.without(c.key), selection.with_baseline(c.key) if i else "")
            for i, c in enumerate(columns)
        ],
        "swap_query": selection.with_baseline(columns[1].key) if len(columns) > 1 else "",
        # the state picker offers the states on this page (each state's name links to it too)
        "states": states,
        "choices": [c for c in _column_choices(question_set) if c[0] not in selection.columns],
        "filters": [(f, selection.query(filter=f)) for f in comparison.FILTERS],
        "first_query": selection.query() if selection.start else None,
        "csv_query": selection.query() + "&format=csv",
        "json_query": selection.query() + "&format=json",
    }
    return render(request, TEMPLATE, context)


def _column_choices(question_set: QuestionSet) -> list[tuple[str, str]]:
    """The columns a page offers to add: the set's latest 30 runs, and every version through
    every backend."""
    runs = question_set.batch_runs.select_related("version").defer("version__document_text")
    choices = [
        (f"run:{r.pk}", f"run {r.pk} · v{r.version.number} · {r.backend} · {r.status}")
        for r in runs[:30]
    ]
    for number in question_set.versions.order_by("-number").values_list("number", flat=True):
        for b in backends.available():
            choices.append((f"v{number}:{b.name}", f"v{number} · {b.name}"))
    return choices
