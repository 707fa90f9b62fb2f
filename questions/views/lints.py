"""Accepting a lint finding with a reason: the page a warning's “Accept with a reason…” opens
(the finding as the saved version has it, and the reason's field), and its POST (the rule is
`services.lint_accept`'s)."""

from __future__ import annotations

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods

from questions import roles, services
from questions.models import LintAcceptance
from questions.selectors import lints as lint_reads
from questions.selectors.teams import visible_versions


@require_http_methods(["GET", "POST"])
def lint_accept(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """?question=Q&code=C&path=P: the open finding of version `number`, and (POST) its
    acceptance with the reason given; back to the version once accepted."""
    version = get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set")
    )
    data = request.POST if request.method == "POST" else request.GET
    question, code = data.get("question", ""), data.get("code", "")
    path = data.get("path", "") or None
    problem, status = "", 200
    if request.method == "POST":
        try:
            services.lint_accept(
                version=version,
                question=question,
                code=code,
                path=path,
                reason=data.get("reason", ""),
                actor=request.user,
            )
        except services.ServiceError as exc:
            problem, status = str(exc), exc.status
        else:
            messages.success(request, f"Accepted the `{code}` warning on `{question}`.")
            return redirect(version)
    found = lint_reads.version_lints(version)
    context = {
        "set": version.question_set,
        "version": version,
        "finding": next(iter(lint_reads.named(found.open, question, code, path)), None),
        "question": question,
        "code": code,
        "path": path or "",
        "reason": data.get("reason", ""),
        "reason_limit": LintAcceptance.REASON_LIMIT,
        "problem": problem,
        "can_accept": roles.may_write(request.user, version.question_set),
        "accepted": lint_reads.accepted_rows(found),
    }
    return render(request, "questions/lint_accept.html", context, status=status)
