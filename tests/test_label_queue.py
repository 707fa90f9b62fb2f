"""The labelling queue (`LabelQueue`): the ranking of the states worth labelling, stored when a
run of the set finishes and served from there — the same states, questions and reasons as
ranking every state (`states_to_label`), those labelled since skipped, those added since at
the end, a blind labeller's own labels and other labellers' holds left out — in as many reads
at 300 states as at 30."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from questions import services
from questions.models import BatchItem, BatchRun, LabelQueue, LabelReservation
from questions.selectors import labels as selectors
from questions.services import labels
from questions.services.summaries import store_summary
from tests import factories
from tests.helpers import COMPARE_DOC, answers, desk

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


def _world(count: int, slug: str = "queue"):
    writer = factories.author(f"{slug}-writer")
    qs = factories.question_set(slug, owner=writer, doc=COMPARE_DOC)
    version = services.open_draft(qs)
    run = BatchRun.objects.create(
        question_set=qs, version=version, backend="recorded", model="m", status="done"
    )
    for i in range(count):
        expected = {"desk": "billing"} if i % 3 == 0 else {}
        sample = services.sample_state_create(
            question_set=qs, name=f"s{i:03d}", state={"n": i}, author=writer, expected=expected
        )
        urgent = 0.52 if i % 4 == 0 else 0.9  # near the threshold: unsure
        BatchItem.objects.create(
            run=run,
            sample_state=sample.current_revision(),
            status="answered",
            answers=answers(desk("billing", {"billing": 0.7}), urgent, 1.2),
        )
    store_summary(BatchRun.objects.get(pk=run.pk))
    labels.label_queue_task.call(qs.pk)  # as the worker does with what the run's end queued
    return qs, version, writer


def _as_ranked(candidates):
    return [(c.name, c.questions, c.reasons) for c in candidates]


def test_a_finished_run_stores_the_ranking_and_the_queue_serves_it():
    qs, version, _writer = _world(30)
    assert LabelQueue.objects.get(question_set=qs).version_number == version.number
    ranked = selectors.states_to_label(qs, version, limit=None)
    served = selectors.label_queue(qs, version, limit=len(ranked) + 5)
    assert _as_ranked(served) == _as_ranked(ranked)
    assert any("P(true) 0.52, near the threshold" in r for r in served[0].reasons)
    assert _as_ranked(selectors.label_queue(qs, version, limit=3)) == _as_ranked(ranked[:3])


def test_the_queue_skips_what_was_labelled_since_and_adds_the_states_added_since():
    qs, version, writer = _world(12)
    first = selectors.label_queue(qs, version)[0]
    sample = qs.sample_states.get(name=first.name)
    for qid, answer in (("urgent", True), ("desk", "tech"), ("level", 2)):
        labels.state_label(sample=sample, question_id=qid, answer=answer, labeller=writer)
    added = services.sample_state_create(
        question_set=qs, name="a-new-one", state={"n": "new"}, author=writer
    )
    served = selectors.label_queue(qs, version, limit=100)
    assert first.name not in [c.name for c in served]
    assert _as_ranked(served[:-1]) == [
        r
        for r in _as_ranked(selectors.states_to_label(qs, version, limit=None))
        if r[0] != "a-new-one"
    ]
    assert served[-1].name == added.name  # after the ranked ones: it has no answers yet
    skipped = selectors.label_queue(
        qs, version, skip=[qs.sample_states.get(name=served[0].name).pk]
    )
    assert skipped[0].name == served[1].name


def test_a_blind_labeller_is_not_offered_what_they_labelled_or_what_another_holds():
    qs, version, ann = _world(6)
    bob, cy = factories.author("bob"), factories.author("cy")
    labels.labelling_configure(question_set=qs, user=factories.reviewer("rev"), needed=2)
    top = selectors.label_queue(qs, version, labeller=ann)[0]
    sample = qs.sample_states.get(name=top.name)
    fitting = {"urgent": True, "desk": "tech", "level": 2}
    labels.state_label(
        sample=sample, question_id=top.questions[0], answer=fitting[top.questions[0]], labeller=ann
    )
    mine = next(
        c for c in selectors.label_queue(qs, version, labeller=ann, limit=10) if c.name == top.name
    )
    assert top.questions[0] not in mine.questions  # their own label: not offered again
    theirs = selectors.label_queue(qs, version, labeller=bob, limit=10)
    assert top.questions == next(c for c in theirs if c.name == top.name).questions
    LabelReservation.objects.create(
        sample_state=sample, labeller=bob, until=timezone.now() + timedelta(minutes=5)
    )
    assert top.name not in [c.name for c in selectors.label_queue(qs, version, labeller=cy)]
    assert top.name in [c.name for c in selectors.label_queue(qs, version, labeller=bob)]


def test_the_queue_reads_as_much_at_300_states_as_at_30():
    def reads(count):
        qs, version, writer = _world(count, f"queue-{count}")
        with CaptureQueriesContext(connection) as seen:
            selectors.label_queue(qs, version, labeller=writer)
        return len(seen)

    assert reads(300) == reads(30)


def test_a_finished_run_queues_the_ranking_for_a_worker(django_capture_on_commit_callbacks):
    from django_tasks_db.models import DBTaskResult

    writer = factories.author("queued-writer")
    qs = factories.question_set("queued", owner=writer, doc=COMPARE_DOC)
    version = services.open_draft(qs)
    run = BatchRun.objects.create(
        question_set=qs, version=version, backend="recorded", model="m", status="done"
    )
    with django_capture_on_commit_callbacks(execute=True):
        store_summary(run)
    queued = DBTaskResult.objects.filter(task_path__endswith="label_queue_task")
    assert [row.args_kwargs["args"] for row in queued] == [[qs.pk]]
    assert not LabelQueue.objects.filter(question_set=qs).exists()  # not at the run's end
    labels.label_queue_task.call(qs.pk)
    assert LabelQueue.objects.get(question_set=qs).version_number == version.number


def test_with_one_label_needed_the_database_counts_the_progress_reading_them_would():
    from questions.models import LabelSettlement

    qs, version, writer = _world(24, "counted")
    bob = factories.author("counted-bob")
    samples = list(qs.sample_states.order_by("name"))
    labels.state_label(sample=samples[1], question_id="urgent", answer=True, labeller=bob)
    labels.state_label(sample=samples[2], question_id="level", answer=2, labeller=writer)
    LabelSettlement.objects.create(
        sample_state=samples[4], question_id="desk", outcome="ambiguous", reviewer=bob
    )
    counted = selectors.labelling_progress(qs, version, viewer=factories.author("counted-cy"))
    assert counted == selectors.read_progress(qs, version, viewer=counted_viewer(counted))
    assert counted.settled == 8 + 2 and counted.counts["desk"] == 8
    assert [p.labeller for p in counted.labellers] == [
        "counted-cy",
        "counted-bob",
        "counted-writer",
    ]


def counted_viewer(progress):
    from django.contrib.auth import get_user_model

    return get_user_model().objects.get(username=progress.labellers[0].labeller)


def test_the_labelling_page_serves_the_stored_queue_and_keeps_the_state_it_names():
    from django.test import Client
    from django.urls import reverse

    qs, version, writer = _world(80, "served")
    client = Client()
    client.force_login(writer)
    ranked = selectors.states_to_label(qs, version, limit=None)
    page = client.get(reverse("label-states", args=[qs.slug])).content.decode()
    assert f">{ranked[0].name}<" in page and "the first 50 states" in page
    last = qs.sample_states.get(name=ranked[-1].name)  # past the list the page reads
    named = client.get(reverse("label-states", args=[qs.slug]), {"state": last.pk})
    listed = f'state={last.pk}">{last.name}</a>'
    assert listed not in page and last.name in named.content.decode()  # shown, not listed
    offered = selectors.states_for(qs, version, writer, wanted=last.pk, limit=51)
    assert offered[0].pk == last.pk and len(offered) == 52


def _every_state_progress(question_set, version, viewer=None):
    """The progress as it was counted before: from every state's expected answers and every
    current label, in memory (the oracle of `read_progress`)."""
    from questions.core import labelling
    from questions.models import LabelSettlement, StateLabel

    qids = [q.id for q in labelling.questions_of(version.document)]
    rows = list(question_set.sample_states.values_list("pk", "expected"))
    missing = {(pk, q) for pk, e in rows for q in qids if q not in (e or {})}
    open_pairs = missing - set(
        LabelSettlement.objects.filter(sample_state__question_set=question_set).values_list(
            "sample_state_id", "question_id"
        )
    )
    mine, count = {}, {}
    for pk, qid, who in StateLabel.objects.filter(
        sample_state__question_set=question_set, current=True, question_id__in=qids
    ).values_list("sample_state_id", "question_id", "labeller__username"):
        mine.setdefault(who, set()).add((pk, qid))
        count[(pk, qid)] = count.get((pk, qid), 0) + 1
    if viewer is not None:
        mine.setdefault(viewer.get_username(), set())
    needed = question_set.labels_needed
    full = {p for p in open_pairs if count.get(p, 0) >= needed}
    return {
        who: (len(t), len(t) + len(open_pairs) - len(open_pairs & t) - len(full - t))
        for who, t in mine.items()
    }, len(rows) * len(qids) - len(missing)


def test_blind_progress_reads_the_labelled_states_and_counts_what_every_state_would():
    from questions.selectors.labels import labelling_version
    from tests.helpers import agreement_world

    world = agreement_world(states=12)
    qs = world["set"]
    for i in range(12, 30):  # states no one labelled yet
        services.sample_state_create(
            question_set=qs, name=f"s{i:02d}", state={"n": i}, author=world["ann"]
        )
    version = labelling_version(qs)
    cy = factories.author("cy")
    progress = selectors.labelling_progress(qs, version, viewer=cy)
    people, settled = _every_state_progress(qs, version, viewer=cy)
    assert {p.labeller: (p.done, p.wanted) for p in progress.labellers} == people
    assert progress.settled == settled and progress.states == 30
    assert people["cy"][0] == 0 and people["cy"][1] > 0
    with CaptureQueriesContext(connection) as seen:
        selectors.labelling_progress(qs, version, viewer=cy)
    every_state = [  # a read of every state's expected answers, row by row
        q["sql"]
        for q in seen.captured_queries
        if '"expected"' in q["sql"] and "DISTINCT" not in q["sql"] and "COUNT(" not in q["sql"]
    ]
    assert every_state == []


def test_a_key_press_moves_the_kept_counts_and_any_other_change_counts_again(client):
    from django.core.cache import cache

    from questions.selectors import settled
    from tests.helpers import agreement_world

    cache.clear()
    world = agreement_world(states=8)
    qs = world["set"]
    services.labelling_configure(question_set=qs, user=world["rev"], needed=1)
    qids = ["desk", "urgency", "churn"]

    def counted():  # the oracle: every state's expected answers, read
        rows = list(qs.sample_states.values_list("expected", flat=True))
        return len(rows), {q: sum(q in (e or {}) for e in rows) for q in qids}

    fresh = services.sample_state_create(
        question_set=qs, name="new", state={"n": 99}, author=world["ann"]
    )
    assert settled.settled_counts(qs, qids) == counted()  # counted, then kept
    with CaptureQueriesContext(connection) as seen:
        labels.state_label(
            sample=fresh, question_id="desk", answer="billing", labeller=world["ann"]
        )
        assert settled.settled_counts(qs, qids) == counted()
    assert not [q for q in seen.captured_queries if "FILTER" in q["sql"]]  # moved, not counted
    fresh.refresh_from_db()
    services.sample_state_update(  # another path: the kept counts are read again
        sample=fresh,
        name="new",
        state={"n": 99},
        author=world["ann"],
        base_revision=fresh.revision,
        expected={"desk": "billing", "urgency": 1},
    )
    assert settled.settled_counts(qs, qids) == counted()
    services.sample_state_delete(sample=fresh, author=world["ann"])
    assert settled.settled_counts(qs, qids) == counted()
