"""Sample states: create, edit (with history and a stale-revision guard), duplicate, delete,
import. Every write is an author's."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction

from questions import roles, spec
from questions.models import BatchItem, QuestionSet, SampleState, SampleStateRevision
from questions.services.errors import Conflict, Invalid, ServiceError, a_name, require, storable
from questions.services.versions import (
    WRITERS_ONLY,
    InvalidContent,
    StaleRevision,
    document_text,
    limits,
)

NAME_LIMIT = SampleState._meta.get_field("name").max_length


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
    require(author, roles.may_write, WRITERS_ONLY)
    name, text, expected, tags = _clean_state_fields(
        name=name, state=state, expected=expected, tags=tags
    )
    if question_set.sample_states.filter(name=name).exists():
        raise Conflict(f"{question_set.slug} has a sample state called {name} already.")
    sample = SampleState.objects.create(
        question_set=question_set, name=name, state_text=text, expected=expected, tags=tags
    )
    _record_state_revision(sample, author)
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
    require(author, roles.may_write, WRITERS_ONLY)
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
    locked.name, locked.state_text, locked.expected, locked.tags = name, text, expected, tags
    locked.revision += 1
    locked.save(update_fields=["name", "state_text", "expected", "tags", "revision", "updated_at"])
    _record_state_revision(locked, author)
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
    require(author, roles.may_write, WRITERS_ONLY)
    runs = BatchItem.objects.filter(sample_state__sample_state=sample).values("run").distinct()
    if runs.exists():
        raise Conflict(
            f"Sample state {sample.name} was asked in {runs.count()} batch run(s), which keep "
            "the exact content they ran on; it cannot be deleted. Rename it or change its tags "
            "instead."
        )
    sample.delete()


def _record_state_revision(sample: SampleState, author: Any) -> None:
    SampleStateRevision.objects.create(
        sample_state=sample,
        revision=sample.revision,
        name=sample.name,
        state_text=sample.state_text,
        state_sha256=spec.state_sha256(sample.state),
        expected=sample.expected,
        tags=sample.tags,
        author=author,
    )


def sample_states_import(
    *, question_set: QuestionSet, items: list[Any], author: Any
) -> list[SampleState]:
    """All or nothing: every item is {"name", "state", "expected"?, "tags"?}."""
    require(author, roles.may_write, WRITERS_ONLY)
    created = []
    with transaction.atomic():
        for i, item in enumerate(items):
            if not isinstance(item, dict) or "name" not in item or "state" not in item:
                raise Invalid(
                    f"item {i + 1}: needs an object with name and state (null is a state)"
                )
            unknown = set(item) - {"name", "state", "expected", "tags"}
            if unknown:
                raise Invalid(f"item {i + 1}: unknown keys {sorted(unknown)}")
            if not isinstance(item["name"], str):
                raise Invalid(f"item {i + 1}: name must be a string")
            expected = item.get("expected") or {}
            if not isinstance(expected, dict):
                raise Invalid(f"item {i + 1}: expected must be an object")
            tags = item.get("tags") or []
            if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
                raise Invalid(f"item {i + 1}: tags must be an array of strings")
            try:
                created.append(
                    sample_state_create(
                        question_set=question_set,
                        name=item["name"],
                        state=item["state"],
                        author=author,
                        expected=expected,
                        tags=tags,
                    )
                )
            except ServiceError as exc:  # the same refusal, naming the item
                exc.args = (f"item {i + 1} ({item['name']}): {exc}",)
                raise
    return created
