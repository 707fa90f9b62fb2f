"""A run adds up its summary and reports as it writes its answers (`metrics.Tally`): each
answered item's misses go out with its answer, and the finishing run reads no answer again
when its tally counted every answered item; a run taken over from another worker, whose tally
counted only its own items, reads them all. The tally's sums do not depend on the order the
items come in, nor on how the batches were split."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from questions import roles, services
from questions.core import metrics
from questions.models import BatchRun
from questions.selectors import runs
from questions.services import tries
from tests import factories
from tests.providers import stand_in_serving

pytestmark = pytest.mark.both_databases

# an answered item: (its tags, what its state expected, its answers)
_probability = st.floats(0, 1, allow_nan=False).map(lambda p: round(p, 2))
_noul = _probability.map(lambda p: {"type": "noul", "noul": p})
_choice = st.tuples(st.sampled_from("ab"), _probability).map(
    lambda c: {"type": "choice", "choice": c[0], "probabilities": {c[0]: c[1]}}
)
_score = st.floats(0, 3, allow_nan=False).map(
    lambda s: {"type": "score", "score": round(s, 2), "probabilities": {}}
)
_items = st.lists(
    st.tuples(
        st.lists(st.sampled_from(["x", "y", "z"]), max_size=2),
        st.fixed_dictionaries(
            {},
            optional={
                "n": st.booleans(),
                "c": st.sampled_from("ab"),
                "s": st.integers(0, 3),
            },
        ),
        st.fixed_dictionaries({"n": _noul, "c": _choice, "s": _score}),
    ),
    max_size=12,
)


def _everything(tally: metrics.Tally, failed: int = 0):
    summary = tally.summary(failed)
    return (
        metrics.report_as_json(tally.report()),
        tally.slices(),
        (summary.checked, summary.passed, summary.failed_states, summary.misses),
    )


@given(items=_items, order=st.randoms(use_true_random=False), cuts=st.sets(st.integers(0, 12)))
def test_a_tally_adds_up_the_same_in_any_order_and_any_split_into_batches(items, order, cuts):
    whole = metrics.Tally(0.5)
    for pk, (tags, expected, answers) in enumerate(items):
        whole.add(pk, tags, expected, answers)
    numbered = list(enumerate(items))
    order.shuffle(numbered)
    merged, batch = metrics.Tally(0.5), metrics.Tally(0.5)
    for n, (pk, (tags, expected, answers)) in enumerate(numbered):
        if n in cuts:
            merged.merge(batch)
            batch = metrics.Tally(0.5)
        batch.add(pk, tags, expected, answers)
    merged.merge(batch)
    assert _everything(merged) == _everything(whole)
    # and the functions that work it out at once say the same
    report = metrics.report(
        metrics.Case("", qid, a["type"], a, expected.get(qid))
        for _, expected, answers in items
        for qid, a in answers.items()
    )
    assert metrics.report_as_json(report) == metrics.report_as_json(whole.report())
    rows = [(pk, "answered", expected, answers) for pk, (_, expected, answers) in enumerate(items)]
    assert metrics.summarize([*rows, (99, "failed", {}, None)]).misses == whole.misses


def test_an_items_misses_are_how_many_of_its_checked_answers_missed():
    tally = metrics.Tally(0.5)
    answers = {
        "n": {"type": "noul", "noul": 0.9},
        "c": {"type": "choice", "choice": "b", "probabilities": {"b": 0.6}},
        "s": {"type": "score", "score": 1.4, "probabilities": {}},
    }
    assert tally.add(1, ["t"], {"n": True, "c": "a", "s": 1}, answers) == 1  # the choice
    assert tally.add(2, [], {"n": False}, answers) == 1
    assert tally.add(3, None, None, answers) == 0  # nothing expected: nothing missed
    assert tally.misses == {1: 1, 2: 1, 3: 0}
    assert [(s.tag, s.states, s.checked, s.passed) for s in tally.slices()] == [("t", 1, 3, 2)]


@pytest.fixture
def version(settings):
    with stand_in_serving(settings):
        yield factories.tickets_draft(factories.author("writer"), urgent_every=3)


def _create(version) -> BatchRun:
    return services.batch_create(
        version=version, backend="typesafe", user=roles.OPERATOR, enqueue=False
    )


def _summary_of_all(run: BatchRun) -> tuple:
    """The run's summary and report worked out afresh from every item the database holds."""
    rows = run.items.filter(variant=0).values_list(
        "pk", "status", "sample_state__expected", "answers"
    )
    summary = metrics.summarize(rows, run.threshold)
    report = metrics.report_as_json(runs.run_report_computed(run))
    return (summary.checked, summary.passed, summary.failed_states, summary.misses), report


def _stored(run: BatchRun) -> tuple:
    run = BatchRun.objects.get(pk=run.pk)
    misses = dict(run.items.filter(status="answered").values_list("pk", "misses"))
    report = runs.stored_report(run)
    report.pop("tags")
    report.pop("misses")  # the most confidently wrong: tests/test_run_misses.py
    return (run.checked, run.passed, run.failed_states, misses), report


@pytest.mark.django_db(transaction=True)
def test_a_run_writes_each_answers_misses_with_it_and_reads_no_answer_at_its_end(version):
    run = _create(version)
    with CaptureQueriesContext(connection) as ran:
        services.batch_execute(run.pk)
    sql = [q["sql"] for q in ran.captured_queries]
    assert not [s for s in sql if s.startswith('UPDATE "questions_batchitem" SET "misses"')]
    item_reads = [s for s in sql if s.startswith("SELECT") and "questions_batchitem" in s]
    assert item_reads and not [s for s in item_reads if '"answers"' in s]
    assert _stored(run) == _summary_of_all(run)
    assert _stored(run)[0][0] > _stored(run)[0][1] > 0  # checked, passed, and missed some


@pytest.mark.django_db(transaction=True)
def test_a_run_taken_over_counts_the_answers_another_worker_wrote(version):
    earlier = services.batch_execute(_create(version).pk)
    answers = dict(earlier.items.values_list("sample_state_id", "answers"))
    run = _create(version)
    # another worker answered three of its states and went away before the run finished
    for item in run.items.order_by("pk")[:3]:
        item.status, item.answers, item.attempts = "answered", answers[item.sample_state_id], 1
        item.save(update_fields=["status", "answers", "attempts"])
    services.batch_execute(run.pk)
    assert run.items.filter(status="answered").count() == 6
    assert not run.items.filter(status="answered", misses=None).exists()
    assert _stored(run) == _summary_of_all(run)


@pytest.mark.django_db(transaction=True)
def test_a_try_counts_the_answers_it_replayed_with_those_it_asked(version):
    services.batch_execute(_create(version).pk)
    document = version.document
    document["desk"]["instructions"] = "Which desk handles it, reworded?"
    version = services.version_save(
        version=version, document=document, base_revision=version.revision, author=version.author
    )
    plan = tries.try_plan(
        version=version, document=version.document, backend="typesafe", user=version.author
    )
    assert plan.changed == ["desk"]
    run = services.batch_execute(
        tries.try_start(version=version, plan=plan, user=version.author, enqueue=False).pk
    )
    assert set(run.items.first().answers) == {"urgent", "desk"}
    assert _stored(run) == _summary_of_all(run)
    assert _stored(run)[0][0] == 12  # both questions of the six states checked
