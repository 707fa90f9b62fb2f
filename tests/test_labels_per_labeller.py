"""Labels per labeller (`services.labels`, `core.settling`): who gave each label and when, what
they settle with one label needed (the newest, as before) and with two or more (agreement settles,
a difference is a dispute), a reviewer's settlement, undo after a reload, the holds, and the state
form's and an import's answers as their author's labels."""

from __future__ import annotations

import pytest

from questions import roles, services
from questions.core import settling
from questions.models import LabelReservation, SampleState, StateLabel
from questions.services import labels
from questions.services.errors import Conflict, Invalid, NotAllowed
from tests import factories

pytestmark = pytest.mark.django_db

DOC = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk?",
        "criteria": {"billing": "money", "shipping": "parcels", "other": "else"},
    },
    "urgency": {"type": "score", "criteria": ["calm", "soon", "now"]},
    "churn": {"type": "noul", "instructions": "Will they leave?"},
}


@pytest.fixture
def people():
    return {
        "ann": factories.author("ann"),
        "bob": factories.author("bob"),
        "rev": factories.reviewer("rev"),
    }


@pytest.fixture
def qs(people):
    return factories.question_set("eyes", owner=people["ann"], doc=DOC)


def _state(qs, people, name="s1", **expected):
    return services.sample_state_create(
        question_set=qs, name=name, state={"text": name}, author=people["ann"], expected=expected
    )


def _label(sample, qid, answer, who):
    return labels.state_label(sample=sample, question_id=qid, answer=answer, labeller=who)


def test_settle_rules_are_pure():
    g = settling.Given
    assert settling.settle([], 2) == settling.Outcome(settling.OPEN)
    assert settling.settle([g(1, "a", 1), g(2, "b", 2)], 1).answer == "b"
    assert settling.settle([g(1, "a", 1)], 2).status == settling.OPEN
    assert settling.settle([g(1, "a", 1), g(2, "a", 2)], 2) == settling.Outcome(
        settling.SETTLED, "a"
    )
    assert settling.settle([g(1, "a", 1), g(2, "b", 2)], 3).status == settling.DISPUTED
    assert settling.settle([g(1, True, 1), g(2, 1, 2)], 2).status == settling.DISPUTED
    assert settling.settle([g(1, "a", 1)], 2, ("ambiguous", None)).status == settling.AMBIGUOUS
    assert settling.settle([], 2, ("settled", "c")).answer == "c"
    assert settling.needed_refusal(3) is None
    assert "1 to 5" in settling.needed_refusal(6)
    assert settling.needed_refusal(True)


def test_one_label_needed_the_newest_settles_and_each_label_keeps_who(qs, people):
    sample = _state(qs, people)
    _label(sample, "desk", "billing", people["ann"])
    saved = _label(sample, "desk", "shipping", people["bob"])
    assert saved.outcome.status == settling.SETTLED
    sample.refresh_from_db()
    assert sample.expected == {"desk": "shipping"}
    rows = {(x.labeller.username, x.answer) for x in StateLabel.objects.filter(current=True)}
    assert rows == {("ann", "billing"), ("bob", "shipping")}
    assert sample.revisions.first().author == people["bob"]


def test_two_needed_agreement_settles_a_difference_is_disputed(qs, people):
    services.labelling_configure(question_set=qs, user=people["rev"], needed=2)
    agree, differ = _state(qs, people, "agree"), _state(qs, people, "differ")
    assert _label(agree, "urgency", "2", people["ann"]).outcome.status == settling.OPEN
    assert SampleState.objects.get(pk=agree.pk).expected == {}
    assert _label(agree, "urgency", "2", people["bob"]).outcome.answer == 2
    assert SampleState.objects.get(pk=agree.pk).expected == {"urgency": 2}
    _label(differ, "churn", "true", people["ann"])
    assert _label(differ, "churn", "false", people["bob"]).outcome.status == settling.DISPUTED
    assert SampleState.objects.get(pk=differ.pk).expected == {}
    with pytest.raises(Conflict, match="has the 2 labels it needs"):
        _label(agree, "urgency", "1", factories.author("cat"))


def test_a_labeller_changes_their_own_label_and_undo_survives_a_reload(qs, people):
    sample = _state(qs, people)
    other = _state(qs, people, "s2")
    _label(sample, "desk", "billing", people["ann"])
    _label(sample, "desk", "other", people["ann"])
    _label(other, "desk", "shipping", people["ann"])
    assert StateLabel.objects.filter(labeller=people["ann"], current=True).count() == 2
    undone = labels.state_label_undo(question_set=qs, labeller=people["ann"])
    assert undone.sample_state == other and undone.undone_at is not None
    assert SampleState.objects.get(pk=other.pk).expected == {}
    labels.state_label_undo(question_set=qs, labeller=people["ann"])
    assert SampleState.objects.get(pk=sample.pk).expected == {"desk": "billing"}
    labels.state_label_undo(question_set=qs, labeller=people["ann"])
    assert SampleState.objects.get(pk=sample.pk).expected == {}
    assert labels.state_label_undo(question_set=qs, labeller=people["ann"]) is None


def test_bad_labels_are_refused_in_words(qs, people):
    sample = _state(qs, people)
    with pytest.raises(Invalid, match="desk in v1 takes billing, shipping, other"):
        _label(sample, "desk", "nope", people["ann"])
    with pytest.raises(Invalid, match="no question 'ghost'"):
        _label(sample, "ghost", "1", people["ann"])
    with pytest.raises(NotAllowed):
        _label(sample, "desk", "billing", factories.user("vic"))
    assert StateLabel.objects.count() == 0


def test_a_dispute_is_settled_by_a_reviewer_who_did_not_label_it(qs, people):
    services.labelling_configure(question_set=qs, user=people["rev"], needed=2)
    sample = _state(qs, people)
    _label(sample, "desk", "billing", people["ann"])
    _label(sample, "desk", "shipping", people["bob"])
    with pytest.raises(NotAllowed):
        labels.dispute_settle(
            sample=sample, question_id="desk", answer="billing", reviewer=people["ann"]
        )
    outcome = labels.dispute_settle(
        sample=sample, question_id="desk", answer="billing", reviewer=people["rev"]
    )
    assert outcome == settling.Outcome(settling.SETTLED, "billing", by_reviewer=True)
    assert SampleState.objects.get(pk=sample.pk).expected == {"desk": "billing"}
    with pytest.raises(Conflict, match="settled by a reviewer"):
        _label(sample, "desk", "other", people["bob"])
    labels.dispute_settle(sample=sample, question_id="desk", ambiguous=True, reviewer=people["rev"])
    assert SampleState.objects.get(pk=sample.pk).expected == {}
    calm = _state(qs, people, "calm")
    with pytest.raises(Conflict, match="not disputed"):
        labels.dispute_settle(
            sample=calm, question_id="desk", answer="billing", reviewer=people["rev"]
        )


def test_a_reviewer_who_labelled_may_settle_when_no_other_reviewer_exists(qs, people):
    services.labelling_configure(question_set=qs, user=people["rev"], needed=2)
    services.member_set(  # the one reviewer labels too: an admin of the team
        team=qs.team, username="rev", role=roles.ADMIN, user=roles.OPERATOR
    )
    people["rev"] = type(people["rev"]).objects.get(pk=people["rev"].pk)
    sample = _state(qs, people)
    _label(sample, "desk", "billing", people["rev"])
    _label(sample, "desk", "shipping", people["bob"])
    labels.dispute_settle(sample=sample, question_id="desk", answer="other", reviewer=people["rev"])
    assert SampleState.objects.get(pk=sample.pk).expected == {"desk": "other"}


def test_the_last_needed_label_is_held_for_its_labeller(qs, people):
    services.labelling_configure(question_set=qs, user=people["rev"], needed=2)
    sample = _state(qs, people)
    _label(sample, "desk", "billing", people["ann"])
    assert labels.reserve(sample=sample, labeller=people["bob"]) is not None
    cat = factories.author("cat")
    assert labels.reserve(sample=sample, labeller=cat) is None
    with pytest.raises(Conflict, match="held for bob"):
        _label(sample, "desk", "billing", cat)
    second = _state(qs, people, "s2")
    labels.reserve(sample=second, labeller=people["bob"])
    assert list(LabelReservation.objects.values_list("sample_state__name", flat=True)) == ["s2"]


def test_the_state_form_and_an_import_give_their_authors_labels(qs, people):
    sample = _state(qs, people, desk="billing")
    assert StateLabel.objects.get().labeller == people["ann"]
    services.sample_state_update(
        sample=sample,
        name="s1",
        state={"text": "s1"},
        author=people["bob"],
        base_revision=sample.revision,
        expected={},
    )
    assert not StateLabel.objects.filter(current=True).exists()
    services.sample_states_import(
        question_set=qs,
        items=[{"name": "new", "state": {"text": "new"}, "expected": {"churn": True}}],
        author=people["bob"],
    )
    assert StateLabel.objects.get(current=True).labeller == people["bob"]
    assert SampleState.objects.get(name="new").expected == {"churn": True}


def test_with_two_needed_a_form_answer_is_one_label(qs, people):
    services.labelling_configure(question_set=qs, user=people["rev"], needed=2)
    sample = _state(qs, people, desk="billing")
    assert sample.expected == {}
    _label(sample, "desk", "billing", people["bob"])
    assert SampleState.objects.get(pk=sample.pk).expected == {"desk": "billing"}


def test_only_reviewers_say_how_many_labels_and_within_bounds(qs, people):
    with pytest.raises(NotAllowed):
        services.labelling_configure(question_set=qs, user=people["ann"], needed=2)
    with pytest.raises(Invalid, match="1 to 5"):
        services.labelling_configure(question_set=qs, user=people["rev"], needed=9)
    services.labelling_configure(question_set=qs, user=people["rev"], show_model=True)
    qs.refresh_from_db()
    assert (qs.labels_needed, qs.labels_show_model) == (1, True)


def test_the_state_form_keeps_the_labelling_pages_rules_with_two_labels_needed():
    from tests.helpers import agreement_world

    world = agreement_world(states=8)
    s00, s03 = world["samples"]["s00"], world["samples"]["s03"]
    cy = factories.author("cy")

    def save(sample, who, expected):
        sample.refresh_from_db()
        return services.sample_state_update(
            sample=sample,
            name=sample.name,
            state=sample.state,
            author=who,
            base_revision=sample.revision,
            expected=expected,
        )

    settled = dict(SampleState.objects.get(pk=s00.pk).expected)
    with pytest.raises(Conflict, match="has the 2 labels it needs already"):
        save(s00, cy, {**settled, "desk": "other"})
    with pytest.raises(Conflict, match="has the 2 labels it needs already"):
        save(s00, cy, {k: v for k, v in settled.items() if k != "desk"})  # cleared
    with pytest.raises(Conflict, match="settled by a reviewer"):
        save(s03, world["ann"], {**SampleState.objects.get(pk=s03.pk).expected, "desk": "other"})
    # ann clears her own desk label: bob's stays, and one label settles nothing
    kept = save(s00, world["ann"], {k: v for k, v in settled.items() if k != "desk"})
    desk_labels = StateLabel.objects.filter(sample_state=s00, question_id="desk", current=True)
    assert [label.labeller.username for label in desk_labels] == ["bob"]
    assert "desk" not in kept.expected
