"""A set's controls and drift page: start a shuffle control, an order-sensitivity or a
repeatability run of a version, or a drift run of a label's approved version on another model;
and the list of those runs, each with its report on the run page."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from questions import roles, services
from questions.core import controls, gate, invariance
from questions.engine import backends
from questions.models import BatchRun
from questions.post_forms import ControlStartForm, DriftStartForm, first_error
from questions.selectors.teams import visible_sets
from questions.services import controls as control_services
from questions.services.errors import storable

#: control and drift runs listed, newest first
SHOWN_RUNS = 30


@require_GET
def set_controls(request: HttpRequest, slug: str) -> HttpResponse:
    return _page(request, get_object_or_404(visible_sets(request.user), slug=slug))


def _page(request, question_set, *, problem: str = "", values: dict | None = None, status=422):
    """The page; after a refused start, with what was wrong and the form as it was sent."""
    runs = (
        question_set.batch_runs.exclude(kind__in=(BatchRun.PLAIN, gate.KIND))
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
        "invariance_kind": invariance.KIND,
        "invariance_checks": list(invariance.PROMISES.items()),
        "max_variants": controls.MAX_VARIANTS,
        "can_run": roles.may_ask_live(request.user, question_set),
        "no_signal": controls.NO_SIGNAL,
        "problem": problem,
        "values": values or {"count": "3", "seed": "0"},
    }
    return render(
        request, "questions/set_controls.html", context, status=status if problem else 200
    )


@require_POST
def control_start(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    sent = {k: request.POST.get(k, "") for k in ("version", "kind", "count", "seed", "backend")}
    form = ControlStartForm(request.POST)
    if not form.is_valid():
        return _page(request, question_set, problem=first_error(form), values=sent)
    given = form.cleaned_data
    version = question_set.versions.filter(number=given["version"]).first()
    if version is None:
        return _page(
            request, question_set, problem="Pick a version of the set to ask.", values=sent
        )
    try:
        if given["kind"] == invariance.KIND:
            run = control_services.invariance_create(
                version=version, backend=given["backend"], user=request.user
            )
        else:
            run = control_services.control_create(
                version=version,
                backend=given["backend"],
                user=request.user,
                kind=given["kind"],
                count=given["count"],
                seed=given["seed"],
            )
    except services.ServiceError as exc:
        return _page(request, question_set, problem=str(exc), values=sent, status=_status(exc))
    return redirect("run-detail", run.pk)


@require_POST
def drift_start(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    form = DriftStartForm(request.POST)
    if not form.is_valid():
        return _page(request, question_set, problem=first_error(form))
    try:
        label = storable(form.cleaned_data["label"], "The label")
    except services.Invalid as exc:  # no database looks a NUL up
        return _page(request, question_set, problem=str(exc), status=exc.status)
    chosen = question_set.labels.select_related("version").filter(name=label).first()
    if chosen is None:
        return _page(request, question_set, problem="Pick a label and name the model to ask.")
    try:
        run = control_services.drift_create(
            version=chosen.version,
            model=form.cleaned_data["model"],
            user=request.user,
            backend=form.cleaned_data["backend"],
        )
    except services.ServiceError as exc:
        return _page(request, question_set, problem=str(exc), status=_status(exc))
    return redirect("run-detail", run.pk)


def _status(exc: services.ServiceError) -> int:
    """A refused start answers with the refusal's status; a backend that is not configured is a
    choice on this form that cannot be made (422), not the server failing."""
    return exc.status if exc.status < 500 else 422
