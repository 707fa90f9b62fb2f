"""Reads that span models, shaped for the pages (one query per list, no N+1)."""

from __future__ import annotations

import gzip
import hashlib
import json
import threading
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db.models import Count, OuterRef, Q, QuerySet, Subquery

from questions import metrics, spec
from questions.models import BatchItem, BatchRun, QuestionSet, ReviewEvent, Version


def question_sets(search: str = "") -> QuerySet[QuestionSet]:
    """Sets with their newest version's number and status, last edited first; those whose slug,
    name or description holds `search`, when given."""
    newest = Version.objects.filter(question_set=OuterRef("pk")).order_by("-number")
    sets = QuestionSet.objects.select_related("owner").annotate(
        newest_number=Subquery(newest.values("number")[:1]),
        newest_status=Subquery(newest.values("status")[:1]),
    )
    if "\x00" in search:
        return QuestionSet.objects.none()  # no set's text holds a NUL character
    if search.strip():
        term = search.strip()
        sets = sets.filter(
            Q(slug__icontains=term) | Q(name__icontains=term) | Q(description__icontains=term)
        )
    return sets.order_by("-updated_at")


def versions_of(question_set: QuestionSet) -> QuerySet[Version]:
    return question_set.versions.select_related("author", "parent").order_by("-number")


EXPORT_SCHEMA_PATH = Path(__file__).resolve().parent / "schemas" / "question-set-1.schema.json"


def approval_of(version: Version) -> ReviewEvent | None:
    """The event that approved a version (the last one, should there be more)."""
    return (
        version.events.filter(kind=ReviewEvent.Kind.APPROVED)
        .select_related("actor")
        .order_by("-created_at", "-id")
        .first()
    )


def export_document(version: Version) -> dict[str, Any]:
    """The export document of DESIGN.md §6 — the one place that shapes it. Its `questions` map
    is the approved document exactly; `sha256` is the canonical hash of that map; `model` is
    the one recorded when the version was approved (frozen with it)."""
    approval = approval_of(version)
    return {
        "format": spec.EXPORT_FORMAT,
        "question_set": version.question_set.slug,
        "version": version.number,
        "status": str(version.status),
        "sha256": version.sha256,
        "model": version.approved_model,
        "approved_by": approval.actor.get_username() if approval else None,
        "approved_at": approval.created_at.isoformat() if approval else None,
        "questions": version.document,
    }


def export_text(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def export_etag(text: str) -> str:
    """The export's entity tag: the SHA-256 of its whole body, so any change of body changes
    it (the `sha256` inside names the questions only)."""
    return export_etag_of(text.encode("utf-8"))


@dataclass(frozen=True)
class ExportBody:
    """An export document's bytes as served: as they are, gzipped, and their entity tag."""

    text: bytes
    gzipped: bytes
    etag: str


#: export bodies kept per process, the most recently served (a few MB each); a plain dict, as
#: Django's local-memory cache would copy (pickle) a body on every request
EXPORTS_KEPT = 16
_EXPORTS: OrderedDict[str, ExportBody] = OrderedDict()
_EXPORTS_LOCK = threading.Lock()


def export_body(version: Version) -> ExportBody:
    """The export of an approved version, made once per version and process and then served
    from the cache: a request that finds it reads no document. The key holds every part of the
    body that can change apart from the document (an approved version's document never does):
    the set's slug, the version's status, model, revision and last change, and the approval."""
    username = f"actor__{get_user_model().USERNAME_FIELD}"
    approval = (
        version.events.filter(kind=ReviewEvent.Kind.APPROVED)
        .order_by("-created_at", "-id")
        .values_list("pk", "created_at", username)
        .first()
    )
    parts = (
        version.pk,
        version.question_set.slug,
        version.status,
        version.approved_model,
        version.revision,
        version.sha256,
        str(version.updated_at),
        [str(part) for part in approval or ()],
    )
    key = json.dumps(parts)
    with _EXPORTS_LOCK:
        body = _EXPORTS.get(key)
        if body is not None:
            _EXPORTS.move_to_end(key)
            return body
    text = export_text(export_document(version)).encode("utf-8")
    body = ExportBody(
        text=text,
        gzipped=gzip.compress(text, compresslevel=6, mtime=0),
        etag=export_etag_of(text),
    )
    with _EXPORTS_LOCK:
        _EXPORTS[key] = body
        while len(_EXPORTS) > EXPORTS_KEPT:
            _EXPORTS.popitem(last=False)
    return body


def export_etag_of(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def exportable_version(
    slug: str, *, label: str | None = None, number: int | None = None
) -> Version | None:
    """The approved version a label points at, or the approved version `number`; None for an
    unknown set, label or version, or one that is not approved. Never a fallback. The document
    is left out until it is read (`export_body` serves most requests from its cache)."""
    versions = (
        Version.objects.select_related("question_set")
        .defer("document_text")
        .filter(question_set__slug=slug, status=Version.Status.APPROVED)
    )
    if label is not None:
        return versions.filter(labels__name=label).first()
    if number is not None:
        return versions.filter(number=number).first()
    return None


def review_queue() -> QuerySet[Version]:
    return (
        Version.objects.filter(status=Version.Status.IN_REVIEW)
        .select_related("question_set", "author")
        .order_by("updated_at")
    )


def review_baseline(version: Version) -> tuple[Version | None, str]:
    """What a version is reviewed against: the version under `production`, else the last
    approved one (never itself)."""
    question_set = version.question_set
    label = question_set.labels.filter(name="production").select_related("version").first()
    if label and label.version_id != version.pk:
        return label.version, "production"
    approved = (
        question_set.versions.filter(status=Version.Status.APPROVED)
        .exclude(pk=version.pk)
        .order_by("-number")
        .first()
    )
    return approved, "the last approved version" if approved else ""


def run_cases(run: BatchRun) -> list[metrics.Case]:
    """Every answered (state, question) of a run with what its state expected."""
    cases = []
    items = run.items.filter(status=BatchItem.Status.ANSWERED).select_related("sample_state")
    for item in items:
        expected = item.sample_state.expected or {}
        for qid, answer in (item.answers or {}).items():
            cases.append(
                metrics.Case(
                    item.sample_state.name, qid, answer.get("type", ""), answer, expected.get(qid)
                )
            )
    return cases


def run_counts(run: BatchRun) -> dict[str, int]:
    counts = {status: 0 for status, _ in BatchItem.Status.choices}
    for row in run.items.values("status").annotate(n=Count("pk")):
        counts[row["status"]] = row["n"]
    counts["total"] = sum(counts.values())
    counts["done"] = counts["answered"] + counts["failed"] + counts["cancelled"]
    return counts


def run_summary(run: BatchRun) -> dict[str, Any]:
    """The run as `questions batch --json` prints it."""
    counts = run_counts(run)
    report = metrics.report(run_cases(run), threshold=run.threshold)
    duration = None
    if run.started_at and run.finished_at:
        duration = round((run.finished_at - run.started_at).total_seconds() * 1000)
    return {
        "run": run.pk,
        "set": run.question_set.slug,
        "version": run.version.number,
        "backend": run.backend,
        "status": run.status,
        "states": counts["total"],
        "answered": counts["answered"],
        "failed": counts["failed"],
        "pass_rate": report.pass_rate,
        "per_question": {
            qid: {"checked": q.checked, "passed": q.passed, "pass_rate": q.pass_rate}
            for qid, q in report.questions.items()
        },
        "duration_ms": duration,
    }


def latest_run(version: Version | None) -> BatchRun | None:
    if version is None:
        return None
    return version.batch_runs.filter(status=BatchRun.Status.DONE).order_by("-id").first()


def run_evidence(run: BatchRun | None) -> dict[str, Any] | None:
    """What a review shows of a run: pass rate, answered/failed, cost per call."""
    if run is None:
        return None
    summary = run_summary(run)
    costs = [
        c
        for c in run.items.exclude(decision=None).values_list("decision__cost", flat=True)
        if c is not None
    ]
    return {**summary, "run_obj": run, "cost_per_call": sum(costs) / len(costs) if costs else None}


def version_named(
    slug: str, *, number: int | None = None, label: str | None = None
) -> Version | None:
    """The version a command names: by label (approved only), by number, or the newest."""
    if label:
        return exportable_version(slug, label=label)
    versions = Version.objects.filter(question_set__slug=slug).select_related("question_set")
    if number is not None:
        return versions.filter(number=number).first()
    return versions.order_by("-number").first()
