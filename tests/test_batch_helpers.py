"""A wide run spread over helper processes (`questions.processes`, `services.batches._execute`):
on PostgreSQL a run that asks more than DECISIONS__BATCH_PROCESS_CALLS at a time has a helper
process claim, ask and write a share of its calls. The run's concurrency holds across the processes,
every state is asked once, the helper's tally comes back; a cancel and a stopping worker stop
both; a helper that dies leaves its states to the executor. A helper runs with the settings
and the database of the process that asked."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from django.db import connection

from console import settings as console_settings
from questions import services
from questions.core import spec
from questions.engine import batches, processes
from questions.models import BatchItem, BatchRun, Decision
from questions.selectors import runs
from questions.services import batches as batch_services
from tests import factories
from tests.helpers import execute_closing, process_ended, wait_for
from tests.providers import DOC, FlakyProvider, Gate

pytestmark = pytest.mark.django_db(transaction=True)

ROOT = Path(__file__).resolve().parents[1]
STATES = 160
WIDE = 64  # two processes of 32 calls


@pytest.fixture(autouse=True)
def key(settings):
    settings.TYPESAFE_API_KEY = "k-helpers-test"
    # runs of 64 calls at a time are spread, as 32 + 32: the default (64) would spread 128
    settings.DECISIONS_BATCH_PROCESS_CALLS = WIDE // 2


@pytest.fixture
def postgres():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: a helper claims beside its executor (SKIP LOCKED)")


@pytest.fixture
def gated(settings):
    made: list[tuple[FlakyProvider, Gate]] = []

    def make(*, opens_itself: bool = False) -> tuple[FlakyProvider, Gate]:
        gate = Gate(WIDE, opens_itself=opens_itself)
        provider = FlakyProvider(latency=0.01, hold=gate)
        settings.TYPESAFE_BASE_URL = provider.url
        settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
        made.append((provider, gate))
        return provider, gate

    yield make
    batches.stopping.clear()
    for provider, gate in made:
        gate.open()  # a failed test leaves no call held
        provider.close()


def a_run(states: int = STATES, *, concurrency: int = WIDE) -> tuple[BatchRun, object]:
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
    run = services.batch_create(
        version=services.open_draft(qs),
        backend="typesafe",
        user=writer,
        concurrency=concurrency,
        enqueue=False,
    )
    return run, writer


def executing(run: BatchRun) -> threading.Thread:
    thread = threading.Thread(target=execute_closing, args=(run.pk,), daemon=True)
    thread.start()
    return thread


def test_a_wide_run_is_spread_over_a_helper_and_keeps_its_concurrency(
    postgres, gated, monkeypatch, caplog
):
    provider, gate = gated(opens_itself=True)
    run, _ = a_run()
    tallies = []
    stored = batch_services.store_summary

    def store_summary(run, tally=None, **kw):
        tallies.append(tally)
        return stored(run, tally=tally, **kw)

    monkeypatch.setattr(batch_services, "store_summary", store_summary)
    shares, add = [], batch_services._Execution.add

    def added(execution, share):
        shares.append(share)
        add(execution, share)

    monkeypatch.setattr(batch_services._Execution, "add", added)
    thread = executing(run)
    # each process makes 32 calls at a time: the helper's and this one's go out side by side
    assert gate.reached.wait(60), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    thread.join(120)
    assert not thread.is_alive()
    run.refresh_from_db()
    assert run.status == "done", run.detail
    assert provider.max_in_flight == WIDE  # the run's concurrency, across both processes
    assert len(provider.calls) == STATES and set(provider.calls.values()) == {1}
    assert Decision.objects.count() == STATES
    assert runs.run_counts(run)["answered"] == STATES
    # the helper asked its share, and what it added up came back: the tally covers every answer
    [share] = shares
    assert 0 < share.calls < STATES and not share.stopped
    [tally] = tallies
    assert set(tally.misses) == set(run.items.values_list("pk", flat=True))
    summed = (run.checked, run.passed, run.failed_states)
    batch_services.store_summary(run)  # worked out again from the database
    run.refresh_from_db()
    assert (run.checked, run.passed, run.failed_states) == summed
    assert run.checked == STATES
    [line] = [r.getMessage() for r in caplog.records if r.name == "questions.batches"]
    assert f"; {STATES} calls (0 failed) from 2 processes in " in line


def test_a_cancel_stops_every_process_of_a_spread_run(postgres, gated):
    provider, gate = gated()
    run, writer = a_run()
    thread = executing(run)
    assert gate.reached.wait(60), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    services.batch_cancel(run=run, user=writer)
    # the executor's tick sees the cancel and stops the helper before any call comes back
    wait_for(lambda: processes.pool(1).stop.is_set(), 60, "the cancel to reach the helper")
    gate.open()
    thread.join(120)
    assert not thread.is_alive()
    run.refresh_from_db()
    counts = runs.run_counts(run)
    assert run.status == "cancelled"
    assert counts["answered"] >= WIDE  # the calls in flight finished and were kept
    assert counts["answered"] + counts["cancelled"] == STATES
    assert not run.items.filter(status__in=["pending", "running"]).exists()
    assert set(provider.calls.values()) == {1}
    assert sum(provider.calls.values()) == counts["answered"] == Decision.objects.count()


def test_a_stopping_worker_stops_its_helper_and_hands_the_run_back(postgres, gated):
    provider, gate = gated()
    run, _ = a_run()
    thread = executing(run)
    assert gate.reached.wait(60), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    batches.stopping.set()  # SIGTERM in a worker
    # this process's next tick tells the helper (which stops at its own next tick)
    wait_for(lambda: processes.pool(1).stop.is_set(), 60, "the helper to be told to stop")
    gate.open()
    thread.join(120)
    assert not thread.is_alive()
    run.refresh_from_db()
    answered = runs.run_counts(run)["answered"]
    assert run.status == "queued"
    assert not run.items.filter(status="running").exists()  # claimed ahead, given back
    assert run.items.filter(status="pending").count() == STATES - answered
    assert sum(provider.calls.values()) == answered >= WIDE  # what was sent was recorded

    batches.stopping.clear()  # another worker takes it over
    run = services.batch_execute(run.pk)
    assert run.status == "done" and runs.run_counts(run)["answered"] == STATES
    assert len(provider.calls) == STATES and set(provider.calls.values()) == {1}


def test_a_helper_that_dies_leaves_its_states_to_the_executor(postgres, gated):
    provider, gate = gated()
    run, _ = a_run()
    thread = executing(run)
    assert gate.reached.wait(60), f"never {WIDE} calls at once (most {provider.max_in_flight})"
    [helper] = processes.helper_pids()
    os.kill(helper, signal.SIGKILL)  # its 32 calls went out and are never recorded
    gate.open()
    thread.join(120)
    assert not thread.is_alive()
    run.refresh_from_db()
    assert run.status == "done", run.detail
    assert runs.run_counts(run)["answered"] == STATES
    assert len(provider.calls) == STATES
    asked_twice = [state for state, n in provider.calls.items() if n == 2]
    assert len(asked_twice) == WIDE // 2 and set(provider.calls.values()) == {1, 2}
    assert Decision.objects.count() == STATES  # the dead helper recorded nothing
    # the summary counts the answers the helper wrote before it died, from the database
    assert run.checked == STATES
    assert processes.pool(1).broken is False  # the next wide run gets a new helper


def test_a_run_goes_on_alone_when_no_helper_can_be_started(postgres, gated, monkeypatch, caplog):
    provider, _gate = gated(opens_itself=True)
    run, _ = a_run()

    def no_pool(size):
        raise OSError("no process can be spawned here")

    monkeypatch.setattr(processes, "pool", no_pool)
    run = services.batch_execute(run.pk)
    assert run.status == "done" and runs.run_counts(run)["answered"] == STATES
    assert len(provider.calls) == STATES and set(provider.calls.values()) == {1}
    assert provider.max_in_flight == WIDE  # this process asked them all, 64 at a time
    assert f"run {run.pk}: no helper process could be started" in caplog.text


def test_helpers_started_before_one_fails_to_start_stop_first(
    postgres, gated, settings, monkeypatch
):
    settings.DECISIONS_BATCH_PROCESSES = 3
    provider, _gate = gated(opens_itself=True)
    run, _ = a_run(concurrency=96)  # three processes of 32
    submit, submitted = processes.Pool.submit, []

    def second_fails(pool, fn, *args):
        if submitted:
            raise RuntimeError("the second helper cannot be handed its share")
        submitted.append(submit(pool, fn, *args))
        return submitted[-1]

    monkeypatch.setattr(processes.Pool, "submit", second_fails)
    run = services.batch_execute(run.pk)
    assert run.status == "done" and runs.run_counts(run)["answered"] == STATES
    [first] = submitted
    assert first.done()  # waited for before this process asked the rest alone
    assert len(provider.calls) == STATES and set(provider.calls.values()) == {1}
    assert provider.max_in_flight <= 96


def _shares(run: BatchRun) -> list[int]:
    parsed = spec.validate(run.version.document, limits=spec.DEFAULT_LIMITS).document
    return batch_services._shares(batch_services._Execution(run, parsed.questions, None))


def test_how_a_run_is_shared_out(settings):
    settings.DECISIONS_BATCH_PROCESS_CALLS = console_settings.DECISIONS_BATCH_PROCESS_CALLS
    assert settings.DECISIONS_BATCH_PROCESS_CALLS == 64  # the default
    run, _ = a_run(100, concurrency=128)
    postgres = connection.vendor == "postgresql"
    assert _shares(run) == ([64, 64] if postgres else [128])  # SQLite: one writer
    settings.DECISIONS_BATCH_PROCESSES = 3
    assert _shares(run) == ([64, 64] if postgres else [128])  # 100 states: two of 64 ask them
    settings.DECISIONS_BATCH_PROCESS_CALLS = 32
    assert _shares(run) == ([43, 43, 42] if postgres else [128])
    settings.DECISIONS_BATCH_PROCESSES, settings.DECISIONS_BATCH_PROCESS_CALLS = 2, 64

    def answer(n: int) -> None:
        pending = run.items.filter(status=BatchItem.Status.PENDING)
        pending.filter(pk__in=pending.values("pk")[:n]).update(status=BatchItem.Status.ANSWERED)

    answer(30)
    assert _shares(run) == ([64, 64] if postgres else [128])  # 70 left: more than 64 at once
    answer(10)
    assert _shares(run) == [128]  # 60 left: one process asks them all at once
    settings.DECISIONS_BATCH_PROCESSES = 1
    assert _shares(run) == [128]
    settings.DECISIONS_BATCH_PROCESSES = 2
    small, _ = a_run(20, concurrency=128)
    assert _shares(small) == [128]  # 20 states: one process asks them all at once
    narrow, _ = a_run(100, concurrency=64)
    assert _shares(narrow) == [64]  # one process makes up to 64 calls at a time
    settings.DECISIONS_BATCH_PROCESS_CALLS = 32  # a slower host's, say
    assert _shares(narrow) == ([32, 32] if postgres else [64])


@pytest.mark.django_db(transaction=False)
def test_a_run_in_an_open_transaction_is_not_spread(settings):
    run, _ = a_run(40, concurrency=128)
    assert _shares(run) == [128]  # a helper would see none of its rows


def _told_to_stop() -> bool:
    """In a helper: wait (up to a minute) until its parent tells it to stop."""
    try:
        return wait_for(processes.stopping, 60, "its parent to tell it to stop")
    except AssertionError:
        return False


def _wait_until_told(path: str) -> None:
    """In a helper: write to `path` why it stopped waiting: told (its parent stopped or is
    gone) or a minute passed; `path`.started once it has begun."""
    Path(f"{path}.started").touch()
    Path(path).write_text("told" if _told_to_stop() else "a minute passed")


ORPHAN = """
import os, sys, django
django.setup()
from questions.engine import processes
from tests import test_batch_helpers
from tests.helpers import wait_for
helpers = processes.pool(1)
helpers.submit(test_batch_helpers._wait_until_told, sys.argv[1])
started = sys.argv[1] + ".started"
wait_for(lambda: os.path.exists(started), 60, "the helper to have the work in hand")
print(processes.helper_pids()[0], flush=True)
os._exit(0)  # the worker dies: no shutdown, no stop set
"""


@pytest.mark.django_db(transaction=False)
def test_a_helper_whose_worker_died_stops_and_ends(tmp_path):
    told, out = tmp_path / "told", tmp_path / "out"
    with out.open("w") as stdout:
        worker = subprocess.run(
            [sys.executable, "-c", ORPHAN, str(told)],
            cwd=ROOT,
            env={**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"},
            stdout=stdout,
            stderr=subprocess.STDOUT,
            timeout=120,
        )
    assert worker.returncode == 0, out.read_text()
    helper = int(out.read_text().split()[0])
    wait_for(told.exists, 90, "the orphaned helper to stop")
    assert told.read_text() == "told"  # its work saw the worker gone
    wait_for(lambda: process_ended(helper), 90, "the orphaned helper to end")


def _setting(name: str):
    return getattr(__import__("django.conf").conf.settings, name)


def _runs() -> list[int]:
    return list(BatchRun.objects.order_by("pk").values_list("pk", flat=True))


def test_a_helper_runs_with_the_settings_and_the_database_of_its_parent(postgres, settings):
    settings.DECISIONS_TIMEOUT_SECONDS = 12.5
    run, _ = a_run(3, concurrency=1)
    helpers = processes.pool(1)
    assert helpers.submit(_setting, "DECISIONS_TIMEOUT_SECONDS").result(60) == 12.5
    assert helpers.submit(_runs).result(60) == [run.pk]  # the test database, as this process's
    assert not processes.stopping()  # this process is nobody's helper
    helpers.stop.clear()
    told = helpers.submit(_told_to_stop)
    helpers.stop.set()  # what an executor does when it stops (`services.batches._execute`)
    assert told.result(90) is True
