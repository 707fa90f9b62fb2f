"""Prove: a candidate wording asked beside its version about the held-out labelled states only,
judged on the pairs, at a loopback provider whose answers follow the words it is sent — so a
candidate can be truly better, truly worse or no different; and the held-out split it rests
on: fixed per set, stable as states are added, its share a reviewer's, range-checked."""

from __future__ import annotations

import json

import pytest
from django.urls import reverse

from questions import roles, services
from questions.core import holdout, proof
from questions.models import Decision
from questions.selectors.holdout import holdout_ids, holdout_split
from questions.services import proofs
from tests import factories
from tests.providers import KEY, Provider, run_cli

pytestmark = pytest.mark.django_db

#: what each desk's description says; a state says one of them
SAYS = {"billing": "money", "tech": "bugs", "other": "anything else"}
DOC = {
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    "desk": {"type": "choice", "instructions": "Which desk?", "criteria": dict(SAYS)},
}
#: the instructions of each candidate, and how the provider reads them
BETTER = "Which desk? Be sharp."  # reads every state by its words
WORSE = "Which desk? Be blunt."  # never picks the option the words name
SAME = "Which desk, please?"  # reads the words as the version does: on even states only


def desk_answer(question: dict, state: dict) -> dict:
    """The option whose description is what the state says (its words), read sharply, bluntly
    or as written (right on even states only). With the descriptions shuffled, the words name
    another option: the shuffled floor."""
    criteria = question["criteria"]
    by_words = next((o for o, said in criteria.items() if said == state["says"]), "other")
    wrong = next(o for o in criteria if o != by_words)
    words = question["instructions"]
    if "sharp" in words:
        pick = by_words
    elif "blunt" in words:
        pick = wrong
    else:
        pick = by_words if state["n"] % 2 == 0 else wrong
    rest = round(0.2 / (len(criteria) - 1), 4)
    p = {o: 0.8 if o == pick else rest for o in criteria}
    return {"type": "choice", "choice": pick, "probabilities": p, "confidence": 0.7}


def reply(body: dict) -> dict:
    answers = {
        qid: desk_answer(q, body["state"])
        if q["type"] == "choice"
        else {"type": "noul", "noul": 0.7}
        for qid, q in body["questions"].items()
    }
    return {"model": "judge-1", "answers": answers, "usage": {"input_tokens": 10}}


@pytest.fixture
def provider(provider_factory):
    return provider_factory(Provider(default=reply), key=KEY)


def a_set(n: int, *, slug: str = "desks", share: int | None = None):
    writer = factories.author()
    qs = factories.question_set(slug, owner=writer, doc=DOC)
    if share is not None:
        proofs.holdout_configure(question_set=qs, user=roles.OPERATOR, share=share)
    add_states(qs, writer, range(n))
    return qs, writer


def add_states(qs, writer, numbers) -> None:
    for i in numbers:
        topic = list(SAYS)[i % 3]
        services.sample_state_create(
            question_set=qs,
            name=f"s{i:03d}",
            state={"n": i, "says": SAYS[topic]},
            author=writer,
            expected={"desk": topic, "urgent": True},
        )


def candidate(tmp_path, words: str, name: str = "candidate.json") -> str:
    document = json.loads(json.dumps(DOC))
    document["desk"]["instructions"] = words
    path = tmp_path / name
    path.write_text(json.dumps(document))
    return str(path)


def prove(*args: str) -> tuple[int, dict]:
    code, out, _err = run_cli("prove", "--set", "desks", "--version", "1", "--json", *args)
    return code, json.loads(out)


# --- the verdicts and their exit codes -----------------------------------------------------------


def test_a_truly_better_candidate_is_proven_better_on_the_held_out_states_only(provider, tmp_path):
    qs, _ = a_set(90)
    held_out = qs.sample_states.filter(pk__in=holdout_ids(qs))
    held_out_states = {json.dumps(s.state, sort_keys=True) for s in held_out}
    code, found = prove("--candidate", candidate(tmp_path, BETTER))
    assert code == 0, found
    desk = found["questions"]["desk"]
    assert found["verdict"] == desk["verdict"] == proof.BETTER
    assert desk["n"] == found["states"] == len(held_out) > 0
    assert desk["version"]["pass_rate"] < desk["candidate"]["pass_rate"] == 1.0
    assert desk["difference_interval"][0] > 0 and desk["down"] == 0 and desk["up"] > 0
    assert desk["mcnemar_p"] < 0.05
    assert desk["shuffled_floor"]["no_signal"] is False  # the words carry the signal
    assert found["unchanged"] == ["urgent"] and "urgent" not in found["questions"]
    # only the held-out states were asked, only the changed question, 3 calls each
    asked = {json.dumps(r["body"]["state"], sort_keys=True) for r in provider.requests}
    assert asked == held_out_states
    assert all(set(r["body"]["questions"]) == {"desk"} for r in provider.requests)
    assert len(provider.requests) == found["calls"] == 3 * len(held_out)
    assert Decision.objects.count() == found["calls"]  # every call is evidence on record


def test_a_truly_worse_candidate_exits_1(provider, tmp_path):
    a_set(90)
    code, found = prove("--candidate", candidate(tmp_path, WORSE))
    assert code == 1
    desk = found["questions"]["desk"]
    assert desk["verdict"] == found["verdict"] == proof.WORSE
    assert desk["difference_interval"][1] < 0 and desk["up"] == 0 and desk["down"] > 0
    assert desk["candidate"]["pass_rate"] == 0.0


def test_a_candidate_that_makes_no_difference_is_not_proven_and_exits_3(provider, tmp_path):
    a_set(90)
    code, found = prove("--candidate", candidate(tmp_path, SAME))
    assert code == 3
    desk = found["questions"]["desk"]
    assert desk["verdict"] == found["verdict"] == proof.NOT_PROVEN
    low, high = desk["difference_interval"]
    assert low < 0 < high and desk["up"] == desk["down"] == 0 and desk["mcnemar_p"] == 1.0


def test_the_text_says_every_figure_in_words(provider, tmp_path):
    a_set(90)
    path = candidate(tmp_path, BETTER)
    code, out, err = run_cli("prove", "--set", "desks", "--version", "1", "--candidate", path)
    assert code == 0, err
    assert "held-out labelled state" in err and "calls through typesafe" in err  # the plan
    assert "desk (choice): better" in out and "verdict: better" in out
    assert "v1 " in out and "candidate " in out and "n = " in out and "points (" in out
    assert " up, 0 down, McNemar p = " in out and "shuffled floor: " in out
    assert "unchanged, not judged: urgent" in out


def test_a_proof_on_fewer_than_20_held_out_states_says_so(provider, tmp_path):
    a_set(10, share=90)
    path = candidate(tmp_path, BETTER)
    _, found = prove("--candidate", path)
    desk = found["questions"]["desk"]
    assert desk["few_states"] is True and 0 < desk["n"] < proof.FEW_STATES
    assert "fewer than 20" in desk["few_states_words"]
    _, out, _ = run_cli("prove", "--set", "desks", "--version", "1", "--candidate", path)
    assert "fewer than 20" in out and "Label more states" in out


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("{not json", "is not JSON"),
        (json.dumps({"desk": {"type": "choice", "criteria": {}}}), "is no valid question set"),
        (json.dumps(DOC), "rewords no question of v1"),
    ],
    ids=["not JSON", "breaks the contract", "changes nothing"],
)
def test_bad_input_exits_2_with_words_and_asks_nothing(provider, tmp_path, content, words):
    a_set(12)
    path = tmp_path / "bad.json"
    path.write_text(content)
    code, _out, err = run_cli("prove", "--set", "desks", "--version", "1", "--candidate", str(path))
    assert code == 2 and words in err
    code, found = prove("--candidate", str(path))
    assert code == 2 and words in found["detail"]
    assert provider.requests == []


def test_no_such_version_and_too_many_calls_are_bad_input(provider, tmp_path):
    a_set(30)
    path = candidate(tmp_path, BETTER)
    code, found = prove("--candidate", path, "--max-calls", "2")
    assert code == 2 and "more than the limit of 2 calls" in found["detail"]
    code, _out, err = run_cli("prove", "--set", "desks", "--version", "9", "--candidate", path)
    assert code == 2 and "has no version 9" in err
    assert provider.requests == []


def test_a_proof_replays_from_its_recordings(provider, tmp_path):
    a_set(40)
    path = candidate(tmp_path, BETTER)
    code, first = prove("--candidate", path)
    calls = len(provider.requests)
    code_again, again = prove("--candidate", path, "--backend", "recorded")
    assert (code_again, again["questions"]) == (code, first["questions"])
    assert len(provider.requests) == calls and again["failed_calls"] == 0


# --- the judging, pure ------------------------------------------------------------------------


def parsed(document: dict) -> dict:
    from questions.core import check, spec

    return check.validate(document, limits=spec.DEFAULT_LIMITS, lints=False).document.questions


def noul(p: float) -> dict:
    return {"type": "noul", "noul": p}


def test_a_noul_is_judged_on_its_pairs_and_a_failed_call_leaves_its_state_out():
    before = parsed({"urgent": {"type": "noul", "instructions": "Is it urgent?"}})
    after = parsed({"urgent": {"type": "noul", "instructions": "Must it be done today?"}})
    changes = proof.changes(before, after)
    assert (changes.changed, changes.unchanged, changes.added) == (["urgent"], [], [])
    asked = [
        proof.Asked(f"s{i}", {"urgent": True}, {"urgent": noul(0.2)}, {"urgent": noul(0.9)})
        for i in range(25)
    ]
    asked.append(proof.Asked("failed", {"urgent": True}, {"urgent": noul(0.2)}, None))
    asked.append(proof.Asked("unlabelled", {}, {"urgent": noul(0.2)}, {"urgent": noul(0.9)}))
    found = proof.judge(changes.changed, before, after, asked)["urgent"]
    assert (found.verdict, found.up, found.down, found.unpaired) == (proof.BETTER, 25, 0, 1)
    assert found.paired.n == 25 and not found.few
    assert found.floor_words().startswith("no shuffled floor")  # a noul has no options


def test_the_overall_verdict_is_the_worst_but_better_only_when_every_one_is():
    assert proof.overall([proof.BETTER, proof.BETTER]) == proof.BETTER
    assert proof.overall([proof.BETTER, proof.NOT_PROVEN]) == proof.NOT_PROVEN
    assert proof.overall([proof.NOT_PROVEN, proof.WORSE, proof.BETTER]) == proof.WORSE
    assert proof.overall([]) == proof.NOT_PROVEN
    assert proof.verdict((0.01, 0.3)) == proof.BETTER and proof.verdict((-0.3, -0.01)) == "worse"
    assert proof.verdict((-0.01, 0.3)) == proof.verdict(None) == proof.NOT_PROVEN


# --- the held-out split --------------------------------------------------------------------------


def test_the_split_is_fixed_per_set_and_stable_as_states_are_added():
    qs, writer = a_set(40)
    first = set(qs.sample_states.values_list("pk", flat=True))
    before = set(holdout_ids(qs))
    add_states(qs, writer, range(40, 120))
    after = set(holdout_ids(qs))
    assert before == after & first  # no earlier state changed side
    assert holdout_split(qs).states == 120 and holdout_split(qs).held_out == len(after)
    # the same ids in another set fall elsewhere: the set seeds its split
    assert {holdout.held_out(qs.pk + 1, s, 30) for s in first} == {True, False}
    assert {s for s in first if holdout.held_out(qs.pk + 1, s, 30)} != before
    # raising the share only moves states from training into the held-out side
    proofs.holdout_configure(question_set=qs, user=roles.OPERATOR, share=60)
    assert after < set(holdout_ids(qs))


def test_the_split_keeps_near_its_share():
    ids = range(1, 10_001)
    found = holdout.split(7, holdout.DEFAULT_SHARE, ids, ids[::2])
    assert 0.28 < found.held_out / found.states < 0.32
    assert found.held_out + found.training == 10_000
    assert found.labelled_held_out + found.labelled_training == 5_000


@pytest.mark.parametrize("share", [0, 9, 91, 100, -30, "30", 30.5, True, None])
def test_the_share_is_range_checked(share):
    qs, _ = a_set(0)
    with pytest.raises(services.Invalid, match="held-out share"):
        proofs.holdout_configure(question_set=qs, user=roles.OPERATOR, share=share)
    qs.refresh_from_db()
    assert qs.holdout_share == holdout.DEFAULT_SHARE


def test_only_a_reviewer_sets_the_share():
    qs, writer = a_set(0)
    with pytest.raises(services.NotAllowed):
        proofs.holdout_configure(question_set=qs, user=writer, share=40)
    checker = factories.reviewer()
    proofs.holdout_configure(question_set=qs, user=checker, share=40)
    qs.refresh_from_db()
    assert qs.holdout_share == 40


def test_the_holdout_command_shows_and_sets_the_share():
    qs, _ = a_set(20)
    factories.author("writer")
    code, out, _ = run_cli("holdout", "--set", "desks", "--share", "50", "--json")
    assert code == 0
    shown = json.loads(out)
    qs.refresh_from_db()
    assert shown["share"] == qs.holdout_share == 50 and shown["states"] == 20
    assert (
        shown["held_out"] == len(holdout_ids(qs))
        and shown["labelled_held_out"] == shown["held_out"]
    )
    code, out, err = run_cli("holdout", "--set", "desks", "--share", "95")
    assert code == 1 and "10 to 90 percent" in err
    code, out, err = run_cli("holdout", "--set", "desks", "--share", "40", "--user", "writer")
    assert code == 1 and "Only reviewers" in err
    code, out, _ = run_cli("holdout", "--set", "desks")
    assert code == 0 and "states held out (50 %)" in out


def test_the_set_page_shows_each_states_side_and_the_counts(client):
    qs, writer = a_set(12)
    client.force_login(writer)
    page = client.get(reverse("set-detail", args=[qs.slug])).content.decode()
    split = holdout_split(qs)
    assert f"{split.held_out} of 12 states ({holdout.DEFAULT_SHARE} %)" in page
    assert page.count('class="side side-held-out"') == split.held_out
    assert page.count('class="side muted"') == split.training
    held = client.get(reverse("set-detail", args=[qs.slug]), {"state_show": "held_out"})
    assert held.content.decode().count('class="side muted"') == 0
    assert held.content.decode().count('class="side side-held-out"') == split.held_out
