"""One run worked by several task workers (`services.batches`): on PostgreSQL a run wider than
`batches.WORKER_CALLS` calls at a time is queued as several tasks (`task_widths`), and each
worker that takes one joins the run, claims its share of the states (SKIP LOCKED), asks and
writes them; the last to end ends the run and stores its summary, once. Here two of
django_tasks_db's workers run in threads of this process against the test database: every
state is asked exactly once, the run's concurrency holds across them, a cancel ends both.
(Real `db_worker` processes, one of them stopped or killed mid-run: tests/test_batch_workers.py.)
"""

from __future__ import annotations

import threading

import pytest
from django.db import connection
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from questions import services
from questions.engine import batches
from questions.models import BatchItem, BatchRun, Decision
from questions.selectors import runs
from questions.services import batch_execution
from questions.services import batches as batch_services
from questions.services.summaries import store_summary
from tests import factories
from tests.helpers import wait_for
from tests.providers import DOC, FlakyProvider, Gate, worker

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_databases]

STATES = 300
WIDE = 2 * batches.WORKER_CALLS  # a run of two tasks of 64 calls each


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: two executors claim one run's states side by side")


@pytest.fixture
def gated(settings):
    made: list[tuple[FlakyProvider, Gate]] = []

    def make(*, opens_itself: bool = False) -> tuple[FlakyProvider, Gate]:
        gate = Gate(WIDE, opens_itself=opens_itself)
        provider = FlakyProvider(latency=0.01, hold=gate)
        settings.TYPESAFE_API_KEY = "k-sharing-test"
        settings.TYPESAFE_BASE_URL = provider.url
        made.append((provider, gate))
        return provider, gate

    yield make
    for provider, gate in made:
        gate.open()  # a failed test leaves no call held
        provider.close()


@pytest.fixture
def summaries(monkeypatch) -> list[int]:
    """The runs whose summary an executor stored, once per store."""
    stored = []

    def counted(run, *args, **kwargs):
        stored.append(run.pk)
        return store_summary(run, *args, **kwargs)

    monkeypatch.setattr(batch_execution, "store_summary", counted)
    return stored


def a_run(states: int = STATES, *, concurrency: int = WIDE, enqueue: bool = True) -> BatchRun:
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i:03d}",
            state={"n": i},
            author=writer,
            expected={"urgent": i % 2 == 0},
        )
    return services.batch_create(
        version=services.open_draft(qs),
        backend="typesafe",
        user=writer,
        concurrency=concurrency,
        enqueue=enqueue,
    )


def workers(*names: str) -> list[threading.Thread]:
    """django_tasks_db's worker in a thread per name, each running tasks until none is left."""

    def work(name: str) -> None:
        try:
            worker(["default"], name).run()
        finally:
            connection.close()

    threads = [threading.Thread(target=work, args=(name,), daemon=True) for name in names]
    for thread in threads:
        thread.start()
    return threads


def ended(threads: list[threading.Thread]) -> None:
    for thread in threads:
        thread.join(120)
        assert not thread.is_alive()


def test_how_many_tasks_a_run_is_queued_as(monkeypatch):
    features = connection.features
    monkeypatch.setattr(features, "has_select_for_update_skip_locked", True)
    assert batches.WORKER_CALLS == 64
    assert batch_services.task_widths(1) == [1]
    assert batch_services.task_widths(64) == [64]
    assert batch_services.task_widths(65) == [33, 32]
    assert batch_services.task_widths(100) == [50, 50]
    assert batch_services.task_widths(128) == [64, 64]
    monkeypatch.setattr(features, "has_select_for_update_skip_locked", False)  # SQLite
    assert batch_services.task_widths(128) == [128]  # one writer: one executor a run


def test_a_wide_run_is_queued_as_tasks_that_two_workers_share(postgres, gated, summaries, caplog):
    provider, gate = gated(opens_itself=True)
    run = a_run()
    tasks = DBTaskResult.objects.filter(task_path__endswith="batch_run_task")
    assert sorted(t.args_kwargs["args"] for t in tasks) == [[run.pk, 64], [run.pk, 64]]
    threads = workers("w1", "w2")
    # each worker makes 64 calls at a time: the run's 128 go out only with both at it
    assert gate.reached.wait(60), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    ended(threads)
    assert set(tasks.values_list("status", flat=True)) == {"SUCCESSFUL"}
    run.refresh_from_db()
    assert run.status == "done", run.detail
    assert provider.max_in_flight == WIDE  # the run's concurrency, across both workers
    assert len(provider.calls) == STATES and set(provider.calls.values()) == {1}
    assert Decision.objects.count() == STATES
    assert runs.run_counts(run)["answered"] == STATES
    assert summaries == [run.pk]  # stored once, by the last to end
    assert run.checked == STATES  # from every answer, the other worker's too
    summed = (run.checked, run.passed, run.failed_states)
    store_summary(run)  # worked out again from the database
    run.refresh_from_db()
    assert (run.checked, run.passed, run.failed_states) == summed
    lines = [r.getMessage() for r in caplog.records if r.name == "questions.batches"]
    [end] = [line for line in lines if line.startswith(f"run {run.pk} done: ")]
    [share] = [line for line in lines if "this worker's share ended" in line]
    calls = [int(line.split(" calls (")[0].rsplit(" ", 1)[1]) for line in (end, share)]
    assert sum(calls) == STATES and min(calls) > 0  # each logs its own calls


def test_a_cancel_ends_every_worker_of_a_run(postgres, gated, summaries, monkeypatch):
    provider, gate = gated()
    run = a_run()
    seen: set[int] = set()  # the threads whose executor saw the cancel
    tick = batch_execution._Execution.tick

    def watched(execution):
        cancelled = tick(execution)
        if cancelled:
            seen.add(threading.get_ident())
        return cancelled

    monkeypatch.setattr(batch_execution._Execution, "tick", watched)
    threads = workers("w1", "w2")
    assert gate.reached.wait(60), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    services.batch_cancel(run=run, user=run.created_by)
    wait_for(lambda: len(seen) == 2, 60, "both workers to see the cancel")
    gate.open()  # the calls in flight come back
    ended(threads)
    run.refresh_from_db()
    counts = runs.run_counts(run)
    assert run.status == "cancelled"
    assert counts["answered"] == WIDE  # the calls in flight finished and were kept
    assert counts["answered"] + counts["cancelled"] == STATES
    assert not run.items.filter(status__in=["pending", "running"]).exists()
    assert set(provider.calls.values()) == {1} and len(provider.calls) == WIDE
    assert Decision.objects.count() == WIDE
    assert summaries == [run.pk]


def test_a_worker_that_ends_beside_another_leaves_the_run_to_it(postgres, gated, summaries):
    """One executor ends while another holds a state; the other, ending last, ends the run
    and stores its summary from every answer in the database."""
    provider, _gate = gated()
    provider.hold = None  # every call answered at once
    run = a_run(6, enqueue=False)
    held = run.items.order_by("pk").first()
    BatchItem.objects.filter(pk=held.pk).update(status="running", claimed_at=timezone.now())
    BatchRun.objects.filter(pk=run.pk).update(
        status="running", started_at=timezone.now(), heartbeat_at=timezone.now()
    )
    left = services.batch_execute(run.pk)  # joins the run, asks the 5 pending states
    assert left.status == "running" and left.finished_at is None
    assert runs.run_counts(left)["answered"] == 5 and summaries == []
    # the other executor's call comes back and is written
    answers = left.items.filter(status="answered").first().answers
    BatchItem.objects.filter(pk=held.pk).update(status="answered", attempts=1, answers=answers)
    last = services.batch_execute(run.pk)  # joins, finds nothing to claim: the last to end
    assert last.status == "done" and summaries == [run.pk]
    assert last.checked == 6  # the answer it did not write counted too
    assert sum(provider.calls.values()) == 5
