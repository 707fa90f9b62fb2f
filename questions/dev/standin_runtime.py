"""The local stand-in of the assistant runtime: its `POST /api/decisions` (and `GET
/api/decisions/status`) served beside the stand-in provider (`questions.dev.standin`) by
`questions standin`, so the code on a label's export page (`questions.core.snippets`) runs as it
is against `make run`.

It follows the runtime's contract (seed 000): the body is `{"state", "questions", "profile"?}`,
checked by the console's own contract at the configured limits (`DECISIONS__MAX_QUESTIONS`,
`DECISIONS__MAX_STATE_BYTES`, the variables the runtime reads); the answer is `{"model",
"answers", "usage", "timing"}` under the application's own ids, each answer the stand-in's
(`standin.answer`, read from the words); every error is `{"detail": "..."}` with the runtime's
status — 422 for a body that is not JSON, of the wrong shape, too large, with a profile (the
stand-in registers none) or with questions no approved export holds; 503 when the console's
approved exports cannot be read; 401 without the stand-in's key (`standin.KEY`, its "normal
authentication"). The state is never echoed.

It answers only what the console approved: every asked question must be, word for word, a
question of an approved version (ids are addressing, so the application's own ids may differ).
It reads the approved versions from the console's database itself — the process runs under the
console's settings, so it reads the database `make run` migrated and the demo filled, needs no
API token and no console up before it, and sees an approval the moment it is made — keeping
each approved version's question hashes once read (an approved document never changes).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from http.server import ThreadingHTTPServer
from typing import Any

from django.conf import settings
from django.db import Error as DatabaseError
from django.db import connections

from questions.core import spec
from questions.dev import standin
from questions.models import Version

PATH = "/api/decisions"
STATUS_PATH = "/api/decisions/status"
#: how many of a body's errors its detail names
ERRORS_SHOWN = 5


@dataclass(frozen=True)
class Approved:
    """An approved version as the stand-in matches calls against it: its set and number, and
    its questions' content hashes → their ids."""

    slug: str
    number: int
    questions: dict[str, str]

    @property
    def name(self) -> str:
        return f"{self.slug} v{self.number}"


#: each approved document's question hashes → ids, by the document's own hash (a row's id may
#: come back with other content where a database reuses it; the hash cannot)
_KEPT: dict[str, dict[str, str]] = {}
_KEPT_LOCK = threading.Lock()


def approved_versions() -> list[Approved]:
    """Every approved version of the console (set by set, the newest first), each document read
    once per process. Raises `django.db.Error` when the database cannot be read."""
    rows = list(
        Version.objects.filter(status=Version.Status.APPROVED)
        .order_by("question_set__slug", "-number")
        .values_list("question_set__slug", "number", "sha256")
    )
    with _KEPT_LOCK:
        missing = {sha for _, _, sha in rows if sha not in _KEPT}
    if missing:
        documents = (
            Version.objects.filter(status=Version.Status.APPROVED, sha256__in=missing)
            .values_list("sha256", "document_text")
            .distinct()
        )
        read = {
            sha: {spec.question_sha256(q): qid for qid, q in spec.loads(text).items()}
            for sha, text in documents
        }
        with _KEPT_LOCK:
            _KEPT.update(read)
    with _KEPT_LOCK:
        return [Approved(slug, number, _KEPT[sha]) for slug, number, sha in rows if sha in _KEPT]


def error(status: int, detail: str) -> tuple[int, dict[str, Any]]:
    return status, {"detail": detail}


def refusal(error_type: str, message: str) -> dict[str, Any]:
    """A refusal of the stand-in's handler (the key, the body's size or encoding), worded as
    the runtime words its errors."""
    return {"detail": message}


def not_json(message: str, position: int) -> tuple[int, dict[str, Any]]:
    return error(422, f"The body is not JSON ({message} at character {position}).")


def _shape_error(body: Any) -> str | None:
    """What is wrong with the body's shape before its questions are read, or None."""
    if not isinstance(body, dict):
        return (
            f"The body is {spec.describe(body)}; POST /api/decisions takes an object: "
            '{"state": any JSON, "questions": {id: question, ...}, "profile": optional}.'
        )
    missing = [f"`{name}`" for name in ("state", "questions") if name not in body]
    if missing:
        return f"The body has no {' and no '.join(missing)} (state may be null, not absent)."
    questions = body["questions"]
    if not isinstance(questions, dict):
        return f"questions is {spec.describe(questions)}; it is an object of id → question."
    if isinstance(questions.get("type"), str):  # read as one question, not as a map of them
        return "questions is one question; it is an object of id → question."
    profile = body.get("profile")
    if profile is not None:
        shown = f"`{profile[:64]}`" if isinstance(profile, str) else spec.describe(profile)
        return (
            f"profile {shown} is not a registered assistant profile: the local stand-in "
            "registers none (leave profile out)."
        )
    return None


def _invalid(issues: list[spec.Issue]) -> str:
    shown = "; ".join(f"{issue.path}: {issue.message}" for issue in issues[:ERRORS_SHOWN])
    more = len(issues) - ERRORS_SHOWN
    return "The body failed validation: " + shown + (f"; and {more} more" if more > 0 else "")


def unapproved(asked: dict[str, str], versions: list[Approved]) -> str | None:
    """Why the asked questions (id → content hash) are no approved version's, or None when one
    holds every one of them: no version holds any (an unknown set), or the version holding
    the most lacks some (unknown questions, named with what differs)."""
    if not versions:
        return (
            "No version of any set is approved in this console yet: the local stand-in "
            "answers only approved questions. Approve a version, then send its export's "
            "questions map."
        )

    def held(version: Approved) -> tuple[int, int]:
        ids = set(version.questions.values())
        return (
            sum(1 for sha in asked.values() if sha in version.questions),
            sum(1 for qid in asked if qid in ids),
        )

    best = max(versions, key=held)  # the first of the most held: a set's newest version
    if held(best)[0] == len(asked):
        return None
    if held(best) == (0, 0):
        return (
            f"No approved export holds these questions ({len(versions)} approved versions "
            "looked at): the local stand-in answers only what the console approved. Send the "
            "questions map of an approved version's export (its export page, or `questions "
            "export`)."
        )
    ids = set(best.questions.values())
    unknown = [
        f"`{qid}` is not as {best.name} approved it (changed since?)"
        if qid in ids
        else f"`{qid}` is no question of {best.name}"
        for qid, sha in asked.items()
        if sha not in best.questions
    ]
    return (
        f"Not the questions of an approved export: {best.name} holds "
        f"{held(best)[0]} of the {len(asked)} asked; " + "; ".join(unknown[:ERRORS_SHOWN]) + "."
    )


def respond(body: Any) -> tuple[int, dict[str, Any]]:
    """(status, JSON body) for a call of `POST /api/decisions`, as the runtime answers it."""
    started = time.perf_counter()
    wrong = _shape_error(body)
    if wrong:
        return error(422, wrong)
    result = spec.validate(
        {"state": body["state"], "questions": body["questions"]},
        limits=settings.DECISIONS_LIMITS,
        lints=False,
    )
    if not result.valid:
        return error(422, _invalid(result.errors))
    questions = body["questions"]
    asked = {qid: spec.question_sha256(q) for qid, q in questions.items()}
    try:
        versions = approved_versions()
    except DatabaseError as exc:
        return error(
            503,
            "Decisions need the console's approved exports, and the local stand-in cannot read "
            f"them ({type(exc).__name__}): start it with the console's settings and a migrated "
            "database, as make run does.",
        )
    why = unapproved(asked, versions)
    if why:
        return error(422, why)
    answering = time.perf_counter()
    state = body["state"]
    answers = {qid: standin.answer(q, state) for qid, q in result.document.questions.items()}
    done = time.perf_counter()
    size = len(spec.canonical_json({"state": state, "questions": questions}))
    return 200, {
        "model": standin.MODEL,
        "answers": answers,
        "usage": {"input_tokens": max(1, size // 4), "output_tokens": 0},
        "timing": {
            "total_ms": round((done - started) * 1000, 2),
            "provider_ms": round((done - answering) * 1000, 2),
        },
    }


def status() -> dict[str, Any]:
    """`GET /api/decisions/status` (seed 000's fields): healthy when the stand-in can read the
    console's approved exports (how many, beside), configured always (it needs no provider
    key), its provider and model."""
    try:
        approved: int | None = len(approved_versions())
    except DatabaseError:
        approved = None
    return {
        "healthy": approved is not None,
        "configured": True,
        "provider": "local stand-in",
        "model": standin.MODEL,
        "approved_versions": approved,
    }


def _closing(answer: Callable[..., Any]) -> Callable[..., Any]:
    """`answer` as a server thread runs it: the thread's database connection closed after each
    call (a thread per client connection would otherwise leave one open apiece)."""

    def served(*args: Any) -> Any:
        try:
            return answer(*args)
        finally:
            connections.close_all()

    return served


#: what `questions standin` serves beside the provider's wires
ROUTES = {PATH: standin.Route(_closing(respond), refusal, not_json, statuses={413: 422})}
GETS = {STATUS_PATH: _closing(status)}


def make_server(port: int = 0, latency_ms: float = 0) -> ThreadingHTTPServer:
    """The stand-in provider with the runtime's paths, bound to 127.0.0.1."""
    return standin.make_server(port, latency_ms, routes=ROUTES, gets=GETS)


def serve_in_thread(port: int = 0, latency_ms: float = 0) -> ThreadingHTTPServer:
    """The same, serving in a daemon thread (the tests')."""
    return standin.serve_in_thread(port, latency_ms, routes=ROUTES, gets=GETS)
