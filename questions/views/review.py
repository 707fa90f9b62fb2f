"""Review: the review queue, a version's review page and the decision on it (approve,
request changes, comment: one function per action), and moving a label."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from questions import roles, services
from questions.core import diff
from questions.models import Version
from questions.post_forms import LabelMoveForm, first_error
from questions.selectors import review
from questions.selectors.teams import visible_sets, visible_versions
from questions.services.errors import require
from questions.services.reviews import REVIEWERS_ONLY


@require_GET
def review_queue(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "questions/review_queue.html",
        {
            "versions": review.review_queue(request.user),
            "can_review": roles.may_review(request.user, None),
        },
    )


@require_http_methods(["GET", "POST"])
def version_review(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The evidence (diff against production, open lints) and the decision on it: a POST's
    `action` names one of `REVIEW_ACTIONS`; a refused one shows the page with the reason."""
    version = get_object_or_404(
        visible_versions(request.user).of(slug, number).select_related("question_set", "author")
    )
    if request.method == "GET" and request.GET.get("question"):
        return _question_entries(request, version, request.GET["question"])
    problem = None
    if request.method == "POST":
        act = REVIEW_ACTIONS.get(request.POST.get("action", ""))
        try:
            if act is not None:
                return act(request, version)
            problem = "Unknown action."
        except services.WeakEvidence as exc:
            problem = (
                f"This version {exc.reason}: tick “Approve anyway” to approve it, and say why "
                "in the note."
            )
        except services.ServiceError as exc:
            problem = str(exc)
    return _review_page(request, version, problem)


def _question_entries(request: HttpRequest, version: Version, qid: str) -> HttpResponse:
    """One question's entries, loaded when its card is opened on a large version's page."""
    question = version.document.get(qid)
    if question is None:
        raise Http404("No such question in this version.")
    return render(
        request,
        "questions/version_review.html#question-entries",
        {"content": diff.question_content(qid, question)},
    )


def _review_page(request: HttpRequest, version: Version, problem: str | None) -> HttpResponse:
    """The page (`selectors.review.review_page`) with what this person may do on it."""
    page = review.review_page(version, full=request.GET.get("full") == "1")
    evidence = page["evidence"]
    page |= {
        "can_review": roles.may_review(request.user, version.question_set),
        "can_comment": roles.may_comment(request.user, version.question_set),
        "own_version": services.wrote(request.user, version),
        "problem": problem,
        "weak": services.weak_evidence(version, page["weak_basis"]) if version.is_in_review else "",
        "pin": services.pin_check(
            version, evidence["this"]["run_obj"] if evidence["this"] else None, find=False
        ),
    }
    return render(request, "questions/version_review.html", page, status=422 if problem else 200)


def _to_page(version: Version) -> HttpResponse:
    return redirect("version-review", version.question_set.slug, version.number)


def _approve(request: HttpRequest, version: Version) -> HttpResponse:
    services.version_approve(
        version=version,
        reviewer=request.user,
        note=request.POST.get("note", ""),
        label=request.POST.get("label", "").strip(),
        confirm_weak_evidence=request.POST.get("confirm_weak") == "yes",
    )
    messages.success(request, f"Approved version {version.number}.")
    return _to_page(version)


def _request_changes(request: HttpRequest, version: Version) -> HttpResponse:
    services.version_request_changes(
        version=version, reviewer=request.user, note=request.POST.get("note", "")
    )
    messages.success(request, f"Sent version {version.number} back to its author.")
    return _to_page(version)


def _comment(request: HttpRequest, version: Version) -> HttpResponse:
    services.version_comment(version=version, actor=request.user, note=request.POST.get("note", ""))
    return _to_page(version)


#: what a review page's POST may do, by its `action`
REVIEW_ACTIONS: dict[str, Callable[[HttpRequest, Version], HttpResponse]] = {
    "approve": _approve,
    "request_changes": _request_changes,
    "comment": _comment,
}


@require_POST
def label_move(request: HttpRequest, slug: str) -> HttpResponse:
    question_set = get_object_or_404(visible_sets(request.user), slug=slug)
    require(request.user, roles.may_review, REVIEWERS_ONLY, on=question_set)
    form = LabelMoveForm(request.POST)
    if not form.is_valid():
        messages.error(request, first_error(form))
        return redirect("set-detail", slug)
    name, number = form.cleaned_data["name"], form.cleaned_data["version"]
    version = question_set.versions.filter(number=number).first()
    try:
        if version is None:
            raise services.NotFound(f"{slug} has no version {number}.")
        services.label_move(
            question_set=question_set,
            name=name,
            version=version,
            actor=request.user,
            note=form.cleaned_data["note"],
        )
    except services.ServiceError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, f"{name} now points at version {number}.")
    return redirect("set-detail", slug)
