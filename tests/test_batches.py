"""Batch runs against a loopback stand-in with latency and injected 429s: each state answered
once, no duplicate recordings, retries bounded, cancellation, and a run taken over after its
worker died."""

from __future__ import annotations

import json
import signal
import threading
import time
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone

from questions import roles, services
from questions.core import stats
from questions.engine import backends, batches
from questions.models import BatchItem, BatchRun, Decision, DecisionAnswer
from questions.selectors import runs
from questions.services import batch_execution
from tests import factories
from tests.providers import DOC, FlakyProvider, run_cli

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider_factory(provider_factory):
    """conftest's, making `FlakyProvider(**kw)`s with short backoffs."""
    return lambda **kw: provider_factory(
        FlakyProvider(**kw),
        key="k-batch-test",
        DECISIONS_BATCH_BACKOFF_SECONDS=0.01,
        DECISIONS_BATCH_BACKOFF_CAP_SECONDS=0.05,
    )


def a_set(states: int, *, expected=None):
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i:02d}",
            state={"n": i},
            author=writer,
            expected=expected or {},
            tags=["even"] if i % 2 == 0 else [],
        )
    return services.open_draft(qs), writer


def test_every_state_answered_once_with_bounded_concurrency(provider_factory):
    provider = provider_factory(latency=0.05)
    version, writer = a_set(12)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, concurrency=3, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    assert runs.run_counts(run)["answered"] == 12
    assert set(provider.calls.values()) == {1}
    assert provider.max_in_flight <= 3
    assert DecisionAnswer.objects.count() == 12 * len(DOC)
    assert Decision.objects.filter(status=200).count() == 12
    item = run.items.first()
    assert item.decision.sample_state == item.sample_state and item.attempts == 1


def test_429s_are_retried_within_the_attempts_and_recorded(provider_factory):
    provider = provider_factory(fail_first=2)
    version, writer = a_set(5)
    run = services.batch_create(
        version=version,
        backend="typesafe",
        user=writer,
        concurrency=4,
        max_attempts=4,
        enqueue=False,
    )
    run = services.batch_execute(run.pk)
    assert runs.run_counts(run)["answered"] == 5
    assert set(provider.calls.values()) == {3}  # two 429s, then the answer
    assert set(run.items.values_list("attempts", flat=True)) == {3}
    assert Decision.objects.filter(status=429).count() == 10  # every call is recorded
    assert DecisionAnswer.objects.count() == 5 * len(DOC)  # but answered once


def test_retries_never_exceed_the_configured_attempts(provider_factory):
    provider = provider_factory(fail_first=99, fail_status=529)
    version, writer = a_set(3)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, max_attempts=3, enqueue=False
    )
    run = services.batch_execute(run.pk)
    counts = runs.run_counts(run)
    assert (counts["answered"], counts["failed"]) == (0, 3)
    assert set(provider.calls.values()) == {3}
    item = run.items.first()
    assert (item.error_status, item.attempts) == (502, 3)


def test_retry_after_is_honoured(provider_factory):
    provider_factory(fail_first=1, retry_after=0.2)
    version, writer = a_set(2)
    slept: list[float] = []
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(run.pk, sleep=slept.append)
    assert slept == [0.2, 0.2]


def test_exponential_backoff_is_capped(settings):
    settings.DECISIONS_BATCH_BACKOFF_SECONDS = 0.5
    settings.DECISIONS_BATCH_BACKOFF_CAP_SECONDS = 3
    assert [batches.backoff(n, None) for n in (1, 2, 3, 4, 5)] == [0.5, 1, 2, 3, 3]
    assert batches.backoff(1, 7.5) == 7.5
    assert batches.backoff(1, 3600) == batches.RETRY_AFTER_LIMIT


def test_what_is_not_worth_retrying_fails_at_once(provider_factory):
    provider = provider_factory(fail_first=99, fail_status=422)
    version, writer = a_set(2)
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    assert set(provider.calls.values()) == {1}
    assert set(run.items.values_list("error_status", flat=True)) == {422}


def test_an_unreachable_provider_is_retried(provider_factory):
    provider = provider_factory(hang_up_first=2)
    version, writer = a_set(3)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, max_attempts=4, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    assert runs.run_counts(run)["answered"] == 3
    assert set(provider.calls.values()) == {3}  # two hang-ups, then the answer
    assert set(run.items.values_list("attempts", flat=True)) == {3}
    assert Decision.objects.filter(status=502, provider_status_code=None).count() == 6


def test_a_timeout_is_retried(provider_factory, settings):
    seen: dict[str, int] = {}

    def slow_at_first(state, text):
        key = json.dumps(state)
        seen[key] = seen.get(key, 0) + 1
        time.sleep(0.6 if seen[key] == 1 else 0)
        return text

    provider = provider_factory(answer=slow_at_first)
    settings.DECISIONS_TIMEOUT_SECONDS = 0.3
    version, writer = a_set(2)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, max_attempts=2, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert runs.run_counts(run)["answered"] == 2
    assert set(provider.calls.values()) == {2}
    assert Decision.objects.filter(status=504).count() == 2


def test_a_provider_down_for_longer_fails_within_the_attempts(provider_factory):
    provider = provider_factory(hang_up_first=99)
    version, writer = a_set(2)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, max_attempts=3, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert set(provider.calls.values()) == {3}
    assert set(run.items.values_list("error_status", "attempts")) == {(502, 3)}


def _with_a_huge_probability(state, text):
    """A 200 answer whose noul for state n=1 is a 400-digit integer."""
    body = json.loads(text)
    if state == {"n": 1}:
        body["answers"]["urgent"]["noul"] = 10**400
    return json.dumps(body)


def _deeply_nested(state, text):
    return "[" * 100_000 + "]" * 100_000 if state == {"n": 1} else text


@pytest.mark.parametrize("answer", [_with_a_huge_probability, _deeply_nested])
def test_an_answer_that_cannot_be_checked_fails_its_state_alone(provider_factory, answer):
    provider_factory(answer=answer)
    version, writer = a_set(4)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, concurrency=2, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    counts = runs.run_counts(run)
    assert (counts["answered"], counts["failed"]) == (3, 1)
    failed = run.items.get(status="failed")
    assert failed.sample_state.state == {"n": 1}
    assert failed.error_status == 502
    assert "k-batch-test" not in failed.error_detail and '"n"' not in failed.error_detail


def test_an_answer_holding_nul_fails_its_state_alone(provider_factory):
    provider_factory(
        answer=lambda state, text: (
            text.replace('"model": "', '"model": "\\u0000') if state == {"n": 0} else text
        )
    )
    version, writer = a_set(3)
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    failed = run.items.get(status="failed")
    assert (failed.sample_state.state, failed.error_status) == ({"n": 0}, 502)
    assert "NUL" in failed.error_detail
    assert runs.run_counts(run)["answered"] == 2


def test_an_unexpected_exception_fails_its_state_alone_and_is_logged(
    provider_factory, monkeypatch, caplog
):
    provider_factory()
    real_ask = backends.http.TypeSafeBackend.aask

    async def ask(self, asked, client):
        if asked.state == {"n": 2}:
            raise RuntimeError("boom with the state {'n': 2} in it")
        return await real_ask(self, asked, client)

    monkeypatch.setattr(backends.http.TypeSafeBackend, "aask", ask)
    version, writer = a_set(5)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, concurrency=3, enqueue=False
    )
    with caplog.at_level("ERROR", logger="questions.batches"):
        run = services.batch_execute(run.pk)
    assert run.status == "done"
    counts = runs.run_counts(run)
    assert (counts["answered"], counts["failed"]) == (4, 1)
    failed = run.items.get(status="failed")
    assert (failed.sample_state.state, failed.error_status, failed.attempts) == ({"n": 2}, 502, 1)
    assert "RuntimeError" in failed.error_detail and "boom" not in failed.error_detail
    [record] = [r for r in caplog.records if r.name == "questions.batches"]
    assert record.exc_info is not None
    assert "RuntimeError" in record.getMessage() and "'n'" not in record.getMessage()


def test_an_exception_recording_the_outcome_fails_its_state_alone(provider_factory, monkeypatch):
    provider_factory()
    real_rows = batch_execution.decision_rows

    def rows(**kw):
        if kw["ask"].state == {"n": 0}:
            raise ValueError("cannot store this")
        return real_rows(**kw)

    monkeypatch.setattr(batch_execution, "decision_rows", rows)
    version, writer = a_set(3)
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    failed = run.items.get(status="failed")
    assert (failed.sample_state.state, failed.error_status) == ({"n": 0}, 502)
    assert failed.answers is None and "ValueError" in failed.error_detail


def test_tagged_states_only(provider_factory):
    provider_factory()
    version, writer = a_set(6)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, tag="even", enqueue=False
    )
    assert run.items.count() == 3


def test_cancel_stops_new_states_and_keeps_what_was_answered(provider_factory, monkeypatch):
    second_asked, cancel_seen = threading.Event(), threading.Event()
    asked = []

    def hold_the_second(state, text):
        asked.append(state)
        if len(asked) == 2:  # in flight until the run has seen the cancel
            second_asked.set()
            cancel_seen.wait(10)
        return text

    def tick(execution, _tick=batch_execution._Execution.tick):
        if _tick(execution):
            cancel_seen.set()
            return True
        return False

    monkeypatch.setattr(batch_execution._Execution, "tick", tick)

    provider = provider_factory(answer=hold_the_second)
    version, writer = a_set(10)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, concurrency=1, enqueue=False
    )
    done = threading.Event()
    result = {}

    def work():
        result["run"] = services.batch_execute(run.pk)
        done.set()

    thread = threading.Thread(target=work)
    thread.start()
    try:
        assert second_asked.wait(10)
        services.batch_cancel(run=BatchRun.objects.get(pk=run.pk), user=roles.OPERATOR)
        assert done.wait(20)
    finally:
        cancel_seen.set()  # a failed test leaves no call held
    thread.join()
    final = result["run"]
    counts = runs.run_counts(final)
    assert final.status == "cancelled"
    assert counts["answered"] == 2  # the first, and the second that was in flight
    assert counts["cancelled"] == 8
    assert sum(provider.calls.values()) == 2


def test_a_queued_run_cancels_at_once():
    version, writer = a_set(2)
    run = services.batch_create(version=version, backend="recorded", user=writer, enqueue=False)
    run = services.batch_cancel(run=run, user=roles.OPERATOR)
    assert run.status == "cancelled"
    assert services.batch_execute(run.pk) is None


def test_a_cancel_from_a_page_that_still_says_queued_leaves_a_taken_run_to_its_worker():
    """The page read the run as queued; a worker took it before the cancel arrived. The cancel
    is a request to that worker: the run is not ended under it, nor its states cancelled."""
    version, writer = a_set(3)
    seen = services.batch_create(version=version, backend="recorded", user=writer, enqueue=False)
    batch_execution._take(seen.pk)  # a worker takes it: running in the database
    assert seen.status == "queued"  # what the page still holds
    run = services.batch_cancel(run=seen, user=roles.OPERATOR)
    assert (run.status, run.cancel_requested, run.finished_at) == ("running", True, None)
    assert run.items.filter(status="pending").count() == 3


def test_a_run_whose_worker_died_is_taken_over_and_each_state_answered_once(
    provider_factory, settings
):
    provider = provider_factory()
    version, writer = a_set(6)
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    # a worker answered two states, claimed a third, then died
    first_two = list(run.items.values_list("pk", flat=True)[:3])
    for pk in first_two[:2]:
        item = BatchItem.objects.get(pk=pk)
        outcome = services.decision_ask(
            backend="typesafe",
            document=DOC,
            state=item.sample_state.state,
            user=writer,
            sample_state=item.sample_state,
            version=version,
        )
        BatchItem.objects.filter(pk=pk).update(
            status="answered", attempts=1, answers=outcome.checked.answers
        )
    BatchItem.objects.filter(pk=first_two[2]).update(status="running")
    BatchRun.objects.filter(pk=run.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(minutes=5)
    )
    # while its heartbeat is fresh, nobody takes it over: on PostgreSQL another executor may
    # join it (and ask the pending states), but the state it claimed stays its own, and the run
    # is left to it to end
    BatchRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())
    services.batch_execute(run.pk)
    assert BatchRun.objects.get(pk=run.pk).status == "running"
    assert BatchItem.objects.get(pk=first_two[2]).status == "running"
    assert sum(provider.calls.values()) == run.items.filter(status="answered").count()
    BatchRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    run = services.batch_execute(run.pk)
    assert run.status == "done"
    assert runs.run_counts(run)["answered"] == 6
    assert set(provider.calls.values()) == {1}
    assert DecisionAnswer.objects.count() == 6 * len(DOC)


def test_stale_runs_are_queued_again(provider_factory, settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    version, writer = a_set(1)
    run = services.batch_create(version=version, backend="recorded", user=writer, enqueue=False)
    BatchRun.objects.filter(pk=run.pk).update(
        status="running", heartbeat_at=timezone.now() - timedelta(hours=1)
    )
    assert services.batch_resume_if_stale(BatchRun.objects.get(pk=run.pk))


def _a_run_whose_worker_died(version, writer, *, answered=2):
    """A run whose worker answered `answered` states, claimed one more, then died."""
    run = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    items = list(run.items.values_list("pk", flat=True))
    BatchItem.objects.filter(pk__in=items[:answered]).update(
        status="answered", attempts=1, answers={}
    )
    BatchItem.objects.filter(pk=items[answered]).update(status="running")
    BatchRun.objects.filter(pk=run.pk).update(
        status="running",
        started_at=timezone.now() - timedelta(minutes=6),
        heartbeat_at=timezone.now() - timedelta(minutes=5),
    )
    return run


def test_the_idle_sweep_takes_over_a_run_whose_worker_died(provider_factory, settings):
    provider = provider_factory()
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    version, writer = a_set(5)
    run = _a_run_whose_worker_died(version, writer)
    assert services.batch_sweep_stale() == [run.pk]
    run.refresh_from_db()
    assert run.status == "done"
    assert runs.run_counts(run)["answered"] == 5
    assert sum(provider.calls.values()) == 3  # the two answered before are not asked again
    assert services.batch_sweep_stale() == []


def test_the_sweep_leaves_live_runs_alone_and_queues_a_stale_one_once_per_window(settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    settings.TYPESAFE_API_KEY = "k"
    version, writer = a_set(4)
    stale = _a_run_whose_worker_died(version, writer)
    live = _a_run_whose_worker_died(version, writer)
    BatchRun.objects.filter(pk=live.pk).update(heartbeat_at=timezone.now())
    services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    queued: dict[int, float] = {}
    assert services.batch_sweep_stale(queued) == [stale.pk]
    assert services.batch_sweep_stale(queued) == []  # still waiting for a free worker
    assert services.batch_sweep_stale() == [stale.pk]  # another worker queues it too


def test_db_worker_is_the_one_that_takes_over():
    from django.core.management import get_commands

    assert get_commands()["db_worker"] == "questions"


@pytest.fixture
def signals_kept():
    """The worker installs its own SIGINT/SIGTERM/SIGQUIT handlers; put pytest's back, and
    stop a worker that never ends with SIGALRM."""
    kept = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGQUIT)}

    def too_long(*_):
        raise TimeoutError("the worker did not finish")

    signal.signal(signal.SIGALRM, too_long)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, signal.SIG_DFL)
    for s, handler in kept.items():
        signal.signal(s, handler)


def test_a_plain_db_worker_takes_over_a_stale_run_while_idle(
    provider_factory, settings, signals_kept
):
    provider = provider_factory()
    settings.DECISIONS_BATCH_STALE_SECONDS = 1
    version, writer = a_set(4)
    run = _a_run_whose_worker_died(version, writer)
    BatchRun.objects.filter(pk=run.pk).update(heartbeat_at=timezone.now())  # just died
    started = time.monotonic()
    signal.alarm(30)
    call_command(
        "db_worker",
        "--no-reload",
        "--no-startup-delay",
        "--interval",
        "0.1",
        "--max-tasks",
        "1",
        verbosity=0,
    )
    took = time.monotonic() - started
    run.refresh_from_db()
    assert run.status == "done"
    assert runs.run_counts(run)["answered"] == 4
    assert sum(provider.calls.values()) == 2
    assert took >= 1  # it waited for the heartbeat to go stale (SIGALRM bounds the rest)


def test_batch_create_enqueues_a_task_after_the_commit(settings):
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    version, writer = a_set(2)
    run = services.batch_create(version=version, backend="recorded", user=writer)
    run.refresh_from_db()
    assert run.finished  # the immediate backend ran it at the commit
    assert runs.run_counts(run)["failed"] == 2  # nothing was recorded to replay


def test_batch_create_refuses_what_cannot_run(settings):
    settings.TYPESAFE_API_KEY = ""
    version, writer = a_set(0)
    with pytest.raises(services.ServiceError, match="TYPESAFE_API_KEY"):
        services.batch_create(version=version, backend="typesafe", user=writer)
    with pytest.raises(services.ServiceError, match="no sample states"):
        services.batch_create(version=version, backend="recorded", user=writer)


# --- the command line ---------------------------------------------------------------------------


def test_cli_batch_summary_and_gate(provider_factory):
    provider_factory()
    version, _ = a_set(4, expected={"desk": "billing", "urgent": True})
    slug = version.question_set.slug
    code, out, _ = run_cli("batch", "--set", slug, "--json", "--concurrency", "2")
    summary = json.loads(out)
    assert set(summary) == {
        "run",
        "set",
        "version",
        "backend",
        "calibrated",
        "status",
        "states",
        "answered",
        "failed",
        "checked",
        "passed",
        "pass_rate",
        "pass_rate_interval",
        "per_question",
        "misses",
        "duration_ms",
    }
    assert (summary["states"], summary["answered"], summary["failed"]) == (4, 4, 0)
    desk = summary["per_question"]["desk"]
    assert desk["checked"] == 4
    assert desk["pass_rate_interval"] == stats.interval_list(desk["passed"], 4)
    low, high = summary["pass_rate_interval"]
    assert low <= summary["pass_rate"] <= high
    run = BatchRun.objects.get(pk=summary["run"])
    report = runs.run_summary(run)
    assert report["pass_rate"] == summary["pass_rate"]
    assert code == 0
    code, _, _ = run_cli("batch", "--set", slug, "--min-pass-rate", "1.01")
    assert code == 2
    rate = summary["pass_rate"]
    code, _, err = run_cli("batch", "--set", slug, "--min-pass-rate", str(min(1, rate + 0.01)))
    assert code == 1 and "below" in err
    assert f"pass rate {stats.rate_words(summary['passed'], summary['checked'])} is below" in err


def test_cli_batch_exit_1_when_a_state_failed(provider_factory):
    provider_factory(fail_first=99, fail_status=500)
    version, _ = a_set(2)
    code, out, _ = run_cli("batch", "--set", version.question_set.slug, "--json")
    assert code == 1 and json.loads(out)["failed"] == 2 and json.loads(out)["pass_rate"] is None
    assert json.loads(out)["status"] == "failed"


def test_a_run_where_every_state_failed_ends_failed_with_the_commonest_detail(provider_factory):
    provider_factory(fail_first=99, fail_status=500, always_fail=['{"n": 0}'])
    version, writer = a_set(3)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, max_attempts=1, enqueue=False
    )
    BatchItem.objects.filter(run=run, sample_state__sample_state__name="s00").update(
        status="failed", error_status=422, error_detail="Nothing was sent: state: too big"
    )
    run = services.batch_execute(run.pk)
    assert run.status == "failed"
    assert run.detail == "Every state failed: 502: The provider failed."
    assert run.finished_at is not None


def test_a_run_with_one_answer_is_done(provider_factory):
    provider_factory(always_fail=['{"n": 0}', '{"n": 1}'], fail_status=500)
    version, writer = a_set(3)
    run = services.batch_create(
        version=version, backend="typesafe", user=writer, max_attempts=1, enqueue=False
    )
    run = services.batch_execute(run.pk)
    assert (run.status, run.detail) == ("done", "")


# --- re-running the failed states ---------------------------------------------------------------


def _a_finished_run_with_failures(provider_factory, always_fail=('{"n": 1}', '{"n": 3}')):
    provider = provider_factory(always_fail=always_fail, fail_status=500)
    version, writer = a_set(5)
    run = services.batch_create(
        version=version,
        backend="typesafe",
        user=writer,
        concurrency=2,
        threshold=0.7,
        max_attempts=2,
        tag="",
        enqueue=False,
    )
    return provider, services.batch_execute(run.pk), writer


def test_rerun_failed_asks_only_the_failed_revisions_again(provider_factory):
    provider, first, writer = _a_finished_run_with_failures(provider_factory)
    # the states change after the run: the re-run still asks the revisions that failed
    failed_revisions = set(
        first.items.filter(status="failed").values_list("sample_state_id", flat=True)
    )
    for state in first.question_set.sample_states.all():
        services.sample_state_update(
            sample=state,
            name=state.name,
            state={"n": state.state["n"], "edited": True},
            author=writer,
            base_revision=state.revision,
        )
    provider.always_fail.clear()
    rerun = services.batch_rerun_failed(run=first, user=writer, enqueue=False)
    assert rerun.rerun_of == first and rerun.status == "queued"
    assert (rerun.version, rerun.backend, rerun.model) == (first.version, "typesafe", first.model)
    assert (rerun.concurrency, rerun.threshold, rerun.max_attempts) == (2, 0.7, 2)
    assert set(rerun.items.values_list("sample_state_id", flat=True)) == failed_revisions
    rerun = services.batch_execute(rerun.pk)
    assert rerun.status == "done"
    assert runs.run_counts(rerun)["answered"] == 2
    assert list(first.reruns.all()) == [rerun]
    # the old revisions' states, and places of their own: the failed ones led the first run
    for item in rerun.items.select_related("sample_state"):
        assert item.state_id == item.sample_state.sample_state_id
    assert sorted(rerun.items.values_list("place", flat=True)) == [0, 1]
    assert set(first.items.filter(place__lt=2).values_list("status", flat=True)) == {"failed"}


def test_rerun_failed_is_enqueued_like_a_new_run(provider_factory, settings):
    provider, first, writer = _a_finished_run_with_failures(provider_factory)
    provider.always_fail.clear()
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
    rerun = services.batch_rerun_failed(run=first, user=writer)
    rerun.refresh_from_db()
    assert rerun.status == "done"  # the immediate backend ran it at the commit
    assert runs.run_counts(rerun)["answered"] == 2


def test_rerun_failed_refuses_a_run_without_failures_or_not_finished(provider_factory):
    _, first, writer = _a_finished_run_with_failures(provider_factory, always_fail=())
    with pytest.raises(services.Invalid, match="No state failed"):
        services.batch_rerun_failed(run=first, user=writer)
    BatchRun.objects.filter(pk=first.pk).update(status="running")
    first.refresh_from_db()
    with pytest.raises(services.Conflict, match="still running"):
        services.batch_rerun_failed(run=first, user=writer)
    assert BatchRun.objects.count() == 1


def test_rerun_failed_is_for_those_who_run_batches(provider_factory):
    _, first, _ = _a_finished_run_with_failures(provider_factory)
    with pytest.raises(services.NotAllowed):
        services.batch_rerun_failed(run=first, user=factories.user("watcher"))
    assert BatchRun.objects.count() == 1


def test_cli_rerun_failed_runs_in_the_foreground(provider_factory):
    provider, first, _ = _a_finished_run_with_failures(provider_factory)
    code, out, _ = run_cli("batch", "--rerun-failed", str(first.pk), "--json")
    summary = json.loads(out)
    assert code == 1  # the same two states fail again
    assert (summary["states"], summary["failed"]) == (2, 2)
    assert BatchRun.objects.get(pk=summary["run"]).rerun_of == first
    provider.always_fail.clear()
    code, out, _ = run_cli("batch", "--rerun-failed", str(summary["run"]))
    assert code == 0
    assert out.startswith(f"run {summary['run'] + 1}: ") and "2/2 answered, 0 failed" in out


def test_cli_rerun_failed_refusals(provider_factory):
    _, first, _ = _a_finished_run_with_failures(provider_factory, always_fail=())
    code, out, _ = run_cli("batch", "--rerun-failed", "999", "--json")
    assert (code, json.loads(out)["status"]) == (1, 404)
    code, out, _ = run_cli("batch", "--rerun-failed", str(first.pk), "--json")
    assert (code, json.loads(out)["status"]) == (1, 422)
    code, _, err = run_cli("batch", "--rerun-failed", str(first.pk), "--backend", "recorded")
    assert code == 2 and "--backend" in err
