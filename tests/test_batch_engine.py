"""The batch engine's asyncio path keeps the wire's semantics — the same request bytes, answer
checks, error table and secret scrubbing as a single ask, and a deadline per call that a
trickling provider cannot stretch — while a run holds one database connection and writes a
few statements per state."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from questions import roles, services
from questions.models import BatchRun, Decision
from questions.selectors import runs
from tests import factories
from tests.helpers import execute_closing
from tests.providers import (
    KEY,
    STATE,
    UNSORTED,
    FlakyProvider,
    Provider,
    answer_all,
)

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_databases]


@pytest.fixture
def provider(provider_factory):
    return provider_factory(
        Provider(default=answer_all), every_wire=True, DECISIONS_BATCH_BACKOFF_SECONDS=0.01
    )


def a_run(backend: str, *, states=(STATE,), max_attempts=1, concurrency=2) -> BatchRun:
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=UNSORTED)
    for i, state in enumerate(states):
        services.sample_state_create(question_set=qs, name=f"s{i}", state=state, author=writer)
    return services.batch_create(
        version=services.open_draft(qs),
        backend=backend,
        user=writer,
        max_attempts=max_attempts,
        concurrency=concurrency,
        enqueue=False,
    )


@pytest.mark.parametrize("backend", ["typesafe", "runtime", "openrouter"])
def test_a_batch_sends_the_bytes_a_single_ask_sends_and_records_them(provider, backend):
    run = a_run(backend)
    services.batch_execute(run.pk)
    services.decision_ask(
        backend=backend, document=UNSORTED, state=STATE, user=roles.OPERATOR, model=run.model
    )
    batch, single = provider.requests
    assert batch["raw"] == single["raw"]
    assert batch["path"] == single["path"]
    assert batch["headers"]["Authorization"] == single["headers"]["Authorization"]
    recorded = Decision.objects.order_by("id")
    assert [d.request_text.encode() for d in recorded] == [batch["raw"], single["raw"]]
    assert recorded[0].request_sha256 == recorded[1].request_sha256
    item = run.items.get()
    assert item.status == "answered" and item.decision_id == recorded[0].pk
    assert set(item.answers) == set(UNSORTED)


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (401, {"detail": f"bad key {KEY}"}, (502, "The provider rejected the key.")),
        (422, {"detail": f"no good: {KEY}"}, (422, "The provider rejected the questions")),
        (200, {"model": "m", "answers": {"zeta": {"type": "noul"}}}, (502, "")),
        (200, {"error": "nope"}, (502, "The provider answered 200 with an error")),
    ],
)
def test_a_batch_maps_errors_and_scrubs_the_key_like_a_single_ask(provider, status, body, expected):
    run = a_run("typesafe")
    provider.reply(status, body)
    services.batch_execute(run.pk)
    item = run.items.get()
    assert (item.status, item.error_status) == ("failed", expected[0])
    assert item.error_detail.startswith(expected[1])
    provider.reply(status, body)
    single = services.decision_ask(
        backend="typesafe", document=UNSORTED, state=STATE, user=roles.OPERATOR
    )
    assert (single.error.status, single.error.detail) == (item.error_status, item.error_detail)
    for decision in Decision.objects.all():
        for text in (decision.response_text, decision.detail, decision.provider_detail):
            assert KEY not in text


def test_a_trickling_provider_cannot_hold_a_batch_call_past_the_timeout(provider, settings):
    settings.DECISIONS_TIMEOUT_SECONDS = 0.5
    provider.reply(200, answer_all({"questions": UNSORTED}), trickle=0.2)
    run = a_run("typesafe", max_attempts=2)
    run = services.batch_execute(run.pk)
    # the first call is cut at its deadline (504) although every byte came within it; the retry
    # answers at once
    assert list(Decision.objects.order_by("id").values_list("status", flat=True)) == [504, 200]
    item = run.items.get()
    assert (item.status, item.attempts) == ("answered", 2)


def test_a_run_writes_a_few_statements_per_state(settings):
    provider = FlakyProvider(latency=0.05)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k", provider.url
    try:
        run = a_run("typesafe", states=[{"n": i} for i in range(48)], concurrency=8)
        with CaptureQueriesContext(connection) as queries:
            run = services.batch_execute(run.pk)
    finally:
        provider.close()
    assert runs.run_counts(run)["answered"] == 48
    # claims in chunks, outcomes in batches: at worst 3 statements per state (one outcome per
    # write); the thread-per-state engine ran 7 and a transaction or more per state
    assert len(queries) <= 3 * 48 + 10, len(queries)


def test_a_run_holds_one_database_connection_whatever_its_concurrency(settings):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: counts the server's sessions")
    provider = FlakyProvider(latency=0.05)
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k", provider.url
    run = a_run("typesafe", states=[{"n": i} for i in range(64)], concurrency=32)
    sessions = "select count(*) from pg_stat_activity where datname = current_database()"
    with connection.cursor() as cursor:
        cursor.execute(sessions)
        [(before,)] = cursor.fetchall()
        most = before

        def execute() -> None:
            try:
                services.batch_execute(run.pk)
            finally:
                connection.close()  # this thread's own

        worker = threading.Thread(target=execute)
        worker.start()
        while worker.is_alive():
            cursor.execute(sessions)
            most = max(most, cursor.fetchall()[0][0])
            time.sleep(0.02)
    provider.close()
    assert runs.run_counts(BatchRun.objects.get(pk=run.pk))["answered"] == 64
    assert max(provider.max_in_flight, 0) > 8  # the calls did run concurrently
    assert most - before <= 1  # the run's own thread; it was concurrency + 2


def test_a_cancel_ends_a_long_backoff_at_once(settings):
    provider = FlakyProvider(fail_first=99, retry_after=30)  # "come back in 30 s", every time
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = "k", provider.url
    try:
        run = a_run("typesafe", states=[{"n": 1}, {"n": 2}], max_attempts=4)
        worker = threading.Thread(target=execute_closing, args=(run.pk,))
        worker.start()
        waited = time.monotonic() + 60
        while len(provider.calls) < 2 and time.monotonic() < waited:  # both states in backoff
            time.sleep(0.01)
        services.batch_cancel(run=BatchRun.objects.get(pk=run.pk), user=roles.OPERATOR)
        worker.join(20)  # the backoff asked for 30 s: only the cancel ends the run before it
        assert not worker.is_alive()
    finally:
        provider.close()
    run.refresh_from_db()
    assert run.status == "cancelled"
    assert set(run.items.values_list("status", "error_status")) == {("failed", 429)}
    assert set(provider.calls.values()) == {1}


def test_a_worker_collects_less_often_and_leaves_what_it_loaded_alone(monkeypatch):
    """`db_worker` runs its tasks with the engine's garbage collector, and puts Python's back
    when it ends."""
    import gc

    from django.core.management import call_command
    from django_tasks_db.management.commands import db_worker

    from questions.engine import batches

    before = gc.get_threshold(), gc.get_freeze_count()
    seen = []
    monkeypatch.setattr(
        db_worker.Command,
        "handle",
        lambda self, *a, **kw: seen.append((gc.get_threshold(), gc.get_freeze_count())),
    )
    call_command("db_worker", "--no-reload", verbosity=0)
    [(threshold, frozen)] = seen
    assert threshold == (batches.YOUNG_COLLECTION, *before[0][1:])
    assert frozen > 10_000  # Django and the app, loaded before
    assert (gc.get_threshold(), gc.get_freeze_count()) == before


def test_a_finished_execution_is_not_kept_alive(provider, monkeypatch):
    """Nothing of a run's execution (its run, its tally, a try's recordings) outlives it in a
    worker that executes run after run."""
    import gc
    import weakref

    from questions.services import batch_execution

    made = []

    class Watched(batch_execution._Execution):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(weakref.ref(self))

    monkeypatch.setattr(batch_execution, "_Execution", Watched)
    run = a_run("typesafe", states=[{"n": i} for i in range(3)])
    assert services.batch_execute(run.pk).status == "done"
    gc.collect()
    assert len(made) == 1 and made[0]() is None
