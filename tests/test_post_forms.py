"""The flat POSTs read through Django forms: a value that does not read is an error with a
code, and the step is not taken."""

import pytest
from django.urls import reverse

from questions import roles, services
from questions.models import BatchRun, Webhook
from questions.post_forms import (
    ControlStartForm,
    DriftStartForm,
    LabelMoveForm,
    RunStartForm,
    SampleStateForm,
    WebhookForm,
)
from tests import factories
from tests.providers import DOC


def _codes(form) -> dict[str, list[str]]:
    assert not form.is_valid()
    return {field: [e.code for e in errors] for field, errors in form.errors.as_data().items()}


def test_a_run_start_reads_its_defaults_and_names_what_does_not_read():
    form = RunStartForm({})
    assert form.is_valid()
    assert form.cleaned_data == {
        "backend": "typesafe",
        "concurrency": BatchRun.DEFAULT_CONCURRENCY,
        "threshold": BatchRun.DEFAULT_THRESHOLD,
        "tag": "",
    }
    codes = _codes(RunStartForm({"concurrency": "٣", "threshold": "most"}))
    assert codes == {"concurrency": ["not_a_whole_number"], "threshold": ["invalid"]}


def test_a_label_move_and_a_control_start_name_their_fields():
    assert _codes(LabelMoveForm({"version": "²"})) == {
        "name": ["required"],
        "version": ["not_a_whole_number"],
    }
    assert _codes(ControlStartForm({"version": "1", "count": "٣"})) == {
        "count": ["not_a_whole_number"]
    }
    form = ControlStartForm({"version": "1", "count": "3", "kind": "shuffle"})
    assert form.is_valid() and form.cleaned_data["seed"] == 0


@pytest.mark.django_db
def test_a_run_with_a_concurrency_in_other_digits_is_refused_plainly(client):
    writer = factories.author("writer")
    client.force_login(writer)
    qs = factories.question_set("s", owner=writer, doc=DOC)
    services.sample_state_create(question_set=qs, name="a", state=1, author=writer)
    page = client.post(
        reverse("run-create", args=["s", 1]),
        {"backend": "recorded", "concurrency": "٣"},
        follow=True,
    )
    assert "Concurrency is a whole number in digits" in page.content.decode()
    assert not BatchRun.objects.exists()


@pytest.mark.django_db
def test_a_form_leaves_the_rules_of_text_to_the_service():
    form = LabelMoveForm({"name": "production\x00" + "x" * 300, "version": "1"})
    assert form.is_valid()  # the service refuses it, naming the label name
    with pytest.raises(services.Invalid, match="label name"):
        services.label_move(
            question_set=None,
            name=form.cleaned_data["name"],
            version=None,
            actor=roles.OPERATOR,
        )


def test_a_drift_start_and_a_new_webhook_name_what_is_missing():
    assert _codes(DriftStartForm({"backend": "typesafe"})) == {
        "label": ["required"],
        "model": ["required"],
    }
    form = DriftStartForm({"label": "production", "model": " jev-next "})
    assert form.is_valid()
    assert form.cleaned_data == {"label": "production", "model": "jev-next", "backend": None}
    assert _codes(WebhookForm({"description": "runtime"})) == {"url": ["required"]}
    kept = WebhookForm({"url": "https://runtime.example/hooks", "description": " two  words "})
    assert kept.is_valid() and kept.cleaned_data["description"] == " two  words "


@pytest.mark.django_db
def test_a_webhook_without_a_url_is_refused_at_the_form_and_nothing_is_made(client):
    reviewer = factories.reviewer("checker")
    factories.question_set("s")
    client.force_login(reviewer)
    page = client.post(reverse("set-webhooks", args=["s"]), {"description": "runtime"})
    assert page.status_code == 422
    assert "Give the receiver&#x27;s URL" in page.content.decode()
    assert "runtime" in page.content.decode()  # what was typed stays
    assert not Webhook.objects.exists()


def test_a_sample_states_fields_read_through_a_form():
    form = SampleStateForm({"name": "late", "tags": " vip, ,edge ", "base_revision": "3"})
    assert form.is_valid()
    assert form.cleaned_data == {"name": "late", "tags": ["vip", "edge"], "base_revision": 3}
    assert SampleStateForm({}).is_valid()  # a new state: revision 0, no tags
    assert _codes(SampleStateForm({"base_revision": "٣"})) == {
        "base_revision": ["not_a_whole_number"]
    }


@pytest.mark.django_db
def test_a_state_saved_with_a_revision_in_other_digits_is_refused_and_nothing_changes(client):
    writer = factories.author("writer")
    qs = factories.question_set("s", owner=writer)
    sample = services.sample_state_create(question_set=qs, name="n", state={"a": 1}, author=writer)
    client.force_login(writer)
    page = client.post(
        reverse("state-edit", args=["s", sample.pk]),
        {"name": "n", "state": '{"a": 2}', "base_revision": "١"},
    )
    assert page.status_code == 422
    assert "The revision is a whole number" in page.content.decode()
    sample.refresh_from_db()
    assert (sample.state, sample.revision) == ({"a": 1}, 1)
