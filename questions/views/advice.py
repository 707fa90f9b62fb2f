"""The advice designer: per noul and choice of a version, precision, recall and coverage of a
threshold over a labelled batch run as an SVG curve, the stored advice marked; authors set the
advice of a draft here. The review page shows the same curves (`questions.selectors.advice`)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from questions import roles, services
from questions.core.numbers import whole_number
from questions.selectors.advice import designer_items, labelled_runs
from questions.selectors.teams import visible_versions


@require_http_methods(["GET", "POST"])
def version_advice(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set")
    )
    runs = list(labelled_runs(version)[:30])
    chosen_run = request.GET.get("run", "")
    pk = whole_number(chosen_run) if chosen_run else None
    run = next((r for r in runs if r.pk == pk), None) if pk is not None else None
    if run is None and runs and not chosen_run:
        run = runs[0]
    problem = "" if run or not chosen_run else f"v{number} has no finished run {chosen_run[:20]!r}."
    items = designer_items(version, run)
    status = 200
    if request.method == "POST":
        advice, problem = _advice_from(request.POST, items)
        if not problem:
            try:
                services.version_set_advice(version=version, advice=advice, author=request.user)
            except services.ServiceError as exc:
                problem = str(exc)
            else:
                messages.success(request, f"Saved the advice of version {number}.")
                query = f"?run={run.pk}" if run else ""
                return redirect(request.path + query)
        status = 422
    context = {
        "set": version.question_set,
        "version": version,
        "runs": runs,
        "run": run,
        "items": items,
        "problem": problem,
        "can_edit": version.is_draft and roles.may_write(request.user, version.question_set),
        "posted": request.POST if request.method == "POST" else {},
    }
    return render(request, "questions/version_advice.html", context, status=status)


def _advice_from(form, items: list[dict[str, Any]]) -> tuple[dict[str, Any], str]:
    """The advice the form's fields give (`advice-<n>` per item, blank for none), or why not."""
    advice: dict[str, Any] = {}
    for i, item in enumerate(items):
        raw = form.get(f"advice-{i}", "").strip()
        if not raw:
            continue
        try:
            value = float(raw)
        except ValueError:
            return {}, f"The {item['what']} of `{item['id']}` is not a number ({raw[:20]!r})."
        advice[item["id"]] = {item["field"]: value}
    return advice, ""
