"""A set's change webhooks: reviewers add and remove endpoints, send a test event, and read the
delivery log (every attempt: the endpoint's status code and how long it took, or what went
wrong; never what the endpoint answered)."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST

from questions import roles, services
from questions.engine import webhooks
from questions.models import Webhook, WebhookDelivery
from questions.post_forms import WebhookForm, first_error
from questions.selectors.teams import visible_sets, visible_webhooks
from questions.services.errors import require
from questions.services.webhooks import WEBHOOK_MANAGERS_ONLY

#: deliveries shown per endpoint, newest first
SHOWN_DELIVERIES = 10


@require_http_methods(["GET", "POST"])
def set_webhooks(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    require(request.user, roles.may_manage_webhooks, WEBHOOK_MANAGERS_ONLY, on=question_set)
    created, problem, typed = None, None, {}
    if request.method == "POST":
        form = WebhookForm(request.POST)
        typed = {k: request.POST.get(k, "") for k in form.fields}
        if not form.is_valid():
            problem = first_error(form)
        else:
            try:
                hook, secret = services.webhook_create(
                    question_set=question_set,
                    url=form.cleaned_data["url"],
                    description=form.cleaned_data["description"],
                    user=request.user,
                )
                created, typed = {"hook": hook, "secret": secret}, {}
            except services.ServiceError as exc:
                problem = str(exc)
    hooks = []
    for hook in question_set.webhooks.select_related("created_by"):
        deliveries = list(
            hook.deliveries.prefetch_related(Prefetch("attempt_log"))[:SHOWN_DELIVERIES]
        )
        hooks.append({"hook": hook, "deliveries": deliveries})
    context = {
        "set": question_set,
        "hooks": hooks,
        "created": created,
        "problem": problem,
        "typed": typed,
        "events": [webhooks.describe(e) for e in (webhooks.APPROVED, webhooks.LABEL_MOVED)],
        "signature_header": webhooks.SIGNATURE_HEADER,
        "tolerance": webhooks.TOLERANCE_SECONDS,
        "event_header": webhooks.EVENT_HEADER,
        "delivery_header": webhooks.DELIVERY_HEADER,
        "pending": WebhookDelivery.Status.PENDING,
    }
    return render(request, "questions/set_webhooks.html", context, status=422 if problem else 200)


def _hook(request: HttpRequest, slug: str, pk: int) -> Webhook:
    return get_object_or_404(
        visible_webhooks(request.user).select_related("question_set"),
        pk=pk,
        question_set__slug=slug,
    )


@require_POST
def webhook_test(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    hook = _hook(request, slug, pk)
    services.webhook_send_test(webhook=hook, user=request.user)
    messages.success(
        request, f"A test event is queued for {hook.url}; the worker sends it in a moment."
    )
    return redirect("set-webhooks", slug)


@require_POST
def webhook_delete(request: HttpRequest, slug: str, pk: int) -> HttpResponse:
    hook = _hook(request, slug, pk)
    url = hook.url
    services.webhook_delete(webhook=hook, user=request.user)
    messages.success(request, f"Removed the webhook to {url}; nothing more is sent to it.")
    return redirect("set-webhooks", slug)
