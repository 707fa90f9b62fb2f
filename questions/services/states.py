"""Sample states: create, edit (with history and a stale-revision guard), duplicate, delete,
import. Every write is an author's."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F

from questions import roles
from questions.core import labelling, spec, state_files
from questions.models import BatchItem, QuestionSet, SampleState, SampleStateRevision
from questions.selectors.labels import labelling_version
from questions.services import labels as per_labeller
from questions.services.audit import audit_record
from questions.services.errors import Conflict, Invalid, ServiceError, a_name, require, storable
from questions.services.versions import (
    WRITERS_ONLY,
    InvalidContent,
    StaleRevision,
    document_text,
    limits,
)

NAME_LIMIT = SampleState._meta.get_field("name").max_length


#: an import writes its new states this many to a statement
IMPORT_CHUNK = 500

#: a sample state's tags: at most this many, each at most this many characters (a run's tag
#: filter names one)
MAX_TAGS = 20
TAG_LIMIT = 64


def _clean_state_fields(
    *, name: str, state: Any, expected: dict[str, Any] | None, tags: Iterable[str] | None
) -> tuple[str, str, dict[str, Any], list[str]]:
    name = a_name((name or "").strip(), "A sample state's name")
    if not name:
        raise Invalid("A sample state needs a name.")
    if len(name) > NAME_LIMIT:
        raise Invalid(f"A sample state's name has {len(name)} characters; at most {NAME_LIMIT}.")
    errors = spec.validate_state(state, limits=limits())
    if errors:
        raise InvalidContent("state", errors)
    expected = dict(expected or {})
    for qid, answer in expected.items():
        if not isinstance(qid, str) or not (
            isinstance(answer, str | bool) or (isinstance(answer, int) and answer >= 0)
        ):
            raise Invalid(
                f"Expected answer for `{qid}` must be an option name, a level number or true/false."
            )
        storable(qid, "A question id of the expected answers")
        if isinstance(answer, str):
            storable(answer, f"The expected answer for `{qid}`")
    tags = sorted({t.strip() for t in (tags or []) if t and t.strip()})
    if len(tags) > MAX_TAGS:
        raise Invalid(f"A sample state has at most {MAX_TAGS} tags; this one has {len(tags)}.")
    for tag in tags:
        storable(tag, "A tag" if len(tag) > TAG_LIMIT else f"The tag {tag!r}", TAG_LIMIT)
        a_name(tag, "A tag")
    return name, document_text(state), expected, tags


@transaction.atomic
def sample_state_create(
    *,
    question_set: QuestionSet,
    name: str,
    state: Any,
    author: Any,
    expected: dict[str, Any] | None = None,
    tags: Iterable[str] | None = None,
) -> SampleState:
    """A new sample state of `question_set`, with its first revision."""
    require(author, roles.may_write, WRITERS_ONLY, on=question_set)
    name, text, expected, tags = _clean_state_fields(
        name=name, state=state, expected=expected, tags=tags
    )
    if question_set.sample_states.filter(name=name).exists():
        raise Conflict(f"{question_set.slug} has a sample state called {name} already.")
    sample = SampleState.objects.create(
        question_set=question_set,
        name=name,
        state_text=text,
        state_sha256=spec.state_sha256(state),
        expected={},
        tags=tags,
    )
    sample.expected = per_labeller.direct_labels(sample, {}, expected, author)
    if sample.expected:
        sample.save(update_fields=["expected"])
    _record_state_revision(sample, author)
    audit_record(action="state.created", actor=author, obj=sample, question_set=question_set)
    return sample


@transaction.atomic
def sample_state_update(
    *,
    sample: SampleState,
    name: str,
    state: Any,
    author: Any,
    base_revision: int,
    expected: dict[str, Any] | None = None,
    tags: Iterable[str] | None = None,
) -> SampleState:
    """Edit a sample state; refused (`StaleRevision`) when it changed since `base_revision`."""
    require(author, roles.may_write, WRITERS_ONLY, on=sample.question_set)
    locked = SampleState.objects.select_for_update().get(pk=sample.pk)
    if locked.revision != base_revision:
        raise StaleRevision(locked.revision, base_revision, what=f"Sample state {locked.name}")
    name, text, expected, tags = _clean_state_fields(
        name=name, state=state, expected=expected, tags=tags
    )
    if name != locked.name and locked.question_set.sample_states.filter(name=name).exists():
        raise Conflict(f"{locked.question_set.slug} has a sample state called {name} already.")
    unchanged = (locked.name, locked.state_text, locked.expected, locked.tags) == (
        name,
        text,
        expected,
        tags,
    )
    if unchanged:
        return locked
    expected = per_labeller.direct_labels(locked, locked.expected, expected, author)
    locked.name, locked.state_text, locked.expected, locked.tags = name, text, expected, tags
    locked.state_sha256 = spec.state_sha256(state)
    locked.revision += 1
    locked.save(
        update_fields=[
            "name",
            "state_text",
            "state_sha256",
            "expected",
            "tags",
            "revision",
            "updated_at",
        ]
    )
    _record_state_revision(locked, author)
    audit_record(
        action="state.changed",
        actor=author,
        obj=locked,
        question_set=locked.question_set,
        detail={"revision": locked.revision},
    )
    return locked


def sample_state_duplicate(*, sample: SampleState, author: Any) -> SampleState:
    """A copy of `sample` under the first free name "NAME (copy)", "NAME (copy 2)", …"""
    existing = set(sample.question_set.sample_states.values_list("name", flat=True))
    name = f"{sample.name} (copy)"
    n = 2
    while name in existing:
        name = f"{sample.name} (copy {n})"
        n += 1
    return sample_state_create(
        question_set=sample.question_set,
        name=name,
        state=sample.state,
        author=author,
        expected=sample.expected,
        tags=sample.tags,
    )


@transaction.atomic
def sample_state_delete(*, sample: SampleState, author: Any) -> None:
    """Delete a sample state and its history — unless a batch run asked it: a run keeps the
    exact content it ran on, so that state stays."""
    require(author, roles.may_write, WRITERS_ONLY, on=sample.question_set)
    runs = BatchItem.objects.filter(sample_state__sample_state=sample).values("run").distinct()
    if runs.exists():
        raise Conflict(
            f"Sample state {sample.name} was asked in {runs.count()} batch run(s), which keep "
            "the exact content they ran on; it cannot be deleted. Rename it or change its tags "
            "instead."
        )
    audit_record(action="state.deleted", actor=author, obj=sample, question_set=sample.question_set)
    sample.delete()


def _record_state_revision(sample: SampleState, author: Any) -> None:
    _revision_of(sample, author).save()


def _revision_of(sample: SampleState, author: Any) -> SampleStateRevision:
    """The revision that records `sample` as it is now (not saved yet)."""
    return sample.revision_record(author)


@dataclass
class StatesImported:
    """What an import did: the states it added, the existing states whose expected answers it
    changed (a new revision each, history kept), and the rows it skipped as duplicates by
    content — (the row's name, the state that has that content already)."""

    added: list[SampleState] = field(default_factory=list)
    relabelled: list[SampleState] = field(default_factory=list)
    duplicates: list[tuple[str, str]] = field(default_factory=list)


def _import_item(item: Any, where: str) -> tuple[str, Any, dict[str, Any], list[str]]:
    if not isinstance(item, dict) or "name" not in item or "state" not in item:
        raise Invalid(f"{where}: needs an object with name and state (null is a state)")
    unknown = set(item) - {"name", "state", "expected", "tags"}
    if unknown:
        raise Invalid(f"{where}: unknown keys {sorted(unknown)}")
    if not isinstance(item["name"], str):
        raise Invalid(f"{where}: name must be a string")
    expected = item.get("expected") or {}
    if not isinstance(expected, dict):
        raise Invalid(f"{where}: expected must be an object")
    tags = item.get("tags") or []
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise Invalid(f"{where}: tags must be an array of strings")
    return item["name"], item["state"], expected, tags


def _answer_questions(question_set: QuestionSet) -> dict[str, tuple[labelling.Question, int]]:
    """Per question id, the question an imported expected answer must fit, with its version's
    number: the version the states are labelled for (`labelling_version`, the newest
    valid one, as the state form defaults to) when it has the question, else the newest
    version that has it."""
    labelled_for = labelling_version(question_set)
    versions = [labelled_for] if labelled_for is not None else []
    versions += question_set.versions.order_by("-number").only(
        "number", "document_text", "question_set_id"
    )
    found: dict[str, tuple[labelling.Question, int]] = {}
    for version in versions:
        for question in labelling.questions_of(version.document):
            found.setdefault(question.id, (question, version.number))
    return found


def _check_answers(
    question_set: QuestionSet,
    expected: dict[str, Any],
    questions: dict[str, tuple[labelling.Question, int]],
) -> None:
    """Refuse an expected answer that no version's question takes, in the labelling page's
    words (`labelling.Question.refusal`)."""
    for qid, answer in expected.items():
        if qid not in questions:
            raise Invalid(
                f"no version of {question_set.slug} has a question `{qid[:64]}` that takes an "
                "expected answer"
            )
        question, number = questions[qid]
        if question.stored(answer) is None:
            raise Invalid(question.refusal(answer, number))


def sample_states_import(
    *,
    question_set: QuestionSet,
    items: list[Any],
    author: Any,
    places: list[str] | None = None,
) -> StatesImported:
    """All or nothing: every item is {"name", "state", "expected"?, "tags"?}; a refusal names
    the item (or, given `places`, where in the file it came from: "line 7") and imports nothing.
    No items at all is refused too, and so are more than `DECISIONS_UPLOAD_MAX_ROWS` (every
    path, the CLI's too; the set page's reader stops at the limit). Each expected answer must
    be one its question takes (`_answer_questions`: the labelled-for version's question, as the
    labelling page checks); one for a question id no version has is refused.

    Never doubled: an item whose content (the state's hash) is a state of the set already, or
    an earlier item's, is skipped as a duplicate. An item named as an existing state with the
    same content carries labels: its expected answers are laid over the stored ones (a label
    it leaves out stays), and non-empty tags replace the stored ones; when that changes
    anything the state is saved as a new revision (`sample_state_update`, history kept),
    otherwise it is a duplicate too. An item named as an existing state with other content is
    refused (a file never overwrites what a state says)."""
    require(author, roles.may_write, WRITERS_ONLY, on=question_set)
    if not items:
        raise Invalid("the file holds no records")
    if len(items) > settings.DECISIONS_UPLOAD_MAX_ROWS:
        raise Invalid(state_files.too_many(settings.DECISIONS_UPLOAD_MAX_ROWS))
    questions: dict[str, tuple[labelling.Question, int]] | None = None
    report = StatesImported()
    by_name: dict[str, SampleState] = {}
    by_content: dict[str, str] = {}
    current = SampleStateRevision.objects.filter(
        sample_state__question_set=question_set, revision=F("sample_state__revision")
    ).select_related("sample_state")
    for revision in current:
        by_name[revision.sample_state.name] = revision.sample_state
        by_content.setdefault(revision.state_sha256, revision.sample_state.name)
    pending: list[SampleState] = []
    with transaction.atomic():
        for i, item in enumerate(items):
            where = places[i] if places else f"item {i + 1}"
            name, state, expected, tags = _import_item(item, where)
            try:
                name, text, expected, tags = _clean_state_fields(
                    name=name, state=state, expected=expected, tags=tags
                )
                if expected:
                    if questions is None:
                        questions = _answer_questions(question_set)
                    _check_answers(question_set, expected, questions)
                content = spec.state_sha256(state)
                existing = by_name.get(name)
                if existing is not None and existing.pk is None:  # added earlier in this file
                    if spec.state_sha256(existing.state) != content:
                        raise Conflict(
                            f"an earlier record is a sample state called {name} with other content"
                        )
                    merged = ({**existing.expected, **expected}, tags or existing.tags)
                    if merged == (existing.expected, existing.tags):
                        report.duplicates.append((name, name))
                    existing.expected, existing.tags = merged
                    continue
                if existing is not None:
                    if spec.state_sha256(existing.state) != content:
                        raise Conflict(
                            f"{question_set.slug} has a sample state called {name} with other "
                            "content; a file never changes what a state says (rename the row, "
                            "or edit the state on its page)"
                        )
                    labels = {**existing.expected, **expected}
                    new_tags = tags or existing.tags
                    if (labels, new_tags) == (existing.expected, existing.tags):
                        report.duplicates.append((name, name))
                        continue
                    existing = sample_state_update(
                        sample=existing,
                        name=name,
                        state=state,
                        author=author,
                        base_revision=existing.revision,
                        expected=labels,
                        tags=new_tags,
                    )
                    by_name[name] = existing
                    report.relabelled.append(existing)
                    continue
                if content in by_content:
                    report.duplicates.append((name, by_content[content]))
                    continue
            except ServiceError as exc:  # the same refusal, naming the item
                exc.args = (f"{where} ({str(name)[:64]}): {exc}",)
                raise
            # a new state: written with the others at the end, in a few statements, with its
            # first revision (what `sample_state_create` writes one at a time)
            sample = SampleState(
                question_set=question_set,
                name=name,
                state_text=text,
                state_sha256=content,
                expected=expected,
                tags=tags,
            )
            by_name[name] = sample
            by_content[content] = name
            report.added.append(sample)
            pending.append(sample)
        for start in range(0, len(pending), IMPORT_CHUNK):
            chunk = SampleState.objects.bulk_create(pending[start : start + IMPORT_CHUNK])
            per_labeller.import_labels(chunk, author)
            SampleStateRevision.objects.bulk_create([_revision_of(s, author) for s in chunk])
        audit_record(
            action="states.imported",
            actor=author,
            question_set=question_set,
            detail={
                "added": len(report.added),
                "relabelled": len(report.relabelled),
                "duplicates": len(report.duplicates),
            },
        )
    return report
