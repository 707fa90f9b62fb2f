"""The export document, the one place that shapes it, and how it is served: its bytes (plain
and gzipped), their entity tag, the approved version a fetch names (one plain statement: the
runtime's hot path) and the bodies kept per process."""

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
from django.db import connection

from questions.core import spec
from questions.models import Label, QuestionSet, ReviewEvent, Version

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
    """The export document — the one place that shapes it. Its `questions` map
    is the approved document exactly; `sha256` is the canonical hash of that map; `model` is
    the one recorded when the version was approved (frozen with it), and `answered_by` the
    concrete model that answered the run it was approved on (a name, a sorted list when several
    did, null when none is known); `advice`, when the version has any, sits beside `questions`
    — never inside it, never sent to a provider."""
    approval = approval_of(version)
    document = {
        "format": spec.EXPORT_FORMAT,
        "question_set": version.question_set.slug,
        "version": version.number,
        "status": spec.EXPORT_STATUS,  # only an approved version has an export
        "sha256": version.sha256,
        "model": version.approved_model,
        "answered_by": version.approved_model_answered,
        "approved_by": approval.actor.get_username() if approval else None,
        "approved_at": approval.created_at.isoformat() if approval else None,
        "questions": version.document,
    }
    if version.advice:
        document["advice"] = version.advice
    return document


def export_text(document: dict[str, Any]) -> str:
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


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


@dataclass(frozen=True)
class ExportRef:
    """An approved version as the export fetch finds it: which one, and a key that changes
    with every part of its export body apart from the document (an approved version's
    document never changes): the set's slug, the version's status, model, revision and last
    change, and its approval (when, by whom)."""

    version_id: int
    number: int
    slug: str
    set_id: int
    key: str


def export_ref(
    slug: str, *, label: str | None = None, number: int | None = None
) -> ExportRef | None:
    """The approved version a label points at, or the approved version `number`, with its
    approval; None for an unknown set, label or version, or one that is not approved. Never a
    fallback.

    This is the runtime's hot path (every fetch, most of them answered 304), so it is one
    plain statement: the ORM would spend more time building the query than the database
    takes to answer it. Table and column names come from the models."""
    if (label is None) == (number is None):
        return None
    q = connection.ops.quote_name

    def column(model: Any, field: str) -> str:
        return q(model._meta.get_field(field).column)

    user_model = get_user_model()
    version, qset, event = (q(m._meta.db_table) for m in (Version, QuestionSet, ReviewEvent))
    labels, users = q(Label._meta.db_table), q(user_model._meta.db_table)
    selected = ", ".join(
        [
            *(
                f"v.{column(Version, f)}"
                for f in (
                    "id",
                    "number",
                    "status",
                    "approved_model",
                    "revision",
                    "sha256",
                    "approved_model_answered",
                )
            ),
            f"v.{column(Version, 'updated_at')}",
            f"s.{column(QuestionSet, 'slug')}",
            f"a.{column(ReviewEvent, 'id')}",
            f"a.{column(ReviewEvent, 'created_at')}",
            f"u.{column(user_model, user_model.USERNAME_FIELD)}",
            f"s.{column(QuestionSet, 'id')}",
        ]
    )
    params: list[Any] = []
    label_join = ""
    if label is not None:
        label_join = (
            f"JOIN {labels} l ON l.{column(Label, 'version')} = v.{column(Version, 'id')} "
            f"AND l.{column(Label, 'name')} = %s"
        )
        params.append(label)
    e_id, e_version = column(ReviewEvent, "id"), column(ReviewEvent, "version")
    e_kind, e_at = column(ReviewEvent, "kind"), column(ReviewEvent, "created_at")
    sql = (
        f"SELECT {selected} FROM {version} v "
        f"JOIN {qset} s ON s.{column(QuestionSet, 'id')} = v.{column(Version, 'question_set')} "
        f"{label_join} "
        f"LEFT JOIN {event} a ON a.{e_id} = (SELECT e.{e_id} FROM {event} e "
        f"WHERE e.{e_version} = v.{column(Version, 'id')} AND e.{e_kind} = %s "
        f"ORDER BY e.{e_at} DESC, e.{e_id} DESC LIMIT 1) "
        f"LEFT JOIN {users} u ON u.{column(user_model, 'id')} = a.{column(ReviewEvent, 'actor')} "
        f"WHERE s.{column(QuestionSet, 'slug')} = %s AND v.{column(Version, 'status')} = %s"
    )
    params += [ReviewEvent.Kind.APPROVED.value, slug, Version.Status.APPROVED.value]
    if number is not None:
        sql += f" AND v.{column(Version, 'number')} = %s"
        params.append(number)
    with connection.cursor() as cursor:
        cursor.execute(sql + " LIMIT 1", params)
        row = cursor.fetchone()
    if row is None:
        return None
    return ExportRef(
        version_id=row[0],
        number=row[1],
        slug=row[8],
        set_id=row[12],
        key=json.dumps([str(v) for v in row]),
    )


def export_body(ref: ExportRef) -> ExportBody:
    """The export of an approved version, made once per version and process and then served
    from memory: a request that finds it reads no document."""
    with _EXPORTS_LOCK:
        body = _EXPORTS.get(ref.key)
        if body is not None:
            _EXPORTS.move_to_end(ref.key)
            return body
    version = Version.objects.select_related("question_set").get(pk=ref.version_id)
    text = export_text(export_document(version)).encode("utf-8")
    body = ExportBody(
        text=text,
        gzipped=gzip.compress(text, compresslevel=6, mtime=0),
        etag=export_etag(text),
    )
    with _EXPORTS_LOCK:
        _EXPORTS[ref.key] = body
        while len(_EXPORTS) > EXPORTS_KEPT:
            _EXPORTS.popitem(last=False)
    return body


def export_etag(text: bytes) -> str:
    """The export's entity tag: the SHA-256 of its whole body, so any change of body changes
    it (the `sha256` inside names the questions only)."""
    return hashlib.sha256(text).hexdigest()


def exportable_version(
    slug: str, *, label: str | None = None, number: int | None = None
) -> Version | None:
    """The approved version a label points at, or the approved version `number`; None for an
    unknown set, label or version, or one that is not approved. Never a fallback."""
    return (
        Version.objects.approved(slug, label=label, number=number)
        .select_related("question_set")
        .first()
    )
