"""The version editor: the page, as-you-type validation of one card, card operations, the save
with its stale-revision check, and the JSON view."""

from __future__ import annotations

import json
import re
from typing import Any

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from questions import forms, roles, services
from questions.core import check, spec
from questions.core.numbers import whole_number
from questions.engine import backends
from questions.models import Version
from questions.selectors import lints as lint_reads
from questions.selectors import sets
from questions.selectors import suggestions as suggestion_reads
from questions.selectors.teams import visible_versions
from questions.services import tries
from questions.services.errors import require
from questions.services.versions import WRITERS_ONLY, limits

EDIT_TEMPLATE = "questions/version_edit.html"


def _version(request: HttpRequest, slug: str, number: int) -> Version:
    return get_object_or_404(
        visible_versions(request.user)
        .of(slug, number)
        .select_related("question_set", "author", "parent")
    )


def _form_issues(cards: list[forms.Card]) -> list[spec.Issue]:
    """What JSON could not hold, as issues at the card."""
    at_card = [
        spec.Issue(
            path=f"questions.{card.id}",
            code="form",
            message=message,
            question=card.id,
            loc=("questions", card.id, "form"),
        )
        for card in cards
        for message in card.errors
    ]
    at_row = [
        spec.Issue(
            path=f"questions.{card.id}.criteria",
            code=code,
            message=message,
            question=card.id,
            loc=("questions", card.id, "row", row),
        )
        for card in cards
        for message, row, code in card.row_errors
    ]
    return at_card + at_row


def _checked(
    cards: list[forms.Card],
    document: dict,
    *,
    version: Version,
    user: Any,
    stand_ins: frozenset[str] = frozenset(),
    untouched: frozenset[str] = frozenset(),
) -> dict:
    """The issues of a document, placed at the fields of `cards`, and a status per card.
    `stand_ins` are ids that stand for other cards (counted, not checked): their issues are
    theirs, not this page's. The warnings of `untouched` rows (new, nothing typed yet) wait,
    and those accepted on the version (or one it was drawn from) do not show; an author (`user`)
    is offered to accept each other one. The lints read the state paths of `version`'s set."""

    def ours(issue: spec.Issue) -> bool:
        return not (
            len(issue.loc) > 1 and issue.loc[0] == "questions" and issue.loc[1] in stand_ins
        )

    result = check.validate(
        document,
        limits=limits(),
        sample_states=sets.sample_state_paths(version.question_set),
    )
    errors = [e for e in result.errors if ours(e)] + _form_issues(cards)
    errors_at = forms.place_issues(cards, errors)
    still_open = lint_reads.version_lints(version, [w for w in result.warnings if ours(w)]).open
    warnings_at = forms.place_issues(cards, still_open)
    for card in cards:
        for row in untouched:
            warnings_at.pop(forms.slot_id(card.key, "row", row), None)
    for card in cards:
        prefix = f"slot-{card.key}-"
        card.error_count = sum(len(v) for k, v in errors_at.items() if k.startswith(prefix))
        card.warning_count = sum(len(v) for k, v in warnings_at.items() if k.startswith(prefix))
    return {
        "errors_at": errors_at,
        "warnings_at": warnings_at,
        "error_count": sum(len(v) for v in errors_at.values()),
        "warning_count": sum(len(v) for v in warnings_at.values()),
        "document_errors": len(errors_at.get("slot-document", [])),
        "document_warnings": len(warnings_at.get("slot-document", [])),
        "blank_row": forms.Row(key="__ROW__"),
        "lint_accept_url": reverse("lint-accept", args=[version.question_set.slug, version.number])
        if roles.may_write(user, version.question_set)
        else "",
    }


def _suggestable(user: Any, version: Version, cards: list[forms.Card]) -> None:
    """Give each card how many states its question missed in the version's last run: a card
    with some offers "Suggest rewordings" (to those who may ask: it spends calls)."""
    failing = (
        suggestion_reads.failing_by_question(version)[1]
        if roles.may_ask_live(user, version.question_set)
        else {}
    )
    for card in cards:
        card.failing = failing.get(card.id, 0)


def _labelled(backend) -> dict:
    return {"name": backend.name, "live": backend.live, "label": tries.backend_label(backend)}


def _page(
    request,
    version: Version,
    cards: list[forms.Card],
    document: dict,
    *,
    revision: int,
    status: int = 200,
    **extra,
) -> HttpResponse:
    question_set = version.question_set
    _suggestable(request.user, version, cards)
    draft = (
        version
        if version.is_draft
        else question_set.versions.drafts().defer("document_text").first()
    )
    context = {
        "set": question_set,
        "version": version,
        "open_draft": draft,
        "cards": cards,
        "revision": revision,
        "limits": limits(),
        "editable": version.is_draft and roles.may_write(request.user, version.question_set),
        "can_author": roles.may_write(request.user, question_set),
        "question_types": spec.QUESTION_TYPES,
        **_picker(question_set, whole_number(request.GET.get("state", ""))),
        "backends": [
            _labelled(b)
            for b in backends.available()
            if not b.live or roles.may_ask_live(request.user, question_set)
        ],
        "backends_for_runs": [_labelled(b) for b in backends.available()]
        if roles.may_ask_live(request.user, question_set)
        else [],
        "recent_runs": list(version.batch_runs.all()[:5]),
        **_checked(cards, document, version=version, user=request.user),
        **extra,
    }
    return render(request, EDIT_TEMPLATE, context, status=status)


def _picker(question_set, selected: int | None) -> dict:
    states, total = sets.picker_states(question_set, selected)
    return {
        "sample_states": states,
        "sample_states_total": total,
        "picker_states": sets.PICKER_STATES,
        "preview_state": selected,
    }


@require_GET
def version_edit(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    version = _version(request, slug, number)
    document = version.document
    # a large card is closed: its fields come when it is opened (version_card_open)
    cards = forms.cards_from_document(document, open_rows=forms.OPEN_ROWS)
    return _page(request, version, cards, document, revision=version.revision)


def posted_cards(data, version: Version) -> list[forms.Card]:
    """The cards of a posted editor page; a closed card stands for its stored question."""
    cards = forms.cards_from_post(data)
    forms.fill_closed(cards, lambda: version.document)
    return cards


#: what an unopened card counts as while one card is checked: its id is all that is read
STAND_IN = {"type": "noul", "instructions": "(another question)"}

CARD_KEY = re.compile(r"\A[A-Za-z0-9_]{1,32}\Z")


@require_GET
def version_card_open(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """A closed card opened: its fields, from the stored question (?card=<key>&id=<id>)."""
    version = _version(request, slug, number)
    key, qid = request.GET.get("card", ""), request.GET.get("id", "")
    if not CARD_KEY.match(key):
        return HttpResponse("card names no card of this page.", status=422)
    document = version.document
    if qid not in document:
        return HttpResponse(
            f"Version {version.number} has no question {qid[:60]!r} (any more): reload the page.",
            status=404,
            content_type="text/plain; charset=utf-8",
        )
    card = forms.Card.from_question(key, qid, document[qid])
    _suggestable(request.user, version, [card])
    context = {
        "set": version.question_set,
        "version": version,
        "card": card,
        "editable": version.is_draft and roles.may_write(request.user, version.question_set),
        "limits": limits(),
        "question_types": spec.QUESTION_TYPES,
        **_checked([card], {qid: document[qid]}, version=version, user=request.user),
    }
    return render(request, EDIT_TEMPLATE + "#card", context)


@require_POST
def version_save(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Save the whole page. A stale revision, or content JSON cannot hold, is refused with the
    typed content kept on the page. From htmx (the Save button, Ctrl+S) the page stays as it
    is: the answer updates its revision and says what happened beside Save."""
    version = _version(request, slug, number)
    require(request.user, roles.may_write, WRITERS_ONLY, on=version.question_set)
    cards = posted_cards(request.POST, version)
    edited = forms.document_from_cards(cards)
    base = whole_number(
        request.POST.get("overwrite_revision") or request.POST.get("base_revision", "")
    )
    if base is None:
        base = -1

    def refused(status: int, **shown: Any) -> HttpResponse:
        if request.htmx:  # 200: htmx swaps the refusal in beside Save; nothing else changes
            return _save_answer(request, version, **shown)
        return _page(
            request, version, cards, edited.document, revision=base, status=status, **shown
        )

    if not edited.representable:
        return refused(422, problem="Nothing was saved: fix what is marked above first.")
    try:
        saved = services.version_save(
            version=version, document=edited.document, base_revision=base, author=request.user
        )
    except services.StaleRevision as exc:
        return refused(409, conflict=exc, latest_revision=exc.version.revision)
    except services.NotADraft as exc:
        return refused(409, problem=str(exc))
    tag, words = _saved_words(saved)
    if request.htmx:
        answer = _save_answer(request, saved, saved=saved, saved_tag=tag, saved_words=words)
        answer["HX-Trigger"] = "saved"  # the Try pane checks its plan again
        return answer
    messages.add_message(request, SAVED_LEVELS[tag], words)
    return redirect(saved)


SAVED_LEVELS = {"success": messages.SUCCESS, "warning": messages.WARNING}


def _saved_words(saved: Version) -> tuple[str, str]:
    """What a save says (and how: success or warning): its revision, and whether the draft
    can be submitted as it is."""
    invalid = check.validate(saved.document, limits=limits(), lints=False).errors
    if not invalid:
        return "success", f"Saved revision {saved.revision}."
    return "warning", (
        f"Saved revision {saved.revision} with {len(invalid)} "
        f"error{'s' if len(invalid) != 1 else ''}; a draft must be valid before it is submitted."
    )


def _save_answer(request: HttpRequest, version: Version, **shown: Any) -> HttpResponse:
    """A save's answer to htmx: out-of-band parts only (the revision, the words by Save)."""
    context = {"set": version.question_set, "version": version, **shown}
    return render(request, EDIT_TEMPLATE + "#save-answer", context)


@require_POST
def version_validate(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """As the author types: check one card against the contract and swap in its issues,
    counters and status (out of band). The other cards count by their ids only."""
    version = _version(request, slug, number)
    key = request.POST.get("card", "")
    keys = request.POST.getlist("q")
    card = forms.card_from_post(request.POST, key)
    forms.fill_closed([card], lambda: version.document)
    question = card.question()
    document = {request.POST.get(f"q-{k}-id", ""): STAND_IN for k in keys if k != key}
    if card.id in document:
        card.errors.append(forms.DUPLICATE_ID.format(spec.shown_id(card.id)))
    stand_ins = frozenset(document) - {card.id}
    document[card.id] = question
    untouched = frozenset(request.POST.getlist(f"q-{key}-untouched"))
    checked = _checked(
        [card],
        document,
        version=version,
        user=request.user,
        stand_ins=stand_ins,
        untouched=untouched,
    )
    context = {
        "set": version.question_set,
        "version": version,
        "card": card,
        "limits": limits(),
        "question_count": len(keys),
        **checked,
    }
    return render(request, EDIT_TEMPLATE + "#card-validation", context)


@require_http_methods(["GET", "POST"])
def version_card(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """Card operations: a new blank card (GET ?type=…), a card re-rendered for its new type,
    or a duplicate (POST op=type|duplicate)."""
    version = _version(request, slug, number)
    require(request.user, roles.may_write, WRITERS_ONLY, on=version.question_set)
    data = request.GET if request.method == "GET" else request.POST
    taken = {data.get(f"q-{key}-id", "") for key in data.getlist("q")}
    if request.method == "GET":
        card = forms.Card.blank(request.GET.get("type", "choice"))
        n = len(taken) + 1
        while f"question_{n}" in taken:
            n += 1
        card.id = f"question_{n}"
        fresh = True
    else:
        card = forms.card_from_post(request.POST, request.POST.get("card", ""))
        forms.fill_closed([card], lambda: version.document)
        card.closed, card.stored = False, spec.ABSENT  # re-rendered open, from its fields
        fresh = False
        if request.POST.get("op") == "duplicate":
            card.key = forms.new_key()
            base = f"{card.id}_copy"
            card.id, n = base, 2
            while card.id in taken:
                card.id, n = f"{base}_{n}", n + 1
            fresh = True
        elif card.type in ("choice", "score") and not card.rows:
            card.rows = [forms.Row(key=forms.new_key()), forms.Row(key=forms.new_key())]
    document = {card.id: card.question()}
    context = {
        "set": version.question_set,
        "version": version,
        "card": card,
        "fresh": fresh,
        "editable": True,
        "limits": limits(),
        "question_types": spec.QUESTION_TYPES,
        **_checked([card], document, version=version, user=request.user),
    }
    return render(request, EDIT_TEMPLATE + "#card", context)


@require_http_methods(["GET", "POST"])
def version_json(request: HttpRequest, slug: str, number: int) -> HttpResponse:
    """The whole document as JSON; a pasted one is validated before it replaces anything."""
    version = _version(request, slug, number)
    context = {
        "set": version.question_set,
        "version": version,
        "text": json.dumps(version.document, ensure_ascii=False, indent=2),
        "revision": version.revision,
        "result": None,
        "problem": None,
        "editable": version.is_draft and roles.may_write(request.user, version.question_set),
    }
    if request.method == "GET":
        return render(request, "questions/version_json.html", context)
    require(request.user, roles.may_write, WRITERS_ONLY, on=version.question_set)
    return _json_replace(request, version, context)


def _json_replace(request: HttpRequest, version: Version, context: dict) -> HttpResponse:
    """Check the pasted document (`action=check`: the result only), or replace the draft's
    with it when it is valid."""
    # a submitted textarea ends its lines with CRLF, the live check's value with LF: the same
    # text gives the same character offsets either way
    context["text"] = text = request.POST.get("document", "").replace("\r\n", "\n")
    base = whole_number(request.POST.get("base_revision", ""))
    if base is None:
        base = -1
    else:
        context["revision"] = base
    try:
        result = check.validate(
            spec.loads(text),
            limits=limits(),
            sample_states=sets.sample_state_paths(version.question_set),
        )
    except spec.JSONTextError as exc:
        result = None
        context["problem"] = f"This is not JSON: {exc}"
    else:  # the findings accepted on the version show here no more than in the editor
        result.warnings = lint_reads.version_lints(version, result.warnings).open
    context["result"] = result
    if request.POST.get("action") == "check":
        return render(request, "questions/version_json.html#json-result", context)
    if result is None or not result.valid:
        context["problem"] = context["problem"] or "Nothing was replaced: the document is invalid."
        return render(request, "questions/version_json.html", context, status=422)
    try:
        saved = services.version_save(
            version=version,
            document=result.document.questions_json(),
            base_revision=base,
            author=request.user,
        )
    except services.ServiceError as exc:
        context["problem"] = str(exc)
        return render(request, "questions/version_json.html", context, status=409)
    messages.success(request, f"Replaced the document: revision {saved.revision}.")
    return redirect(saved)
