"""Control and drift runs asked live through the batch engine against loopback providers: the
variants that went out, what each report found, the CLI's exit codes and JSON, the run page's
section, and compare."""

from __future__ import annotations

import json
import threading

import pytest

from questions import services
from questions.core import controls, stats
from questions.models import BatchItem, BatchRun, Decision
from questions.selectors import control_reports, runs
from questions.services import controls as control_services
from tests import factories
from tests.providers import (
    DOC,
    TOPICS,
    Provider,
    ignores_the_words,
    reads_the_words,
    run_cli,
    takes_the_first,
)

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(provider_factory):
    return lambda answer: provider_factory(Provider(answer), key="k-control-test")


def a_set(*, approved_label: str | None = None):
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=DOC)
    for i, (option, topic) in enumerate([*TOPICS.items(), ("billing", "money")]):
        services.sample_state_create(
            question_set=qs,
            name=f"s{i}",
            state={"topic": topic, "urgent": i % 2 == 0},
            author=writer,
            expected={"desk": option, "urgent": i % 2 == 0},
        )
    version = services.open_draft(qs)
    if approved_label:
        services.version_submit(version=version, author=writer)
        checker = factories.reviewer()
        version = services.version_approve(
            confirm_weak_evidence=True, version=version, reviewer=checker, label=approved_label
        )
    return version, writer


def run_control(version, user, kind, count, seed=0):
    run = control_services.control_create(
        version=version,
        backend="typesafe",
        user=user,
        kind=kind,
        count=count,
        seed=seed,
        enqueue=False,
    )
    return services.batch_execute(run.pk)


def test_a_shuffle_control_asks_each_state_as_written_and_shuffled(provider):
    p = provider(reads_the_words)
    version, writer = a_set()
    run = run_control(version, writer, controls.SHUFFLE, 3, seed=5)
    assert run.status == "done" and run.kind == "shuffle"
    assert run.items.count() == 16 and run.items.filter(status="answered").count() == 16
    assert Decision.objects.filter(version=version).count() == 16  # every call recorded
    sent = [r["body"]["questions"] for r in p.requests]
    as_written = [q for q in sent if q["desk"]["criteria"] == DOC["desk"]["criteria"]]
    assert len(as_written) == 4
    for q in sent:
        assert list(q["desk"]["criteria"]) == list(DOC["desk"]["criteria"])  # options in order
        assert sorted(q["desk"]["criteria"].values()) == sorted(TOPICS.values())
        assert q["urgent"] == DOC["urgent"]
    report = control_reports.control_report(run)
    assert (report["desk"].real_pass_rate, report["desk"].floor) == (1.0, 0.0)
    assert report["desk"].no_signal is False
    assert report["urgent"].varied is False


def test_words_that_carry_no_signal_are_flagged_and_the_cli_exits_1(provider):
    provider(ignores_the_words)
    version, _ = a_set()
    slug = version.question_set.slug
    code, out, err = run_cli(
        "controls", "--set", slug, "--backend", "typesafe", "--shuffle", "2", "--json"
    )
    summary = json.loads(out)
    assert code == 1
    assert summary["control"]["no_signal"] == ["desk"]
    assert summary["states"] == 4 and summary["control"]["calls"] == 12
    desk = summary["control"]["questions"]["desk"]
    assert desk["real_pass_rate"] == desk["floor"] == 0.5
    assert desk["real_pass_rate_interval"] == stats.interval_list(2, 4)
    assert desk["floor_interval"] == stats.interval_list(4, 8)
    code, out, err = run_cli("controls", "--set", slug, "--backend", "typesafe", "--shuffle", "2")
    assert code == 1 and controls.NO_SIGNAL in out and "desk" in err


def test_a_shuffle_control_that_passes_exits_0(provider):
    provider(reads_the_words)
    version, _ = a_set()
    code, out, _ = run_cli(
        "controls", "--set", version.question_set.slug, "--backend", "typesafe", "--shuffle", "1"
    )
    # 4 of 4 real answers pass, 0 of 4 shuffled ones: each rate with its 95 % interval and n
    assert code == 0 and (
        f"real pass rate {stats.rate_words(4, 4)}, shuffled floor {stats.rate_words(0, 4)}" in out
    )
    assert "real pass rate 100% (51–100%, n = 4), shuffled floor 0% (0–49%, n = 4)" in out


def test_order_sensitivity_finds_a_model_that_takes_the_first_option(provider):
    provider(takes_the_first)
    version, _ = a_set()
    code, out, _ = run_cli(
        "controls",
        "--set",
        version.question_set.slug,
        "--backend",
        "typesafe",
        "--orders",
        "3",
        "--seed",
        "2",
        "--json",
    )
    desk = json.loads(out)["control"]["questions"]["desk"]
    assert code == 0
    assert desk["flip_rate"] > 0 and desk["largest_distance"] == pytest.approx(0.85)


def test_order_sensitivity_of_a_model_that_reads_the_words_is_nil(provider):
    provider(reads_the_words)
    version, writer = a_set()
    run = run_control(version, writer, controls.ORDERS, 3)
    desk = control_reports.control_report(run)["desk"]
    assert (desk.flips, desk.compared, desk.largest_distance) == (0, 12, 0.0)


def test_repeatability_measures_a_model_that_answers_differently_each_call(provider):
    calls = iter(range(10**6))
    lock = threading.Lock()

    def jittery(body):
        out = reads_the_words(body)
        with lock:
            n = next(calls)
        out["answers"]["urgent"]["noul"] = round(0.45 + 0.1 * (n % 2), 2)
        return out

    provider(jittery)
    version, writer = a_set()
    run = run_control(version, writer, controls.REPEAT, 3)
    assert run.items.count() == 12
    report = control_reports.control_report(run)
    assert report["urgent"].largest_spread == pytest.approx(0.1)
    assert report["urgent"].flips > 0
    assert report["desk"].flips == 0 and report["desk"].largest_spread == 0


def test_a_control_refuses_a_replay_bad_counts_and_a_viewer(provider):
    version, writer = a_set()
    with pytest.raises(services.Invalid, match="replays recordings"):
        control_services.control_create(
            version=version, backend="recorded", user=writer, kind="shuffle", count=2
        )
    with pytest.raises(services.Invalid, match="1 to 20"):
        control_services.control_create(
            version=version, backend="typesafe", user=writer, kind="shuffle", count=0
        )
    with pytest.raises(services.Invalid, match="2 to 20"):
        control_services.control_create(
            version=version, backend="typesafe", user=writer, kind="repeat", count=1
        )
    with pytest.raises(services.NotAllowed):
        control_services.control_create(
            version=version, backend="typesafe", user=factories.user("v"), kind="repeat", count=2
        )
    assert not BatchRun.objects.exists()


def test_a_control_is_not_re_run_in_part(provider):
    provider(reads_the_words)
    version, writer = a_set()
    run = run_control(version, writer, controls.SHUFFLE, 1)
    BatchItem.objects.filter(run=run, variant=1).update(status="failed")
    with pytest.raises(services.Invalid, match="shuffle run"):
        services.batch_rerun_failed(run=run, user=writer)


def test_the_run_page_and_the_run_list_show_a_shuffle_control(provider, client):
    provider(ignores_the_words)
    version, writer = a_set()
    run = run_control(version, writer, controls.SHUFFLE, 2)
    client.force_login(writer)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert "Shuffle control" in page and controls.NO_SIGNAL in page
    assert "shuffled floor" in page.lower()
    desk = control_reports.control_report(run)["desk"]
    assert stats.rate_words(desk.real_passed, desk.real_checked) in page
    assert stats.rate_words(desk.floor_passed, desk.floor_checked) in page
    listing = client.get(version.question_set.get_absolute_url()).content.decode()
    assert "shuffle control" in listing


def test_compare_reads_a_controls_real_calls(provider):
    provider(reads_the_words)  # right as written, wrong when shuffled
    version, writer = a_set()
    run = run_control(version, writer, controls.SHUFFLE, 2)
    code, out, _ = run_cli(
        "compare", "--set", version.question_set.slug, "--col", f"run:{run.pk}", "--json"
    )
    rows = json.loads(out)["rows"]
    assert code == 0 and len(rows) == 8
    assert all(row["cells"][0]["passed"] for row in rows)


def test_drift_sets_a_new_model_against_the_last_run_on_the_approved_model(provider, client):
    def by_model(body):  # the new model reads the words; the old took the first option
        return (reads_the_words if body.get("model") == "m-new" else takes_the_first)(body)

    provider(by_model)
    version, writer = a_set(approved_label="production")
    slug = version.question_set.slug
    code, _, err = run_cli("drift", "--set", slug, "--label", "production", "--model", "m-new")
    assert code == 1 and "run it on the approved model first" in err
    base = services.batch_create(
        version=version, backend="typesafe", user=writer, model="m-old", enqueue=False
    )
    services.batch_execute(base.pk)
    code, out, _ = run_cli(
        "drift", "--set", slug, "--label", "production", "--model", "m-new", "--json"
    )
    summary = json.loads(out)
    assert code == 0
    assert summary["baseline"] == {
        "run": base.pk,
        "model": "m-old",
        "checked": 8,
        "passed": 6,
        "pass_rate": 0.75,
        "pass_rate_interval": stats.interval_list(6, 8),
    }
    assert summary["pass_rate_interval"] == stats.interval_list(summary["passed"], 8)
    desk = summary["per_question"]["desk"]
    assert desk["pass_rate_before_interval"] and desk["pass_rate_after_interval"]
    # the two states the old model got wrong are fixed, none broken: too few to tell
    assert summary["paired"]["desk"] | {"p_value": 0} == {
        "n": 4,
        "unit": stats.STATE,
        "before": 0.5,
        "after": 1.0,
        "difference": 0.5,
        "difference_interval": list(stats.paired_difference(2, 0, 2, 0)),
        "p_value": 0,
        "verdict": "no_difference_detected",
        "better": 2,
        "worse": 0,
    }
    assert set(summary["paired"]) == {"overall", *summary["per_question"]}
    assert summary["per_question"]["desk"]["flipped_states"] == ["s1", "s2"]
    assert summary["flips"] == 2 and summary["compared"] == 8 and summary["flip_rate"] == 0.25
    assert summary["pass_rate_delta"] == pytest.approx(0.25)
    assert summary["calibration"]["choice_brier"]["delta"] < 0
    assert {"choice_ece", "choice_mce", "choice_log_loss", "noul_mce"} <= set(
        summary["calibration"]
    )
    assert summary["calibration"]["choice_log_loss"]["after"] is not None
    code, _, err = run_cli(
        "drift",
        "--set",
        slug,
        "--label",
        "production",
        "--model",
        "m-new",
        "--max-flip-rate",
        "0.2",
    )
    assert code == 1 and "above 20.0%" in err
    code, _, _ = run_cli(
        "drift",
        "--set",
        slug,
        "--label",
        "production",
        "--model",
        "m-new",
        "--max-flip-rate",
        "0.3",
    )
    assert code == 0
    code, _, _ = run_cli(
        "drift",
        "--set",
        slug,
        "--label",
        "production",
        "--model",
        "m-new",
        "--max-flip-rate",
        "1.5",
    )
    assert code == 2
    drift_run = BatchRun.objects.filter(kind="drift").first()
    client.force_login(writer)
    page = client.get(f"/runs/{drift_run.pk}/").content.decode()
    assert "Model drift" in page and "m-old" in page and "s2" in page
    # the pass rates with their intervals, and the paired verdict in words
    assert f"pass rate {stats.rate_words(6, 8)} → {stats.rate_words(8, 8)}" in page
    assert 'Paired, overall: <span class="paired-overall">' in page
    assert "no difference detected on 8 question–state pairs (2 fixed, 0 broken, p = 0.5)" in page


def test_drift_refuses_a_version_that_is_not_approved(provider):
    version, writer = a_set()
    with pytest.raises(services.Invalid, match="not approved"):
        control_services.drift_create(version=version, model="m-new", user=writer)
    assert not BatchRun.objects.exists()


def test_the_controls_page_starts_a_control_and_a_drift_run(provider, client, settings):
    provider(reads_the_words)
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.dummy.DummyBackend"}}
    version, writer = a_set(approved_label="production")
    slug = version.question_set.slug
    client.force_login(writer)
    page = client.get(f"/sets/{slug}/controls/")
    assert page.status_code == 200 and "Start a control" in page.content.decode()
    response = client.post(
        f"/sets/{slug}/controls/start/",
        {
            "version": version.number,
            "kind": "orders",
            "count": "2",
            "seed": "9",
            "backend": "typesafe",
        },
    )
    run = BatchRun.objects.get(kind="orders")
    assert response.status_code == 302 and response["Location"] == f"/runs/{run.pk}/"
    assert (run.control_count, run.control_seed, run.items.count()) == (2, 9, 12)
    response = client.post(f"/sets/{slug}/drift/start/", {"label": "production", "model": "m-new"})
    assert response.status_code == 409 and not BatchRun.objects.filter(kind="drift").exists()
    body = response.content.decode()
    assert "Nothing was started." in body and "run it on the approved model first" in body
    base = services.batch_create(
        version=version, backend="typesafe", user=writer, model="m-old", enqueue=False
    )
    services.batch_execute(base.pk)
    response = client.post(f"/sets/{slug}/drift/start/", {"label": "production", "model": "m-new"})
    drift_run = BatchRun.objects.get(kind="drift")
    assert response["Location"] == f"/runs/{drift_run.pk}/" and drift_run.baseline == base


@pytest.mark.parametrize(
    "form",
    [
        {"version": "x", "kind": "shuffle", "count": "2", "backend": "typesafe"},
        {"version": "1", "kind": "jiggle", "count": "2", "backend": "typesafe"},
        {"version": "1", "kind": "shuffle", "count": "99", "backend": "typesafe"},
        {
            "version": "1",
            "kind": "shuffle",
            "count": "2",
            "seed": "99999999999",
            "backend": "typesafe",
        },
        {"version": "1", "kind": "shuffle", "count": "2", "backend": "recorded"},
        {"version": "1", "kind": "shuffle", "count": "2", "backend": "nope"},
    ],
)
def test_bad_control_input_says_what_is_wrong_and_starts_nothing(provider, client, form):
    provider(reads_the_words)
    version, writer = a_set()
    client.force_login(writer)
    response = client.post(f"/sets/{version.question_set.slug}/controls/start/", form)
    body = response.content.decode()
    assert response.status_code == 422 and not BatchRun.objects.exists()
    assert 'class="message error"' in body and "Nothing was started." in body
    assert f'name="count" min="1" max="20" value="{form["count"]}"' in body  # kept as sent


def test_a_viewer_starts_no_control(provider, client):
    version, _ = a_set()
    client.force_login(factories.user("viewer"))
    response = client.post(
        f"/sets/{version.question_set.slug}/controls/start/",
        {"version": "1", "kind": "shuffle", "count": "2", "backend": "typesafe"},
    )
    assert response.status_code == 403 and not BatchRun.objects.exists()


def test_a_control_is_never_taken_for_the_latest_run(provider, client):
    """Compare's default columns, the review's evidence and the advice designer's default take
    plain runs: a control's shuffled calls say nothing about the version as written."""

    provider(reads_the_words)
    version, writer = a_set()
    first = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(first.pk)
    second = services.batch_create(version=version, backend="typesafe", user=writer, enqueue=False)
    services.batch_execute(second.pk)
    control = control_services.control_create(
        version=version, backend="typesafe", user=writer, kind="shuffle", count=2, seed=1
    )
    services.batch_execute(control.pk)
    assert runs.latest_run(version) == second
    client.force_login(writer)
    compare = client.get(f"/sets/{version.question_set.slug}/compare/")
    assert compare.status_code == 200
    heads = [h.split("</th>")[0] for h in compare.content.decode().split('class="col-head"')[1:]]
    assert any(f"run {second.pk} ·" in h for h in heads)
    assert not any(f"run {control.pk} ·" in h for h in heads)
    advice = client.get(f"/sets/{version.question_set.slug}/v{version.number}/advice/")
    assert f'value="{control.pk}" selected' not in advice.content.decode()
