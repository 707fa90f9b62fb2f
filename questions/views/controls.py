"""A set's controls and drift page: start a shuffle control, an order-sensitivity or a
repeatability run of a version, or a drift run of a label's approved version on another model;
and the list of those runs, each with its report on the run page."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from questions import backends, controls, roles, services
from questions.models import QuestionSet
from questions.services import controls as control_services
from questions.views import whole_number

#: control and drift runs listed, newest first
SHOWN_RUNS = 30


@require_GET
def set_controls(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(QuestionSet, slug=slug)
    runs = (
        question_set.batch_runs.exclude(kind="run")
        .select_related("version", "created_by", "baseline")
        .order_by("-created_at", "-id")[:SHOWN_RUNS]
    )
    context = {
        "set": question_set,
        "runs": runs,
        "versions": question_set.versions.order_by("-number").only("pk", "number", "status"),
        "labels": question_set.labels.select_related("version").order_by("name"),
        "backends": [b.name for b in backends.available() if b.live],
        "kinds": [(k, controls.TITLES[k]) for k in controls.KINDS],
        "max_variants": controls.MAX_VARIANTS,
        "can_run": roles.may_ask_live(request.user),
        "no_signal": controls.NO_SIGNAL,
    }
    return render(request, "questions/set_controls.html", context)


@require_POST
def control_start(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(QuestionSet, slug=slug)
    number = whole_number(request.POST.get("version", ""))
    count = whole_number(request.POST.get("count", ""))
    seed = whole_number(request.POST.get("seed") or "0", digits=10)
    version = question_set.versions.filter(number=number).first() if number else None
    if version is None or count is None or seed is None:
        messages.error(request, "Pick a version, and give the count and seed as whole numbers.")
        return redirect("set-controls", slug)
    try:
        run = control_services.control_create(
            version=version,
            backend=request.POST.get("backend", ""),
            user=request.user,
            kind=request.POST.get("kind", ""),
            count=count,
            seed=seed,
        )
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("set-controls", slug)
    return redirect("run-detail", run.pk)


@require_POST
def drift_start(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(QuestionSet, slug=slug)
    chosen = (
        question_set.labels.select_related("version")
        .filter(name=request.POST.get("label", ""))
        .first()
    )
    model = request.POST.get("model", "").strip()
    if chosen is None or not model:
        messages.error(request, "Pick a label and name the model to set against it.")
        return redirect("set-controls", slug)
    try:
        run = control_services.drift_create(
            version=chosen.version,
            model=model,
            user=request.user,
            backend=request.POST.get("backend") or None,
        )
    except services.ServiceError as exc:
        messages.error(request, str(exc))
        return redirect("set-controls", slug)
    return redirect("run-detail", run.pk)
