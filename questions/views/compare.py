"""The comparison screen: versions × backends × runs, side by side, per state or across all."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from questions import backends, comparison
from questions.models import QuestionSet


@require_GET
def set_compare(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(QuestionSet, slug=slug)
    selection = comparison.Selection.from_query(request.GET, question_set)
    columns, rows = comparison.build(question_set, selection, request.user)
    fmt = request.GET.get("format")
    if fmt == "json":
        response = HttpResponse(
            comparison.as_json(columns, rows, selection),
            content_type="application/json; charset=utf-8",
        )
        response["Content-Disposition"] = f'attachment; filename="{slug}-comparison.json"'
        return response
    if fmt == "csv":
        response = HttpResponse(
            comparison.as_csv(columns, rows), content_type="text/csv; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{slug}-comparison.csv"'
        return response
    choices = [
        (f"run:{r.pk}", f"run {r.pk} · v{r.version.number} · {r.backend} · {r.status}")
        for r in question_set.batch_runs.select_related("version")[:30]
    ]
    for v in question_set.versions.order_by("-number"):
        for b in backends.available():
            choices.append((f"v{v.number}:{b.name}", f"v{v.number} · {b.name}"))
    removals = [
        (c.key, selection.query(columns=[k for k in selection.columns if k != c.key]))
        for c in columns
    ]
    context = {
        "set": question_set,
        "selection": selection,
        "columns": columns,
        "rows": rows,
        "states": question_set.sample_states.order_by("name"),
        "choices": [c for c in choices if c[0] not in selection.columns],
        "removals": removals,
        "filters": [(f, selection.query(filter=f)) for f in comparison.FILTERS],
        "csv_query": selection.query() + "&format=csv",
        "json_query": selection.query() + "&format=json",
    }
    return render(request, "questions/set_compare.html", context)
