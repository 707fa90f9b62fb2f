"""Review and export: the review queue and page, labels, the export download, the runtime's
HTTP export with bearer tokens, the published JSON Schema, and the tokens page."""

from __future__ import annotations

import secrets
from urllib.parse import urlencode

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.db.models import Case, When
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from questions import exports, roles, services
from questions.core import controls, diff, spec
from questions.core.numbers import whole_number
from questions.models import APIToken, Label, QuestionSet, Version
from questions.post_forms import LabelMoveForm, first_error
from questions.selectors import advice, control_reports, review, sets
from questions.services.errors import require, storable
from questions.services.reviews import REVIEWERS_ONLY
from questions.services.tokens import TOKEN_MANAGERS_ONLY


@require_GET
def review_queue(request: HttpRequest) -> HttpResponse:
    return render(
        request,
        "questions/review_queue.html",
        {"versions": review.review_queue(), "can_review": roles.may_review(request.user)},
    )


@require_http_methods(["GET", "POST"])
def version_review(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The evidence (diff against production, open lints) and the decision on it."""
    version = get_object_or_404(
        Version.objects.of(slug, number).select_related("question_set", "author")
    )
    if request.method == "GET" and request.GET.get("question"):  # one question's entries
        qid = request.GET["question"]
        question = version.document.get(qid)
        if question is None:
            raise Http404("No such question in this version.")
        return render(
            request,
            "questions/version_review.html#question-entries",
            {"content": diff.question_content(qid, question)},
        )
    problem = None
    if request.method == "POST":
        action = request.POST.get("action")
        note = request.POST.get("note", "")
        try:
            if action == "approve":
                services.version_approve(
                    version=version,
                    reviewer=request.user,
                    note=note,
                    label=request.POST.get("label", "").strip(),
                    confirm_weak_evidence=request.POST.get("confirm_weak") == "yes",
                )
                messages.success(request, f"Approved version {number}.")
                return redirect("version-review", slug, number)
            if action == "request_changes":
                services.version_request_changes(version=version, reviewer=request.user, note=note)
                messages.success(request, f"Sent version {number} back to its author.")
                return redirect("version-review", slug, number)
            if action == "comment":
                services.version_comment(version=version, actor=request.user, note=note)
                return redirect("version-review", slug, number)
            problem = "Unknown action."
        except services.WeakEvidence as exc:
            problem = (
                f"This version {exc.reason}: tick “Approve anyway” to approve it, and say why "
                "in the note."
            )
        except services.ServiceError as exc:
            problem = str(exc)
    baseline, baseline_name = review.review_baseline(version)
    document = version.document
    lints = spec.validate(
        document,
        limits=settings.DECISIONS_LIMITS,
        sample_states=sets.sample_state_paths(version.question_set),
    ).warnings
    lints_of: dict[str, list[spec.Issue]] = {}
    for lint in lints:
        if lint.question is not None:
            lints_of.setdefault(lint.question, []).append(lint)
    parent = version.parent if version.parent_id else None
    against_baseline = diff.document_diff(baseline.document if baseline else {}, document)
    against_parent = None
    if parent is not None and (baseline is None or parent.pk != baseline.pk):
        against_parent = diff.document_diff(parent.document, document)
    evidence = review.review_evidence(version, baseline)
    context = {
        "comparisons": review.review_comparisons(version, baseline, baseline_name),
        "control_verdicts": control_reports.latest_verdicts(version),
        "approval": exports.approval_of(version) if version.is_approved else None,
        "no_signal_words": controls.NO_SIGNAL,
        "set": version.question_set,
        "version": version,
        "baseline": baseline,
        "baseline_name": baseline_name,
        "parent": parent,
        "diff": against_baseline,
        "questions": [
            {**q, "lints": lints_of.get(q["content"].id, [])}
            for q in review_questions(
                document,
                against_baseline,
                against_parent,
                inline_all=request.GET.get("full") == "1"
                or entry_count(document) <= INLINE_ENTRIES,
            )
        ],
        "removed": [
            q
            for d in (against_baseline, against_parent)
            if d
            for q in d.questions
            if q.status == "removed"
        ],
        "lints": lints,
        "events": version.events.select_related("actor"),
        "can_review": roles.may_review(request.user),
        "can_comment": roles.may_comment(request.user),
        "own_version": services.wrote(request.user, version),
        "labels": sets.labels_of(version.question_set),
        "problem": problem,
        "evidence": evidence,
        "advice": advice.review_curves(version),
        "weak": services.weak_evidence(version, evidence) if version.is_in_review else "",
        "pin": services.pin_check(
            version, evidence["this"]["run_obj"] if evidence["this"] else None, find=False
        ),
        "evidence_rows": [
            (f"v{version.number} (this version)", evidence["this"], version),
            *(
                [(f"v{baseline.number} ({baseline_name})", evidence["base"], baseline)]
                if baseline
                else []
            ),
        ],
    }
    if evidence["this"] and evidence["base"]:
        context["compare_query"] = (
            f"col=run:{evidence['base']['run']}&col=run:{evidence['this']['run']}&filter=changes"
        )
    return render(request, "questions/version_review.html", context, status=422 if problem else 200)


#: up to this many options, levels and cases in all, the review page writes every question's
#: out; above, those of unchanged questions load when opened (or all with ?full=1)
INLINE_ENTRIES = 400


def entry_count(document: dict) -> int:
    return sum(
        len(q["criteria"])
        for q in document.values()
        if isinstance(q, dict) and isinstance(q.get("criteria"), dict | list)
    )


def review_questions(
    document: dict, against_baseline, against_parent, *, inline_all: bool = True
) -> list[dict]:
    """Every question of the version with its whole content, and what changed in it against
    the baseline (production) and against the parent version, when that is another. The entries
    of a question added, retyped or with changed entries are always written out; others' when
    `inline_all`."""
    by_baseline = {q.id: q for q in against_baseline.questions}
    by_parent = {q.id: q for q in against_parent.questions} if against_parent else {}
    questions = []
    for qid, question in document.items():
        base, parent = by_baseline.get(qid), by_parent.get(qid)
        changed = any(
            d is not None
            and (
                d.status in ("added", "retyped")
                or any(c.label != "instructions" for c in d.changes)
            )
            for d in (base, parent)
        )
        questions.append(
            {
                "content": diff.question_content(qid, question),
                "baseline": base,
                "parent": parent,
                "inline": inline_all or changed,
            }
        )
    return questions


@require_POST
def label_move(request: HttpRequest, slug: str) -> HttpResponse:
    require(request.user, roles.may_review, REVIEWERS_ONLY)
    question_set = get_object_or_404(QuestionSet, slug=slug)
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


# --- export --------------------------------------------------------------------------------------


def _export_response(
    request: HttpRequest, ref: exports.ExportRef, *, download: bool, if_none_match: str = ""
) -> HttpResponse:
    """The export document; its ETag is the hash of these very bytes, so any change of body
    changes it, and an `If-None-Match` that holds it gets a 304. A client that accepts gzip
    gets the body gzipped (made once per version), its ETag marked weak as Django's own gzip
    does; either form of the tag matches."""
    body = exports.export_body(ref)
    etag = f'"{body.etag}"'
    gzipped = "gzip" in request.headers.get("Accept-Encoding", "").lower()
    shown_etag = f"W/{etag}" if gzipped else etag
    if _etag_matches(if_none_match, etag):
        response = HttpResponse(status=304)  # the same validators and links as its 200
    else:
        response = HttpResponse(
            body.gzipped if gzipped else body.text, content_type="application/json; charset=utf-8"
        )
        if gzipped:
            response["Content-Encoding"] = "gzip"
    response["Vary"] = "Accept-Encoding"
    response["ETag"] = shown_etag
    response["Link"] = (
        f'<{request.build_absolute_uri(reverse("export-schema"))}>; rel="describedby"'
    )
    response["Cache-Control"] = "no-cache"
    if response.status_code == 304:
        return response
    if download:
        response["Content-Disposition"] = f'attachment; filename="{ref.slug}-v{ref.number}.json"'
    return response


@require_GET
def version_export(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Download the export document of an approved version."""
    ref = exports.export_ref(slug, number=number)
    if ref is None:
        raise Http404("No such approved version.")
    return _export_response(request, ref, download=True)


@login_not_required
@require_GET
def export_schema(request: HttpRequest) -> HttpResponse:
    """The committed JSON Schema (draft 2020-12) of the export document, at a stable URL."""
    return FileResponse(
        open(exports.EXPORT_SCHEMA_PATH, "rb"), content_type="application/schema+json"
    )


def _etag_matches(header: str, etag: str) -> bool:
    for candidate in header.split(","):
        tag = candidate.strip().removeprefix("W/")
        if tag == "*" or tag == etag:
            return True
    return False


@login_not_required
@require_http_methods(["GET", "HEAD"])
def api_export(request: HttpRequest, slug: str) -> HttpResponse:
    """`GET /api/sets/<slug>/export.json?label=L` (or `?version=N`) for the runtime, with
    `Authorization: Bearer <token>`. 401 without a good token; 404 for an unknown label or
    version or one that is not approved — never a fallback; 304 when `If-None-Match` holds."""
    scheme, _, raw = request.headers.get("Authorization", "").partition(" ")
    token = services.api_token_authenticate(raw.strip()) if scheme.lower() == "bearer" else None
    if token is None:
        response = JsonResponse(
            {
                "detail": "A valid API token is needed: Authorization: "
                "Bearer <token> (create one with manage.py questions token)."
            },
            status=401,
        )
        response["WWW-Authenticate"] = 'Bearer realm="decision-console"'
        return response
    label, number = request.GET.get("label"), request.GET.get("version")
    if (label is None) == (number is None):
        return JsonResponse(
            {"detail": "Give exactly one of ?label=NAME or ?version=N."}, status=400
        )
    read = None if number is None else whole_number(number, digits=9)
    if number is not None and read is None:
        return JsonResponse(
            {"detail": f"version must be a whole number in ASCII digits, not {number[:20]!r}."},
            status=400,
        )
    if label is not None and "\x00" in label:
        return JsonResponse({"detail": "label holds a NUL character (\\x00)."}, status=400)
    ref = exports.export_ref(slug, label=label, number=read)
    if ref is None:
        what = f"label {label!r}" if label is not None else f"version {number}"
        return JsonResponse({"detail": f"{slug} has no approved {what}."}, status=404)
    response = _export_response(
        request, ref, download=False, if_none_match=request.headers.get("If-None-Match", "")
    )
    services.export_fetch_record(
        token_id=token,
        set_id=ref.set_id,
        label=label,
        version_id=ref.version_id,
        etag=response["ETag"].removeprefix("W/").strip('"'),
        status=response.status_code,
    )
    return response


# --- API tokens ----------------------------------------------------------------------------------


@never_cache  # a new token is on this page once: no cache, shared or private, may keep it
@require_http_methods(["GET", "POST"])
def token_list(request: HttpRequest) -> HttpResponse:
    """Reviewers and staff create, see and revoke the runtime's tokens; a new token is shown
    once."""
    require(request.user, roles.may_manage_tokens, TOKEN_MANAGERS_ONLY)
    created = None
    problem, status = None, 200
    slug = request.GET.get("set", "")
    try:
        storable(slug, "?set")
    except services.Invalid as exc:  # no database looks a NUL up; nothing is done
        problem, status, slug = str(exc), 400, ""
    if request.method == "POST" and status == 200:
        if request.POST.get("revoke"):
            raw = request.POST["revoke"]
            pk = whole_number(raw)
            if pk is None:
                raise Http404("No such token.")
            token = get_object_or_404(APIToken, pk=pk)
            services.api_token_revoke(token=token, user=request.user)
            messages.success(request, f"Revoked {token.name}.")
            return redirect("token-list")
        if request.POST.get("once") != request.session.pop(TOKEN_FORM, None):
            # a reload (or a second tab) sends the create form again: it makes no second token
            problem, status = (
                "This form was sent already, so no second token was made (the first was shown "
                "once). To make another, fill in the form below.",
                409,
            )
        else:
            try:
                token, created = services.api_token_create(
                    name=request.POST.get("name", ""), user=request.user
                )
            except services.ServiceError as exc:
                problem, status = str(exc), exc.status
    request.session[TOKEN_FORM] = once = secrets.token_urlsafe(16)
    return render(
        request,
        "questions/token_list.html",
        {
            "tokens": APIToken.objects.select_related("created_by"),
            "created": created,
            "problem": problem,
            "example": _export_example(request, slug),
            "once": once,
            "name": request.POST.get("name", "") if problem else "",
        },
        status=status,
    )


#: the session key of the create-token form's one-time value
TOKEN_FORM = "token_form"


def _export_example(request: HttpRequest, slug: str) -> str | None:
    """The export URL of a label to fill into the page's curl: the `?set=` given (its
    `production`, else its newest label), else the label moved last; None when no set has one."""
    labels = Label.objects.select_related("question_set").order_by("-updated_at")
    if slug:
        labels = labels.filter(question_set__slug=slug).order_by(
            Case(When(name=Label.BASELINE, then=0), default=1), "-updated_at"
        )
    label = labels.first()
    if label is None:
        return None
    url = reverse("api-export", args=[label.question_set.slug])
    return request.build_absolute_uri(f"{url}?{urlencode({'label': label.name})}")
