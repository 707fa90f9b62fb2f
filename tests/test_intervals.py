"""Pass rates with their noise and paired verdicts, through the reads that pages and commands
share: hand-made runs whose verdicts are known."""

from __future__ import annotations

import json
import math
import re

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from questions.core import controls, metrics, stats, thresholds
from questions.models import BatchItem, BatchRun
from questions.selectors import runs
from tests import factories
from tests.helpers import ADVICE_DOC, desk, paired_runs
from tests.providers import run_cli

pytestmark = pytest.mark.django_db


def _set():
    writer = factories.author()
    qs = factories.question_set(owner=writer, doc=ADVICE_DOC)
    return qs, qs.versions.get(), writer


def test_paired_verdict_better_when_ten_states_are_fixed_and_none_broken():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 10 + [(True, True)] * 4)
    found = runs.paired_verdicts(before, after)
    assert set(found) == {"overall", "urgent", "desk", "anger"}
    urgent = found["urgent"]
    assert (urgent.n, urgent.better, urgent.worse) == (14, 10, 0)
    assert urgent.p_value == stats.mcnemar(10, 0) == pytest.approx(0.001953, abs=1e-6)
    assert urgent.verdict == stats.BETTER
    assert found["overall"].verdict == stats.BETTER  # desk passes in both: the state is urgent's
    assert found["desk"].verdict == stats.NO_DIFFERENCE and found["desk"].n == 14
    assert found["anger"].n == 0  # nothing labelled: no verdict
    assert found["urgent"].as_dict() == {
        "n": 14,
        "unit": stats.STATE,
        "before": round(4 / 14, 4),
        "after": 1.0,
        "difference": round(10 / 14, 4),
        "difference_interval": list(stats.paired_difference(4, 0, 10, 0)),
        "p_value": urgent.p_value,
        "verdict": "better",
        "better": 10,
        "worse": 0,
    }


def test_paired_verdict_worse_and_the_opposite_direction():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(True, False)] * 8)
    assert runs.paired_verdicts(before, after)["urgent"].verdict == stats.WORSE
    assert runs.paired_verdicts(after, before)["urgent"].verdict == stats.BETTER


def test_no_difference_detected_when_a_few_states_move_both_ways():
    qs, version, writer = _set()
    outcomes = [(False, True)] * 3 + [(True, False)] * 1 + [(True, True)] * 4
    before, after = paired_runs(qs, version, writer, outcomes)
    urgent = runs.paired_verdicts(before, after)["urgent"]
    assert urgent.verdict == stats.NO_DIFFERENCE
    assert urgent.p_value == 0.625
    assert urgent.words() == "no difference detected on 8 states (3 fixed, 1 broken, p = 0.62)"


def test_only_states_both_runs_checked_count():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 6)
    after.items.filter(sample_state__sample_state__name="s000").delete()
    assert runs.paired_verdicts(before, after)["urgent"].n == 5


# --- calibration: MCE and log loss ----------------------------------------------------------------


def test_mce_is_the_largest_bin_gap_and_log_loss_the_mean_negative_log_likelihood():
    # bin 0.9: p .9 twice, one true (gap .4); bin 0.2: p .2 once, false (gap .2)
    found = metrics.calibration([(0.9, True), (0.9, False), (0.2, False)])
    assert found.mce == pytest.approx(0.4)
    assert found.ece == pytest.approx((2 * 0.4 + 0.2) / 3)
    assert found.log_loss == pytest.approx(-(math.log(0.9) + math.log(0.1) + math.log(0.8)) / 3)
    certain_miss = metrics.calibration([(1.0, False)])
    assert certain_miss.log_loss == pytest.approx(-math.log(metrics.LOG_LOSS_EPSILON))
    empty = metrics.calibration([])
    assert (empty.mce, empty.log_loss) == (None, None)


# --- per-tag slices -------------------------------------------------------------------------------


def test_tag_slices_count_the_checked_cases_of_the_states_that_carry_each_tag():
    def case(state, passed):
        noul = {"type": "noul", "noul": 0.9 if passed else 0.1}
        return metrics.Case(state, "urgent", "noul", noul, True)

    slices = metrics.tag_slices(
        [(["vip", "eu"], [case("a", True)]), (["eu"], [case("b", False)]), (["vip"], [])]
    )
    assert [(s.tag, s.states, s.checked, s.passed) for s in slices] == [
        ("eu", 2, 2, 1),
        ("vip", 2, 1, 1),
    ]
    assert slices[0].words == stats.rate_words(1, 2)
    assert slices[0].pass_rate_interval == stats.interval_list(1, 2)


# --- a threshold chosen on part of the labelled states, read on the rest --------------------------


def test_the_held_out_split_is_deterministic_and_holds_about_a_third():
    names = [f"s{i:03d}" for i in range(300)]
    held = [n for n in names if thresholds.held_out(n)]
    assert held == [n for n in names if thresholds.held_out(n)]
    assert 70 <= len(held) <= 130


def test_a_threshold_is_chosen_on_the_choosing_part_and_read_on_the_held_out_one():
    # 40 labelled nouls: the expected-true read 0.8, the expected-false 0.3 — any threshold in
    # (0.3, 0.8] separates them, and the lowest of the best (0.35) is chosen
    cases = [
        metrics.Case(f"s{i:03d}", "urgent", "noul", {"noul": 0.8 if i % 2 else 0.3}, bool(i % 2))
        for i in range(40)
    ]
    found = thresholds.choose_threshold("noul", cases)
    holding = [c for c in cases if thresholds.held_out(c.state)]
    assert (found.choosing, found.holding) == (40 - len(holding), len(holding))
    assert found.chosen == 0.35
    true_held = sum(1 for c in holding if c.expected)
    assert (found.check.right, found.check.kept, found.check.wanted) == (true_held,) * 3
    assert found.check.precision == 1.0
    assert found.check.precision_interval == stats.wilson(true_held, true_held)
    assert found.check.recall_words == stats.rate_words(true_held, true_held)


def test_with_nothing_labelled_no_threshold_is_chosen():
    found = thresholds.choose_threshold("noul", [])
    assert (found.chosen, found.check, found.choosing, found.holding) == (None, None, 0, 0)


# --- compare: the paired verdict and the noise floor ----------------------------------------------


def _repeat_control(qs, version, urgent=(0.9, 0.1)):
    """A finished repeatability control over every state of `qs`: two calls each, `urgent` read
    at the two P(true) given (so its spread is their difference), `desk` the same twice."""
    run = BatchRun.objects.create(
        question_set=qs,
        version=version,
        backend="recorded",
        model="m",
        status="done",
        kind=controls.REPEAT,
        control_count=2,
        finished_at=timezone.now(),
    )
    for state in qs.sample_states.all():
        for variant, p in enumerate(urgent):
            BatchItem.objects.create(
                run=run,
                sample_state=state.current_revision(),
                status="answered",
                variant=variant,
                answers={
                    "urgent": {"type": "noul", "noul": p},
                    "desk": desk("billing", {"billing": 1.0}),
                },
            )
    return run


def test_compare_json_carries_the_paired_verdict_the_pass_rates_and_the_noise_floor():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 10 + [(True, True)] * 2)
    code, out, _ = run_cli(
        "compare", "--set", qs.slug, "--col", f"run:{before.pk}", "--col", f"run:{after.pk}",
        "--json",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert set(data["paired"]) == {"overall", "urgent", "desk", "anger"}
    for verdict in data["paired"].values():
        assert {"n", "before", "after", "p_value", "verdict"} <= set(verdict)
        assert verdict["verdict"] in stats.VERDICTS
    assert data["paired"]["urgent"] | {"p_value": 0} == {
        "n": 12,
        "unit": stats.STATE,
        "before": round(2 / 12, 4),
        "after": 1.0,
        "difference": round(10 / 12, 4),
        "difference_interval": list(stats.paired_difference(2, 0, 10, 0)),
        "p_value": 0,
        "verdict": "better",
        "better": 10,
        "worse": 0,
    }
    first, second = data["columns"]
    assert (first["checked"], first["passed"]) == (24, 14)
    assert first["pass_rate_interval"] == stats.interval_list(14, 24)
    assert second["pass_rate"] == 1.0 and second["pass_rate_interval"] == [
        *stats.interval_list(24, 24)
    ]
    assert first["paired"] is None and second["paired"] == data["paired"]
    assert data["noise_floor"] is None  # no repeatability control yet
    assert all(cell.get("noise") is False for row in data["rows"] for cell in row["cells"])


def test_a_flip_within_the_repeatability_spread_is_marked_noise():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 3 + [(True, True)] * 3)
    control = _repeat_control(qs, version, urgent=(0.9, 0.1))  # the same call moves 0.8
    _, out, _ = run_cli(
        "compare", "--set", qs.slug, "--col", f"run:{before.pk}", "--col", f"run:{after.pk}",
        "--json",
    )  # fmt: skip
    data = json.loads(out)
    assert data["noise_floor"]["run"] == control.pk
    assert data["noise_floor"]["questions"]["urgent"]["largest_spread"] == pytest.approx(0.8)
    flipped = [r["cells"][1] for r in data["rows"] if r["cells"][1]["flipped"]]
    assert len(flipped) == 3 and all(cell["noise"] for cell in flipped)
    # a tighter floor: the same flips (distance 0.8) are no longer within it
    control.delete()
    _repeat_control(qs, version, urgent=(0.9, 0.8))
    data = json.loads(
        run_cli(
            "compare", "--set", qs.slug, "--col", f"run:{before.pk}", "--col", f"run:{after.pk}",
            "--json",
        )[1]
    )  # fmt: skip
    assert not any(r["cells"][1]["noise"] for r in data["rows"])


# --- the pages say it -----------------------------------------------------------------------------


def test_the_compare_page_says_pass_rates_with_intervals_and_the_verdict_in_words():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 3 + [(True, False)] * 1)
    _repeat_control(qs, version)
    client = Client()
    client.force_login(writer)
    url = reverse("set-compare", args=[qs.slug])
    page = client.get(url, {"col": [f"run:{before.pk}", f"run:{after.pk}"]}).content.decode()
    evidence = page.split('id="evidence-heading"')[1]
    assert stats.rate_words(5, 8) in evidence and stats.rate_words(7, 8) in evidence
    urgent = "no difference detected on 4 states (3 fixed, 1 broken, p = 0.62)"
    assert urgent in evidence
    # beside the p-value, the change with its paired interval: never bare points
    change = runs.paired_verdicts(before, after)["urgent"].difference_words()
    assert re.search(r"\+50\.0 points \(−[0-9.]+ to \+[0-9.]+\)", change)
    assert f"{change}</strong> (25% → 75%) — " in evidence
    assert 'class="noise-mark"' in page and "the same call flips" in evidence


def test_the_run_page_shows_intervals_tag_slices_and_calibration_measures():
    qs, version, writer = _set()
    tags = [["vip"], ["vip"], ["eu"], []]
    before, after = paired_runs(qs, version, writer, [(True, False)] * 4, tags=tags)
    client = Client()
    client.force_login(writer)
    page = client.get(reverse("run-detail", args=[after.pk]), {"against": before.pk})
    body = page.content.decode()
    assert stats.rate_words(4, 8) in body  # overall: desk passes, urgent fails, 4 states
    assert stats.rate_words(0, 4) in body  # urgent
    slices = body.split("By tag of the sample states")[1].split("</table>")[0]
    assert "vip" in slices and stats.rate_words(2, 4) in slices  # two states, two checks each
    assert "eu" in slices and stats.rate_words(1, 2) in slices
    assert "MCE" in body and "log loss" in body
    assert "worse on 4 states" not in body  # 4 broken is p = 0.125: too few to tell
    assert "no difference detected on 4 states (0 fixed, 4 broken, p = 0.12)" in body


def test_the_set_list_shows_the_last_pass_rate_with_its_interval():
    qs, version, writer = _set()
    paired_runs(qs, version, writer, [(True, True)] * 3 + [(False, False)])
    client = Client()
    client.force_login(writer)
    assert stats.rate_words(7, 8) in client.get(reverse("set-list")).content.decode()


def test_the_advice_designer_shows_the_held_out_choice_and_its_range():
    qs, _, writer = _set()
    draft = factories.draft(qs)
    paired_runs(qs, draft, writer, [(i % 2 == 0, i % 2 == 0) for i in range(30)])
    client = Client()
    client.force_login(writer)
    page = client.get(f"/sets/{qs.slug}/v{draft.number}/advice/").content.decode()
    assert "held out (about one state in three, by name)" in page
    assert "With their 95 % intervals" not in page  # no advice stored: no point to range


def test_compare_text_says_each_run_pass_rate_and_the_paired_verdict():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 10)
    _repeat_control(qs, version)
    code, out, _ = run_cli(
        "compare", "--set", qs.slug, "--col", f"run:{before.pk}", "--col", f"run:{after.pk}"
    )
    assert code == 0
    assert f"overall {stats.rate_words(10, 20)}" in out
    assert f"overall {stats.rate_words(20, 20)}" in out
    overall = runs.paired_verdicts(before, after)["overall"]
    assert f"against [1], overall: {overall.difference_words()} — " in out
    assert "better on 20 question–state pairs (10 fixed, 0 broken, p = 0.002)" in out
    assert "*0.80~" in out  # each flip of urgent is within the repeat's spread of 0.8


def test_the_run_page_marks_a_change_within_the_noise_floor():
    qs, version, writer = _set()
    before, after = paired_runs(qs, version, writer, [(False, True)] * 2 + [(True, True)])
    client = Client()
    client.force_login(writer)
    url = reverse("run-detail", args=[after.pk])
    page = client.get(url, {"against": before.pk}).content.decode()
    assert 'class="noise-mark"' not in page  # no repeatability control: nothing read as noise
    _repeat_control(qs, version, urgent=(0.9, 0.1))
    page = client.get(url, {"against": before.pk}).content.decode()
    changes = page.split('<table class="compact changes">')[1].split("</table>")[0]
    assert changes.count('class="noise-mark"') == 2  # both fixes moved 0.8, as a repeat does
    assert "the noise floor of the repeatability control" in page
