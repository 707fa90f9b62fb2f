"""Agreement with its noise (`core.agreement`, `selectors.agreement`, `questions agreement`, the
set's agreement page): Cohen's κ and Krippendorff's α against textbook values and their
properties, per labeller and the model against the settled answers, read from a set's labels."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import given
from hypothesis import strategies as st

from questions import services
from questions.core import agreement, stats
from questions.selectors import agreement as reads
from questions.services import labels
from tests import factories
from tests.helpers import AGREEMENT_DOC, agreement_world
from tests.providers import run_cli

N = None
#: Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: four
#: observers, twelve units, missing values; nominal α = 0.743, ordinal α = 0.815
OBSERVERS = {
    "A": [1, 2, 3, 3, 2, 1, 4, 1, 2, N, N, N],
    "B": [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, N, 3],
    "C": [N, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, N],
    "D": [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, N],
}
UNITS = [
    {who: values[i] for who, values in OBSERVERS.items() if values[i] is not None}
    for i in range(12)
]


def _table(yy: int, yn: int, ny: int, nn: int) -> list[tuple[str, str]]:
    return [("y", "y")] * yy + [("y", "n")] * yn + [("n", "y")] * ny + [("n", "n")] * nn


def test_krippendorffs_worked_example_nominal_and_ordinal():
    values = [list(u.values()) for u in UNITS]
    assert round(agreement.krippendorff_alpha(values), 3) == 0.743
    assert round(agreement.krippendorff_alpha(values, agreement.ORDINAL), 3) == 0.815


def test_krippendorffs_binary_example_two_observers():
    first = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    second = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    assert round(agreement.krippendorff_alpha(zip(first, second, strict=True)), 3) == 0.095


@pytest.mark.parametrize(
    ("table", "kappa"),
    [
        ((20, 5, 10, 15), 0.4),  # p_o 0.70, p_e 0.50
        ((45, 15, 25, 15), 0.1304),  # the same p_o 0.60 ...
        ((25, 35, 5, 35), 0.2593),  # ... another chance agreement, another κ
    ],
)
def test_cohens_kappa_textbook_tables(table, kappa):
    assert round(agreement.cohen_kappa(_table(*table)), 4) == kappa


def test_the_statistic_follows_the_type_and_the_number_of_labellers():
    assert agreement.statistic_of("choice", 2) == agreement.KAPPA
    assert agreement.statistic_of("noul", 2) == agreement.KAPPA
    assert agreement.statistic_of("choice", 3) == agreement.ALPHA
    assert agreement.statistic_of("score", 2) == agreement.ALPHA
    assert agreement.metric_of("score") == agreement.ORDINAL
    assert agreement.metric_of("choice") == agreement.NOMINAL


def test_a_figure_in_words_with_its_interval_and_n():
    units = [{"ann": a, "bob": b} for a, b in _table(20, 5, 10, 15)]
    found = agreement.agreement(units, "choice")
    assert (found.statistic, found.n, found.labellers) == (agreement.KAPPA, 50, 2)
    assert re.fullmatch(r"κ 0\.40 \[0\.\d\d, 0\.\d\d\], n 50", found.words())
    low, high = found.interval
    assert low < found.value < high
    assert agreement.agreement(units, "choice") == found  # seeded: the same twice
    shown = found.as_dict()
    assert shown["value"] == 0.4 and shown["words"] == found.words()
    assert shown["interval"] == list(found.interval)


def test_three_labellers_with_missing_labels_read_as_alpha():
    found = agreement.agreement(UNITS, "score")
    assert found.statistic == agreement.ALPHA and found.metric == agreement.ORDINAL
    assert round(found.value, 3) == 0.815
    assert found.n == 11  # the last unit has one value: nothing to pair
    assert found.words().startswith("ordinal α 0.82 [")
    nominal = agreement.agreement(UNITS, "choice")
    assert round(nominal.value, 3) == 0.743 and nominal.words().startswith("α 0.74 [")


def test_ordinal_a_near_level_disagrees_less_than_a_far_one():
    calm = [{"a": level, "b": level} for level in (1, 2, 3, 4, 5) for _ in range(4)]
    near = agreement.agreement([*calm, {"a": 4, "b": 5}], "score")
    far = agreement.agreement([*calm, {"a": 1, "b": 5}], "score")
    assert near.value > far.value
    assert agreement.agreement([*calm, {"a": 4, "b": 5}], "choice").value == pytest.approx(
        agreement.agreement([*calm, {"a": 1, "b": 5}], "choice").value
    )  # nominal: any two answers are as far apart


@pytest.mark.parametrize(
    ("units", "words"),
    [
        ([], "no labels yet"),
        ([{"ann": "billing"}, {"ann": "other"}], "one labeller (ann): agreement needs two"),
        ([{"ann": "billing"}, {"bob": "other"}], "no state was labelled by both ann and bob"),
        (
            [{"ann": "billing", "bob": "billing"}] * 3,
            "κ undefined: every label is billing, so agreement is all chance",
        ),
        ([{"a": True}, {"b": True}, {"c": False}], "no state was labelled by two labellers"),
    ],
)
def test_what_has_no_figure_says_why(units, words):
    found = agreement.agreement(units, "choice")
    assert (found.value, found.interval, found.words()) == (None, None, words)


def test_each_labeller_and_the_model_against_the_settled_answers():
    labels = {
        "s1": {"ann": "billing", "bob": "billing"},
        "s2": {"ann": "billing", "bob": "other"},
        "s3": {"ann": "other", "bob": "other"},
        "s4": {"ann": "other"},
    }
    settled = {"s1": "billing", "s2": "other", "s3": "other"}
    model = {"s1": "billing", "s2": "billing", "s3": "other", "s4": "billing"}
    found = agreement.question_agreement(
        "desk", "choice", labels, settled, model, {"settled": 3, "disputed": 0, "open": 1}
    )
    assert [(m.who, m.agreed, m.n) for m in found.per_labeller] == [("ann", 2, 3), ("bob", 3, 3)]
    assert (found.model_match.agreed, found.model_match.n) == (2, 3)
    assert found.model.statistic == agreement.KAPPA and found.model.n == 3
    assert found.model_match.words() == f"gave the settled answer on {stats.rate_words(2, 3)}"
    assert found.summary().startswith("labels: 3 settled, κ ")
    assert found.as_dict()["per_labeller"][0]["fraction"] == pytest.approx(0.6667)


def test_the_model_is_read_with_the_labellers_statistic():
    labels = {f"s{i}": {"a": i % 2 == 0, "b": True, "c": i % 3 == 0} for i in range(9)}
    settled = {f"s{i}": i % 2 == 0 for i in range(9)}
    found = agreement.question_agreement("x", "noul", labels, settled, dict(settled))
    assert found.labellers.statistic == agreement.ALPHA
    assert found.model.statistic == agreement.ALPHA and found.model.value == pytest.approx(1.0)
    nothing = agreement.question_agreement("x", "noul", labels, settled, {})
    assert nothing.model.words() == "the model answered no settled state"
    assert agreement.question_agreement("x", "noul", labels, settled, None).model is None


def test_the_summary_names_disputes_and_ambiguous_states():
    found = agreement.question_agreement(
        "desk",
        "choice",
        {"s1": {"ann": "a"}},
        {},
        counts={"settled": 120, "disputed": 14, "ambiguous": 2},
    )
    assert found.summary() == (
        "labels: 120 settled, 14 disputed, 2 ambiguous, one labeller (ann): agreement needs two"
    )


def test_the_resampled_interval_matches_the_plain_bootstrap():
    pairs = [(a, b) for a in "abc" for b in "abc" for _ in range(1 + (a == b) * 6)]
    plain = stats.bootstrap(pairs, agreement.cohen_kappa)
    drawn = agreement.resampled(Counter(pairs), agreement._kappa_of)
    assert drawn[0] == pytest.approx(plain[0], abs=0.03)
    assert drawn[1] == pytest.approx(plain[1], abs=0.03)
    assert agreement.resampled(Counter(), agreement._kappa_of) is None


answers = st.sampled_from(["a", "b", "c", "d"])
paired = st.lists(st.tuples(answers, answers), min_size=2, max_size=40)


def _scotts_pi(pairs: list[tuple[str, str]]) -> float | None:
    """Scott's π, written from its definition: chance from the pooled answer rates."""
    n = len(pairs)
    observed = sum(a == b for a, b in pairs) / n
    pooled = Counter(a for pair in pairs for a in pair)
    chance = sum((count / (2 * n)) ** 2 for count in pooled.values())
    return None if chance == 1 else (observed - chance) / (1 - chance)


@given(paired)
def test_alpha_of_two_complete_labellers_is_scotts_pi_corrected_for_small_n(pairs):
    pi = _scotts_pi(pairs)
    alpha = agreement.krippendorff_alpha(pairs)
    if pi is None:
        assert alpha is None
    else:  # α = 1 − (2N − 1) / 2N · (1 − π)
        n = 2 * len(pairs)
        assert alpha == pytest.approx(1 - (n - 1) / n * (1 - pi))


@given(paired, st.permutations(["a", "b", "c", "d"]), st.randoms(use_true_random=False))
def test_nominal_figures_ignore_the_names_of_answers_and_the_order_of_states(pairs, names, rng):
    rename = dict(zip("abcd", names, strict=True))
    moved = [(rename[a], rename[b]) for a, b in pairs]
    rng.shuffle(moved)
    for figure in (agreement.cohen_kappa, agreement.krippendorff_alpha):
        before, after = figure(pairs), figure(moved)
        assert (before is None) == (after is None)
        assert before is None or before == pytest.approx(after)
    swapped = [(b, a) for a, b in pairs]
    kappa = agreement.cohen_kappa(pairs)
    assert kappa is None or kappa == pytest.approx(agreement.cohen_kappa(swapped))
    assert kappa is None or kappa <= 1 + 1e-9


levels = st.lists(st.lists(st.integers(0, 4), min_size=1, max_size=4), min_size=1, max_size=30)


@given(levels)
def test_ordinal_alpha_reads_ranks_only(units):
    stretched = [[level**3 + 10 for level in unit] for unit in units]
    before = agreement.krippendorff_alpha(units, agreement.ORDINAL)
    after = agreement.krippendorff_alpha(stretched, agreement.ORDINAL)
    assert (before is None) == (after is None)
    assert before is None or (before == pytest.approx(after) and before <= 1 + 1e-9)


@given(st.lists(st.integers(0, 4), min_size=2, max_size=20, unique=True))
def test_labellers_who_always_agree_reach_one(distinct):
    units = [[level, level, level] for level in distinct]
    assert agreement.krippendorff_alpha(units, agreement.ORDINAL) == pytest.approx(1.0)
    assert agreement.cohen_kappa([(level, level) for level in distinct]) == pytest.approx(1.0)


# --- a set's agreement, read from its labels ----------------------------------------------


@pytest.mark.django_db
def test_a_sets_agreement_per_question_of_its_labelling_version(django_assert_max_num_queries):

    world = agreement_world()
    with django_assert_max_num_queries(8):
        found = reads.set_agreement(world["set"])
    assert (found.version, found.run, found.needed) == (1, world["run"], 2)
    desk, urgency, churn = found.questions
    assert [q.question for q in found.questions] == ["desk", "urgency", "churn"]
    assert desk.counts == {"settled": 10, "disputed": 1, "ambiguous": 1, "open": 0}
    assert desk.labellers.statistic == agreement.KAPPA and desk.labellers.n == 12
    assert urgency.labellers.statistic == agreement.ALPHA
    assert urgency.labellers.metric == agreement.ORDINAL
    assert churn.counts["disputed"] == 2  # s05 and s11
    assert [(m.who, m.agreed, m.n) for m in desk.per_labeller] == [("ann", 9, 10), ("bob", 10, 10)]
    assert desk.model_match.n == 10 and desk.model.statistic == agreement.KAPPA
    assert urgency.model_match.agreed == urgency.model_match.n  # the model reads as ann does
    assert found.summaries()[0][1].startswith("labels: 10 settled, 1 disputed, 1 ambiguous, κ ")
    shown = found.as_dict()
    assert shown["model_run"] == {"run": world["run"].pk, "backend": "recorded"}
    assert shown["questions"][0]["labellers"]["n"] == 12


@pytest.mark.django_db
def test_the_pages_lines_are_kept_until_a_label_or_a_settlement_changes():
    world = agreement_world()
    qs = world["set"]
    first = reads.label_summaries(qs)
    assert first == reads.set_agreement(qs).summaries()
    with CaptureQueriesContext(connection) as kept:
        assert reads.label_summaries(qs) == first
    assert len(kept.captured_queries) == 3  # the fingerprint only
    labels.dispute_settle(
        sample=world["samples"]["s07"],
        question_id="desk",
        answer="billing",
        reviewer=world["rev"],
    )  # ambiguous → settled
    settled = reads.label_summaries(qs)
    assert settled[0][1].startswith("labels: 11 settled, 1 disputed, κ ")
    labels.state_label_undo(question_set=qs, labeller=world["bob"])  # bob's last: churn of s11
    assert reads.label_summaries(qs) == reads.set_agreement(qs).summaries() != settled


@pytest.mark.django_db
def test_a_set_without_labels_or_a_run_says_so():

    qs = factories.question_set("bare", doc=AGREEMENT_DOC)
    found = reads.set_agreement(qs)
    assert found.run is None and found.summaries() == []
    assert [q.labellers.words() for q in found.questions] == ["no labels yet"] * 3
    assert found.questions[0].model is None
    empty = services.question_set_create(slug="empty", owner=factories.author())
    assert reads.set_agreement(empty).why == "no version to label for yet"


# --- questions agreement --------------------------------------------------------------------


@pytest.mark.django_db
def test_the_command_prints_each_question_labeller_and_the_model():
    world = agreement_world()
    code, out, err = run_cli("agreement", "--set", "eyes")
    assert code == 0, err
    lines = out.splitlines()
    assert (
        lines[0] == f"eyes v1: a state needs 2 labels; the model: run {world['run'].pk} (recorded)"
    )
    assert lines[1].startswith("desk (choice): labels: 10 settled, 1 disputed, 1 ambiguous, κ ")
    assert re.fullmatch(r"  labellers: Cohen's κ: κ 0\.\d\d \[.+\], n 12", lines[2])
    assert lines[3].startswith("  ann: gave the settled answer on 90% (")
    assert "  the model against the settled answers: κ " in out
    assert "urgency (score): " in out and "Krippendorff's α, ordinal: ordinal α " in out


@pytest.mark.django_db
def test_the_command_as_json():
    agreement_world()
    code, out, err = run_cli("agreement", "--set", "eyes", "--json")
    assert code == 0, err
    found = json.loads(out)
    assert (found["set"], found["version"], found["labels_needed"]) == ("eyes", 1, 2)
    desk = found["questions"][0]
    assert desk["labellers"]["statistic"] == "cohen_kappa" and desk["labellers"]["n"] == 12
    assert len(desk["labellers"]["interval"]) == 2
    assert [m["who"] for m in desk["per_labeller"]] == ["ann", "bob"]
    assert desk["model"]["statistic"] == "cohen_kappa" and desk["model_match"]["n"] == 10
    assert desk["counts"] == {"settled": 10, "disputed": 1, "ambiguous": 1, "open": 0}


@pytest.mark.django_db
def test_the_command_on_a_bare_set_says_so_and_on_none_fails():
    factories.question_set("bare", doc=AGREEMENT_DOC)
    code, out, _ = run_cli("agreement", "--set", "bare")
    assert code == 0
    assert "no finished run of this version" in out
    assert "labellers: Cohen's κ: no labels yet" in out
    assert run_cli("agreement", "--set", "ghost", "--json")[:2] == (
        1,
        json.dumps({"status": 404, "detail": "There is no set ghost."}, indent=2) + "\n",
    )


# --- the page, the scorecard and the review ----------------------------------------------


@pytest.mark.django_db
def test_the_agreement_page_shows_each_question_labeller_and_the_model(client):
    world = agreement_world()
    client.force_login(world["rev"])
    page = client.get("/sets/eyes/agreement/").content.decode()
    assert page.count('class="card agreement-question"') == 3
    assert re.search(r"Cohen&#x27;s κ\):</span> <strong>κ 0\.\d\d \[.+\], n 12</strong>", page)
    assert "(Krippendorff&#x27;s α, ordinal):" in page
    assert f'href="/runs/{world["run"].pk}/"' in page
    assert "<strong>10</strong> settled · <strong>1</strong> disputed" in page
    assert '<tr class="model-row"><th scope="row">the model</th><td>60% (' in page


@pytest.mark.django_db
def test_the_agreement_page_of_a_set_with_no_labels_or_one_labeller_says_so(client):
    qs = factories.question_set("bare", doc=AGREEMENT_DOC)
    client.force_login(qs.owner)
    page = client.get("/sets/bare/agreement/").content.decode()
    assert page.count("<strong>no labels yet</strong>") == 3
    assert "No finished run of v1 yet" in page
    sample = services.sample_state_create(
        question_set=qs, name="s", state={}, author=qs.owner, expected={"desk": "billing"}
    )
    assert sample.expected == {"desk": "billing"}
    page = client.get("/sets/bare/agreement/").content.decode()
    assert f"one labeller ({qs.owner.username}): agreement needs two" in page
    empty = services.question_set_create(slug="empty", owner=qs.owner)
    assert (
        "No version to label for yet."
        in client.get(f"/sets/{empty.slug}/agreement/").content.decode()
    )


@pytest.mark.django_db
def test_the_scorecard_and_the_review_carry_the_summary_line(client):
    world = agreement_world()
    client.force_login(world["rev"])
    line = "labels: 10 settled, 1 disputed, 1 ambiguous, κ "
    card = client.get("/sets/eyes/scorecard/").content.decode()
    assert f"<li><code>desk</code> {line}" in card and 'href="/sets/eyes/agreement/"' in card
    code, out, _ = run_cli("scorecard", "--set", "eyes", "--json")
    assert code == 0
    assert json.loads(out)["labels"][0]["summary"].startswith(line)
    version = world["set"].versions.get()
    services.version_submit(version=version, author=world["ann"])
    review = client.get("/sets/eyes/v1/review/").content.decode()
    assert f"<li><code>desk</code> {line}" in review
    assert "labels: 10 settled, 2 disputed, ordinal α " in review


@pytest.mark.django_db
def test_a_reviewer_sets_how_many_labels_a_state_needs_on_the_agreement_page(client):
    owner, rev = factories.author("ann"), factories.reviewer("rev")
    qs = factories.question_set("eyes", owner=owner, doc=AGREEMENT_DOC)
    client.force_login(owner)
    page = client.get("/sets/eyes/agreement/").content.decode()
    assert "A state needs <strong>1</strong> label" in page and 'name="needed"' not in page
    assert client.post("/sets/eyes/agreement/settings/", {"needed": "3"}).status_code == 403
    client.force_login(rev)
    answered = client.post("/sets/eyes/agreement/settings/", {"needed": "3"}, follow=True)
    qs.refresh_from_db()
    assert (qs.labels_needed, qs.labels_show_model) == (3, False)
    assert "needs 3 labels now; labellers label blind." in answered.content.decode()
    refused = client.post("/sets/eyes/agreement/settings/", {"needed": "9", "show_model": "on"})
    qs.refresh_from_db()
    assert refused.status_code == 422 and "1 to 5 labels" in refused.content.decode()
    assert (qs.labels_needed, qs.labels_show_model) == (3, False)  # nothing changed
