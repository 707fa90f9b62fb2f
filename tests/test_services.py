"""Services: numbering, the one open draft, the stale revision, immutability, import, states."""

import pytest
from django.db import connection

from questions import services
from questions.core import spec
from questions.models import ReviewEvent, SampleState, Version
from tests import factories
from tests.helpers import race

pytestmark = [pytest.mark.django_db, pytest.mark.both_databases]


def test_a_new_set_gets_version_1_as_its_draft():
    qs = factories.question_set()
    draft = factories.draft(qs)
    assert (draft.number, draft.status, draft.revision) == (1, "draft", 1)
    assert draft.sha256 == spec.sha256_of(factories.document())
    assert [e.kind for e in draft.events.all()] == ["created"]


def test_only_one_open_draft_per_set():
    qs = factories.question_set()
    with pytest.raises(services.DraftExists) as caught:
        services.version_create(question_set=qs, document=factories.document(), author=qs.owner)
    assert caught.value.draft.number == 1
    assert "already has an open draft, version 1" in str(caught.value)


def test_new_draft_from_any_version_numbers_on():
    qs = factories.question_set()
    v1 = services.version_submit(version=factories.draft(qs), author=qs.owner)
    v2 = services.version_draft_from(version=v1, author=qs.owner)
    assert (v2.number, v2.parent, v2.document) == (2, v1, v1.document)
    services.version_submit(version=v2, author=qs.owner)
    v3 = services.version_draft_from(version=v1, author=qs.owner)
    assert v3.number == 3


def test_save_bumps_the_revision_and_records_one_edit_run():
    qs = factories.question_set()
    draft = factories.draft(qs)
    doc = factories.document(2)
    saved = services.version_save(version=draft, document=doc, base_revision=1, author=qs.owner)
    assert (saved.revision, saved.document, saved.sha256) == (2, doc, spec.sha256_of(doc))
    again = services.version_save(
        version=saved, document=factories.document(3), base_revision=2, author=qs.owner
    )
    assert again.revision == 3
    assert [e.kind for e in again.events.all()] == ["created", "edited"]


def test_saving_the_same_document_is_not_a_new_revision():
    qs = factories.question_set()
    draft = factories.draft(qs)
    saved = services.version_save(
        version=draft, document=draft.document, base_revision=1, author=qs.owner
    )
    assert saved.revision == 1


def test_a_stale_revision_is_refused_and_nothing_changes():
    qs = factories.question_set()
    draft = factories.draft(qs)
    services.version_save(
        version=draft, document=factories.document(2), base_revision=1, author=qs.owner
    )
    with pytest.raises(services.StaleRevision) as caught:
        services.version_save(
            version=draft, document=factories.document(5), base_revision=1, author=qs.owner
        )
    assert "revision 2, you started from 1" in str(caught.value)
    draft.refresh_from_db()
    assert (draft.revision, list(draft.document)) == (2, ["q0", "q1"])


@pytest.mark.parametrize("status", ["in_review", "approved", "changes_requested"])
def test_a_version_that_is_not_a_draft_never_changes(status):
    qs = factories.question_set()
    version = factories.draft(qs)
    Version.objects.filter(pk=version.pk).update(status=status)
    version.refresh_from_db()
    before = (version.document_text, version.sha256, version.revision)
    with pytest.raises(services.NotADraft):
        services.version_save(
            version=version,
            document=factories.document(2),
            base_revision=version.revision,
            author=qs.owner,
        )
    with pytest.raises(services.NotADraft):
        services.version_submit(version=version, author=qs.owner)
    with pytest.raises(services.NotADraft):
        services.version_discard(version=version, author=qs.owner)
    version.refresh_from_db()
    assert (version.document_text, version.sha256, version.revision) == before


def test_an_invalid_draft_is_saved_but_not_submitted():
    qs = factories.question_set()
    draft = factories.draft(qs)
    bad = {"q": {"type": "choice", "criteria": {"only": "one"}}}
    draft = services.version_save(version=draft, document=bad, base_revision=1, author=qs.owner)
    assert draft.document == bad
    with pytest.raises(services.InvalidContent) as caught:
        services.version_submit(version=draft, author=qs.owner)
    assert "at least 2 options" in str(caught.value)
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_submit_freezes_and_records():
    qs = factories.question_set()
    version = services.version_submit(version=factories.draft(qs), author=qs.owner)
    assert version.status == "in_review"
    assert [e.kind for e in version.events.all()] == ["created", "submitted"]


def test_discarding_a_draft_frees_the_set_for_a_new_one():
    qs = factories.question_set()
    v1 = services.version_submit(version=factories.draft(qs), author=qs.owner)
    v2 = services.version_draft_from(version=v1, author=qs.owner)
    services.version_discard(version=v2, author=qs.owner)
    v3 = services.version_draft_from(version=v1, author=qs.owner)
    assert v3.number == 3  # numbers are never reused


def test_documents_keep_their_option_order_and_null_values():
    qs = factories.question_set()
    doc = {
        "c": {"type": "choice", "criteria": {"zeta": None, "alpha": "a", "mid": {}}},
        "n": {"type": "noul", "instructions": None, "criteria": None},
    }
    draft = services.version_save(
        version=factories.draft(qs), document=doc, base_revision=1, author=qs.owner
    )
    draft = Version.objects.get(pk=draft.pk)
    assert list(draft.document["c"]["criteria"]) == ["zeta", "alpha", "mid"]
    assert draft.document == doc
    assert "criteria" in draft.document["n"] and draft.document["n"]["criteria"] is None


# --- import --------------------------------------------------------------------------------------


def test_import_creates_the_set_and_a_draft_from_any_form():
    user = factories.author()
    body = {"state": None, "questions": factories.document(2)}
    version = services.version_import(slug="from-body", value=body, author=user)
    assert (version.question_set.slug, version.number, version.document) == (
        "from-body",
        1,
        factories.document(2),
    )
    export = {"format": spec.EXPORT_FORMAT, "questions": factories.document(1)}
    services.version_submit(version=version, author=user)
    again = services.version_import(slug="from-body", value=export, author=user)
    assert again.number == 2


def test_invalid_import_changes_nothing():
    user = factories.author()
    with pytest.raises(services.InvalidContent):
        services.version_import(slug="nope", value={"q": {"type": "choice"}}, author=user)
    assert not Version.objects.exists()
    from questions.models import QuestionSet

    assert not QuestionSet.objects.filter(slug="nope").exists()


# --- sample states -------------------------------------------------------------------------------


def test_sample_state_history_keeps_every_content():
    qs = factories.question_set()
    sample = services.sample_state_create(
        question_set=qs,
        name="s",
        state={"a": 1},
        author=qs.owner,
        expected={"q0": "o0"},
        tags=["x"],
    )
    sample = services.sample_state_update(
        sample=sample, name="s", state=None, author=qs.owner, base_revision=1
    )
    revisions = list(sample.revisions.order_by("revision"))
    assert [r.state for r in revisions] == [{"a": 1}, None]
    assert revisions[1].state_sha256 == spec.state_sha256(None)
    assert sample.state is None and sample.state_text == "null"


def test_sample_state_stale_revision_and_limits():
    qs = factories.question_set()
    sample = services.sample_state_create(question_set=qs, name="s", state=1, author=qs.owner)
    services.sample_state_update(sample=sample, name="s", state=2, author=qs.owner, base_revision=1)
    with pytest.raises(services.ServiceError, match="saved elsewhere"):
        services.sample_state_update(
            sample=sample, name="s", state=3, author=qs.owner, base_revision=1
        )
    with pytest.raises(services.InvalidContent, match="at most 262,144"):
        services.sample_state_create(
            question_set=qs, name="big", state="x" * 262_143, author=qs.owner
        )
    with pytest.raises(services.ServiceError, match="called s already"):
        services.sample_state_create(question_set=qs, name="s", state=1, author=qs.owner)


def test_duplicate_and_delete_sample_states():
    qs = factories.question_set()
    sample = services.sample_state_create(question_set=qs, name="s", state=[1], author=qs.owner)
    copy = services.sample_state_duplicate(sample=sample, author=qs.owner)
    copy2 = services.sample_state_duplicate(sample=sample, author=qs.owner)
    assert (copy.name, copy2.name, copy.state) == ("s (copy)", "s (copy 2)", [1])
    services.sample_state_delete(sample=copy, author=qs.owner)
    assert list(qs.sample_states.values_list("name", flat=True)) == ["s", "s (copy 2)"]


def test_states_import_is_all_or_nothing():
    qs = factories.question_set()
    items = [
        {"name": "a", "state": None},
        {"name": "b", "state": {"x": 1}, "tags": ["t"]},
        {"name": "a", "state": 2},
    ]
    with pytest.raises(services.ServiceError, match="item 3"):
        services.sample_states_import(question_set=qs, items=items, author=qs.owner)
    assert not SampleState.objects.exists()
    report = services.sample_states_import(question_set=qs, items=items[:2], author=qs.owner)
    assert [s.name for s in report.added] == ["a", "b"]


# --- concurrency (PostgreSQL) -------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_get_one_draft_and_distinct_numbers():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises writers by locking the whole file")
    qs = factories.question_set()
    services.version_submit(version=factories.draft(qs), author=qs.owner)
    results = race(
        8,
        lambda i: services.version_create(
            question_set=qs, document=factories.document(i + 1), author=qs.owner
        ),
    )
    made = [r for r in results if isinstance(r, Version)]
    refused = [r for r in results if isinstance(r, services.DraftExists)]
    assert len(made) == 1 and len(refused) == 7, results
    assert made[0].number == 2
    numbers = list(Version.objects.filter(question_set=qs).values_list("number", flat=True))
    assert sorted(numbers) == [1, 2]


@pytest.mark.django_db(transaction=True)
def test_concurrent_saves_of_one_revision_let_exactly_one_through():
    if connection.vendor != "postgresql":
        pytest.skip("needs PostgreSQL: SQLite serialises writers by locking the whole file")
    qs = factories.question_set()
    draft = factories.draft(qs)
    results = race(
        6,
        lambda i: services.version_save(
            # every writer brings a change (the draft holds document(1); saving that is a no-op)
            version=draft,
            document=factories.document(i + 2),
            base_revision=1,
            author=qs.owner,
        ),
    )
    saved = [r for r in results if isinstance(r, Version)]
    stale = [r for r in results if isinstance(r, services.StaleRevision)]
    assert len(saved) == 1 and len(stale) == 5, results
    draft.refresh_from_db()
    assert draft.revision == 2
    assert ReviewEvent.objects.filter(version=draft, kind="edited").count() == 1


def test_a_state_asked_in_a_batch_run_is_not_deleted():
    qs = factories.question_set()
    sample = services.sample_state_create(question_set=qs, name="s", state=1, author=qs.owner)
    services.batch_create(
        version=factories.draft(qs), backend="recorded", user=qs.owner, enqueue=False
    )
    with pytest.raises(services.ServiceError, match="cannot be deleted"):
        services.sample_state_delete(sample=sample, author=qs.owner)
    assert SampleState.objects.filter(pk=sample.pk).exists()
