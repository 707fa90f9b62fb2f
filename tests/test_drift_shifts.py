"""Drift shifts: a decision that stayed while the probability it rests on (the chosen option's
or level's, or P(true)) moved past the noise floor — the version's repeatability spread on the
baseline's model where a repeat run gives one, else `controls.SHIFT_NOISE_FLOOR`; and
`questions drift --max-shift`'s exit codes, JSON and the run page."""

from __future__ import annotations

import json

import pytest

from questions import services
from questions.core import controls, metrics
from questions.models import BatchRun
from questions.services import controls as control_services
from tests import factories
from tests.providers import DOC, TOPICS, Provider, reads_the_words, run_cli


def choice(chosen: str, p: float) -> dict:
    rest = round((1 - p) / 2, 2)
    probabilities = {"billing": rest, "tech": rest, "other": rest} | {chosen: p}
    return {"type": "choice", "choice": chosen, "probabilities": probabilities, "confidence": 0.8}


def noul(p: float) -> dict:
    return {"type": "noul", "noul": p}


def score(s: float, probabilities: list[float]) -> dict:
    return {
        "type": "score",
        "score": s,
        "probabilities": {str(i): p for i, p in enumerate(probabilities)},
    }


def cases(question: str, qtype: str, answers: dict[str, dict]) -> list[metrics.Case]:
    return [metrics.Case(state, question, qtype, a) for state, a in answers.items()]


def test_a_probability_past_the_floor_without_a_flip_is_a_shift():
    before = cases(
        "desk",
        "choice",
        {"a": choice("billing", 0.9), "b": choice("billing", 0.9), "c": choice("tech", 0.6)},
    )
    after = cases(
        "desk",
        "choice",
        {"a": choice("billing", 0.6), "b": choice("billing", 0.85), "c": choice("billing", 0.6)},
    )
    found = controls.drift(before, after)
    desk = found.questions["desk"]
    assert desk.flips == ["c"]  # a flip is never counted as a shift too
    assert desk.shifts == [controls.Shift("a", 0.9, 0.6)]  # b moved 0.05: within the floor
    assert (desk.noise_floor, desk.floor_source) == (controls.SHIFT_NOISE_FLOOR, "default")
    assert (found.shifts, found.compared, found.shift_rate) == (1, 3, pytest.approx(1 / 3))


def test_noul_moves_by_p_true_and_a_move_of_exactly_the_floor_is_not_past_it():
    before = cases("urgent", "noul", {"a": noul(0.7), "b": noul(0.6), "c": noul(0.3)})
    after = cases("urgent", "noul", {"a": noul(0.8), "b": noul(0.95), "c": noul(0.1)})
    urgent = controls.drift(before, after).questions["urgent"]
    assert [s.state for s in urgent.shifts] == ["b", "c"]
    assert urgent.flips == []


def test_a_score_moves_by_its_nearest_levels_probability():
    before = cases("level", "score", {"a": score(1.0, [0.1, 0.8, 0.1])})
    after = cases("level", "score", {"a": score(1.3, [0.0, 0.7, 0.3]), "b": score(0, [1, 0, 0])})
    level = controls.drift(before, after).questions["level"]
    assert level.shifts == [] and level.compared == 1  # 0.8 → 0.7 is the floor, not past it
    after = cases("level", "score", {"a": score(1.4, [0.0, 0.6, 0.4])})
    assert controls.drift(before, after).questions["level"].shifts == [
        controls.Shift("a", 0.8, 0.6)
    ]


def test_a_repeatability_spread_is_the_floor_where_there_is_one():
    repeat = controls.control_report(
        controls.REPEAT,
        {"urgent": "noul", "desk": "choice"},
        [
            controls.Answered("a", 0, {"urgent": noul(0.6), "desk": choice("tech", 0.7)}, {}),
            controls.Answered("a", 1, {"urgent": noul(0.9), "desk": choice("tech", 0.7)}, {}),
        ],
    )
    floors = controls.noise_floors(repeat, "repeat run 7")
    assert floors == {"urgent": (pytest.approx(0.3), "repeat run 7"), "desk": (0.0, "repeat run 7")}
    before = cases("urgent", "noul", {"a": noul(0.6)}) + cases(
        "desk", "choice", {"a": choice("tech", 0.7)}
    )
    after = cases("urgent", "noul", {"a": noul(0.85)}) + cases(
        "desk", "choice", {"a": choice("tech", 0.75)}
    )
    found = controls.drift(before, after, floors=floors)
    assert found.questions["urgent"].shifts == []  # 0.25 is within what the model wanders
    assert [s.state for s in found.questions["desk"].shifts] == ["a"]  # 0.05 past a floor of 0
    assert found.questions["desk"].floor_source == "repeat run 7"


# --- the command line and the run page, against a loopback provider ----------------------------


@pytest.fixture
def provider(provider_factory):
    return lambda answer: provider_factory(Provider(answer), key="k-shift-test")


def labelled_set():
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
    services.version_submit(version=version, author=writer)
    version = services.version_approve(
        confirm_weak_evidence=True,
        version=version,
        reviewer=factories.reviewer(),
        label="production",
    )
    return version, writer


def drift(slug: str, *more: str) -> tuple[int, str, str]:
    return run_cli("drift", "--set", slug, "--label", "production", "--model", "m-new", *more)


@pytest.mark.django_db(transaction=True)
def test_max_shift_gates_on_the_share_of_shifted_answers(provider, client):
    wobble = {"on": False, "calls": {}}

    def surer_when_new(body):  # m-new: the same decisions, an urgent state surer (0.8 → 0.95)
        out = reads_the_words(body)
        state = json.dumps(body["state"], sort_keys=True)
        if body["state"]["urgent"] and body.get("model") == "m-new":
            out["answers"]["urgent"]["noul"] = 0.95
        elif body["state"]["urgent"] and wobble["on"]:  # m-old asked again: 0.8, then 0.6
            n = wobble["calls"][state] = wobble["calls"].get(state, 0) + 1
            out["answers"]["urgent"]["noul"] = 0.8 if n % 2 else 0.6
        return out

    provider(surer_when_new)
    version, writer = labelled_set()
    slug = version.question_set.slug
    base = services.batch_create(
        version=version, backend="typesafe", user=writer, model="m-old", enqueue=False
    )
    services.batch_execute(base.pk)
    code, out, err = drift(slug, "--json")
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["flips"], summary["shifts"], summary["compared"]) == (0, 2, 8)
    assert summary["shift_rate"] == 0.25
    urgent = summary["per_question"]["urgent"]
    assert urgent["shifts"] == 2 and urgent["noise_floor"] == controls.SHIFT_NOISE_FLOOR
    assert urgent["shifted_states"] == [
        {"state": "s0", "before": 0.8, "after": 0.95},
        {"state": "s2", "before": 0.8, "after": 0.95},
    ]
    assert summary["per_question"]["desk"]["shifts"] == 0
    code, out, err = drift(slug, "--max-shift", "0.2")
    assert code == 1 and "shifted share 25.0% is above 20.0%" in err
    assert "urgent: 0/4 flipped, 2 shifted past 0.10 (default): s0 0.80→0.95" in out
    assert drift(slug, "--max-shift", "0.3")[0] == 0
    assert drift(slug, "--max-shift", "1.5")[0] == 2
    # a repeatability run of m-old that wanders 0.2 makes that the floor: nothing shifted
    wobble["on"] = True
    repeat = control_services.control_create(
        version=version,
        backend="typesafe",
        user=writer,
        kind=controls.REPEAT,
        count=2,
        model="m-old",
        enqueue=False,
    )
    services.batch_execute(repeat.pk)
    code, out, err = drift(slug, "--max-shift", "0", "--json")
    summary = json.loads(out)
    assert code == 0, err
    assert summary["shifts"] == 0
    assert summary["per_question"]["urgent"]["noise_floor"] == pytest.approx(0.2)
    assert summary["per_question"]["urgent"]["noise_floor_source"] == f"repeat run {repeat.pk}"
    first = BatchRun.objects.filter(kind="drift").order_by("pk").first()
    client.force_login(writer)
    page = client.get(f"/runs/{first.pk}/").content.decode()
    assert "0 of 8 answers flipped (0%) · 2 shifted (25%)" in page
    assert "s0 0.80 → 0.95, s2 0.80 → 0.95" in page
