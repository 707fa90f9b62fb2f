"""Batch runs and the processes that execute them: a process asked to stop releases what it has
not sent and queues the run again; on PostgreSQL, two real `db_worker` processes share one
database and every state is asked exactly once — also when the worker holding a run gets
SIGTERM mid-run; and two of them share one wide run (two tasks of 64 calls each), also when
one of them is stopped by SIGTERM, or killed: then its share is taken over once the run's
heartbeat is stale, and only the calls it had in flight are asked again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection
from django_tasks_db.models import DBTaskResult

from questions import services
from questions.engine import batches
from questions.models import BatchItem, BatchRun, Decision
from questions.selectors import runs
from tests import factories
from tests.helpers import execute_closing, wait_for
from tests.providers import DOC, FlakyProvider, Gate

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_databases]

ROOT = Path(__file__).resolve().parents[1]
WORKERS_APP = "db_worker-under-test"
WIDE = 2 * batches.WORKER_CALLS  # a run of two tasks, which two workers share
STALE_SECONDS = 4  # a killed worker's share is taken over soon (the default is 60)


@pytest.fixture
def provider(provider_factory):
    return provider_factory(FlakyProvider(latency=0.1), key="k-workers-test")


@pytest.fixture
def no_stop_left_behind():
    yield
    batches.stopping.clear()


def a_run(states: int, *, concurrency: int, enqueue: bool = False) -> BatchRun:
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs, name=f"s{i:03d}", state={"n": i}, author=writer
        )
    return services.batch_create(
        version=services.open_draft(qs),
        backend="typesafe",
        user=writer,
        concurrency=concurrency,
        enqueue=enqueue,
    )


def test_a_stopping_process_releases_what_it_has_not_sent_and_queues_the_run_again(
    provider, settings, no_stop_left_behind
):
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    run = a_run(20, concurrency=2)
    # the first four states are answered; the calls after them wait for the stop
    provider.hold = lambda p: len(p.calls) > 4 and batches.stopping.wait(60)
    thread = threading.Thread(target=execute_closing, args=(run.pk,))
    thread.start()
    wait_for(lambda: run.items.filter(status="answered").count() >= 2, 60, "two answers")
    batches.stopping.set()
    thread.join(60)
    assert not thread.is_alive()
    run.refresh_from_db()
    counts = runs.run_counts(run)
    assert run.status == "queued" and run.heartbeat_at is None
    assert 2 <= counts["answered"] < 20
    assert not run.items.filter(status="running").exists()  # claimed ahead, given back
    assert run.items.filter(status="pending").count() == 20 - counts["answered"]
    assert sum(provider.calls.values()) == counts["answered"]  # what was sent was recorded
    assert services.batch_execute(run.pk) is None  # a stopping process takes no run

    batches.stopping.clear()  # another worker takes it over
    provider.hold = None
    run = services.batch_execute(run.pk)
    assert run.status == "done" and runs.run_counts(run)["answered"] == 20
    assert len(provider.calls) == 20 and set(provider.calls.values()) == {1}
    assert Decision.objects.count() == 20


# --- real worker processes sharing one PostgreSQL -----------------------------------------------


def _workers_env(provider: FlakyProvider) -> dict[str, str]:
    db = connection.settings_dict  # the test database the suite made
    password = f":{db['PASSWORD']}" if db["PASSWORD"] else ""
    url = f"postgres://{db['USER']}{password}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
    return {
        **os.environ,
        "DATABASE_URL": url,
        "DJANGO_SECRET_KEY": "workers-test",
        "DJANGO_DEBUG": "0",
        "TYPESAFE_API_KEY": "k-workers-test",
        "TYPESAFE_BASE_URL": provider.url,
        "PGAPPNAME": WORKERS_APP,  # their sessions, told apart from this process's
    }


@pytest.fixture
def workers(provider):
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: several worker processes share one database")
    started: dict[str, subprocess.Popen] = {}

    def start(*names: str, **env: str) -> dict[str, subprocess.Popen]:
        for name in names:
            started[name] = subprocess.Popen(
                [
                    *(sys.executable, "manage.py", "db_worker", "--no-reload"),
                    *("--no-startup-delay", "--interval", "0.1"),
                    *("--worker-id", name, "--verbosity", "0"),
                ],
                cwd=ROOT,
                env={**_workers_env(provider), **env},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
            )
        return started

    yield start
    for process in started.values():
        if process.poll() is None:
            process.terminate()
    for process in started.values():
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
    with connection.cursor() as cursor:  # the server lets their sessions go before teardown
        wait_for(
            lambda: (
                not cursor.execute(
                    "select 1 from pg_stat_activity where application_name = %s", [WORKERS_APP]
                )
                or not cursor.fetchall()
            ),
            10,
            "the workers' sessions to end",
        )


def _exactly_once(run: BatchRun, provider: FlakyProvider, states: int) -> None:
    run.refresh_from_db()
    assert run.status == "done", run.detail
    assert runs.run_counts(run)["answered"] == states
    assert len(provider.calls) == states and set(provider.calls.values()) == {1}
    assert Decision.objects.count() == states


@pytest.mark.slow
def test_two_workers_share_one_database_and_ask_each_state_once(workers, provider):
    provider.latency = 0.02
    workers("w1", "w2")
    run = a_run(200, concurrency=8, enqueue=True)
    services.batch_run_task.enqueue(run.pk)  # queued twice, as two sweeps might: taken once
    wait_for(lambda: BatchRun.objects.get(pk=run.pk).finished, 90, "the run to finish")
    _exactly_once(run, provider, 200)


@pytest.mark.slow
def test_a_worker_that_gets_sigterm_mid_run_hands_it_to_the_other(workers, provider):
    processes = workers("w1", "w2")
    run = a_run(200, concurrency=4, enqueue=True)
    wait_for(lambda: run.items.filter(status="answered").count() >= 30, 60, "30 answers")
    holder = wait_for(
        lambda: (
            DBTaskResult.objects.filter(status="RUNNING")
            .values_list("worker_ids", flat=True)
            .first()
        ),
        10,
        "the worker that holds the run",
    )[-1]
    processes[holder].send_signal(signal.SIGTERM)
    assert processes[holder].wait(20) == 0, processes[holder].stderr.read().decode()[-2000:]
    answered_by_the_first = run.items.filter(status="answered").count()
    assert answered_by_the_first < 200  # it stopped early rather than finishing the run
    assert not run.items.filter(status=BatchItem.Status.RUNNING).exists() or (
        BatchRun.objects.get(pk=run.pk).status == "running"  # the other already took it
    )
    wait_for(lambda: BatchRun.objects.get(pk=run.pk).finished, 90, "the other worker to finish")
    _exactly_once(run, provider, 200)
    other = "w2" if holder == "w1" else "w1"
    assert processes[other].poll() is None  # still serving


@pytest.mark.slow
def test_two_real_workers_share_a_wide_run_and_one_stopped_mid_run_leaves_it_to_the_other(
    workers, provider, request
):
    provider.latency, provider.hold = 0.05, (gate := Gate(WIDE))
    request.addfinalizer(gate.open)  # a failed test leaves no call held
    started = workers("w1", "w2")
    run = a_run(300, concurrency=WIDE, enqueue=True)
    # each worker makes 64 calls at a time: the run's 128 go out only with both at it
    assert gate.reached.wait(90), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    started["w1"].send_signal(signal.SIGTERM)  # as a platform stops one worker
    gate.open()
    assert started["w1"].wait(60) == 0, started["w1"].stderr.read().decode()[-2000:]
    wait_for(lambda: BatchRun.objects.get(pk=run.pk).finished, 90, "the other to finish")
    _exactly_once(run, provider, 300)
    assert provider.max_in_flight == WIDE  # never more than the run's concurrency
    assert started["w2"].poll() is None  # still serving


@pytest.mark.slow
def test_a_real_worker_killed_mid_run_leaves_its_share_to_be_taken_over(workers, provider, request):
    provider.latency, provider.hold = 0.05, (gate := Gate(WIDE))
    request.addfinalizer(gate.open)
    started = workers("w1", "w2", DECISIONS__BATCH_STALE_SECONDS=str(STALE_SECONDS))
    run = a_run(300, concurrency=WIDE, enqueue=True)
    assert gate.reached.wait(90), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    started["w1"].kill()  # its 64 calls in flight went out and are never recorded
    started["w1"].wait(10)
    gate.open()
    # the other asks its share and what is pending; the states the dead one claimed wait for
    # the run's heartbeat to go stale, then the other's sweep queues the run and it takes over
    wait_for(lambda: BatchRun.objects.get(pk=run.pk).finished, 90, "the run to be taken over")
    run.refresh_from_db()
    assert run.status == "done", run.detail
    assert runs.run_counts(run)["answered"] == 300
    assert len(provider.calls) == 300
    asked_twice = [state for state, n in provider.calls.items() if n == 2]
    assert len(asked_twice) == batches.WORKER_CALLS and set(provider.calls.values()) == {1, 2}
    assert Decision.objects.count() == 300  # the dead one recorded nothing
    assert started["w2"].poll() is None
