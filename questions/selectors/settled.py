"""How many of a set's states hold a settled answer, per question — the labelling page's
progress — counted by the database once and then kept in the cache for a fingerprint of the set's
states: how many there are and the sum of their revisions. Every change of a state's expected
answers is a new revision of it, and every other change of a state adds one, a new state or a
deletion moves the count, so counts kept for the fingerprint the set has now are the counts.

A key press reads no state: `services.labels` saves a state's settled answers as a new
revision and moves the kept counts by the one answer it changed (`settled_counts_moved`) when
they were kept for the fingerprint the set had just before — any other change since, made
anywhere, leaves the fingerprints apart and the counts are read again. The fingerprint is read
through an index of (set, revision), so it costs the same at 2,000 states as at 20,000."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.db.models import Count, Q, Sum

from questions.models import QuestionSet, SampleState

#: how long kept counts live when nothing reads them
KEPT_SECONDS = 24 * 3600


def _key(question_set: QuestionSet) -> str:
    """The set's counts' key: its id and when it was made (an id alone may be another set's
    after a database is rolled back, as the tests' are)."""
    return f"settled-counts:{question_set.pk}:{question_set.created_at.isoformat()}"


def fingerprint(question_set_id: int) -> tuple[int, int]:
    """How many states the set holds, and the sum of their revisions (one index read)."""
    found = SampleState.objects.filter(question_set_id=question_set_id).aggregate(
        states=Count("pk"), revisions=Sum("revision")
    )
    return found["states"], found["revisions"] or 0


def settled_counts(question_set: QuestionSet, qids: list[str]) -> tuple[int, dict[str, int]]:
    """How many states the set holds, and per question of `qids` how many hold an expected
    answer for it: kept counts when they are the set's now, else one aggregate query."""
    now = fingerprint(question_set.pk)
    kept: dict[str, Any] | None = cache.get(_key(question_set))
    if (
        kept is not None
        and tuple(kept["fingerprint"]) == now
        and set(qids) <= kept["counts"].keys()
    ):
        return now[0], {q: kept["counts"][q] for q in qids}
    counted = SampleState.objects.filter(question_set=question_set).aggregate(
        **{f"q{i}": Count("pk", filter=Q(expected__has_key=q)) for i, q in enumerate(qids)}
    )
    counts = {q: counted[f"q{i}"] for i, q in enumerate(qids)}
    if kept is not None and tuple(kept["fingerprint"]) == now:
        counts = {**kept["counts"], **counts}
    cache.set(_key(question_set), {"fingerprint": now, "counts": counts}, KEPT_SECONDS)
    return now[0], {q: counts[q] for q in qids}


def settled_counts_moved(question_set: QuestionSet, before: dict, after: dict) -> None:
    """One state's expected answers go from `before` to `after` as its next revision (called
    in the saving transaction, before the save): the kept counts move with them when they were
    kept for the set as it is just before; else they are dropped, to be counted again."""
    kept: dict[str, Any] | None = cache.get(_key(question_set))
    if kept is None:
        return
    states, revisions = fingerprint(question_set.pk)
    if tuple(kept["fingerprint"]) != (states, revisions):
        cache.delete(_key(question_set))
        return
    counts = {q: n + (q in after) - (q in before) for q, n in kept["counts"].items()}
    moved = {"fingerprint": (states, revisions + 1), "counts": counts}
    cache.set(_key(question_set), moved, KEPT_SECONDS)
