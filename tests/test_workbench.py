"""The product owner's workbench: what the lists and navigation show at a glance."""

import html
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from questions import services
from questions.templatetags.console import ago, code
from tests import factories
from tests.helpers import token_form

pytestmark = pytest.mark.django_db


@pytest.fixture
def people():
    return factories.author("writer"), factories.reviewer("checker")


def _approved(slug, writer, checker, label="production"):
    qs = factories.question_set(slug, owner=writer)
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    return qs, services.version_approve(
        confirm_weak_evidence=True, version=v1, reviewer=checker, label=label
    )


def test_the_set_list_shows_production_and_pending_reviews(client, people):
    writer, checker = people
    _, v1 = _approved("triage", writer, checker)
    v2 = services.version_draft_from(version=v1, author=writer)
    services.version_submit(version=v2, author=writer)
    factories.question_set("fresh", owner=writer)
    client.force_login(writer)
    body = client.get(reverse("set-list")).content.decode()
    row = body.split('href="/sets/triage/"')[1].split("</tr>")[0]
    assert f'href="{reverse("version-review", args=["triage", 1])}">v1</a>' in row
    assert "v2 <span" in row and "in review" in row and "1 waiting for review" in row
    fresh = body.split('href="/sets/fresh/"')[1].split("</tr>")[0]
    assert "none" in fresh and "waiting for review" not in fresh


def test_the_set_list_costs_the_same_queries_with_more_labels_and_reviews(
    client, people, django_assert_num_queries
):
    writer, checker = people
    client.force_login(writer)
    _approved("a0", writer, checker)
    client.get(reverse("set-list"))
    with django_assert_num_queries(5) as first:
        client.get(reverse("set-list"))
    for i in range(1, 6):
        _approved(f"a{i}", writer, checker)
    with django_assert_num_queries(len(first.captured_queries)):
        client.get(reverse("set-list"))


def test_tokens_are_in_the_navigation_only_for_those_who_manage_them(client, people):
    writer, checker = people
    client.force_login(writer)
    assert reverse("token-list") not in client.get(reverse("set-list")).content.decode()
    client.force_login(checker)
    assert reverse("token-list") in client.get(reverse("set-list")).content.decode()


def test_a_new_token_comes_with_a_copy_button_and_a_curl_that_works(client, people):
    writer, checker = people
    _approved("triage", writer, checker, label="staging")
    client.force_login(checker)
    page = client.post(
        reverse("token-list") + "?set=triage", {"name": "runtime", **token_form(client)}
    )
    body = page.content.decode()
    assert 'data-copy="#new-token"' in body and 'data-copy="#new-curl"' in body
    curl = body.split('id="new-curl">')[1].split("</code>")[0]
    token = body.split('id="new-token">')[1].split("</code>")[0]
    assert curl.startswith(f'curl -H "Authorization: Bearer {token}" ')
    url = curl.split('"')[-2]
    assert url == "http://testserver/api/sets/triage/export.json?label=staging"
    export = client.get(url, headers={"Authorization": f"Bearer {token}"})
    assert export.status_code == 200 and export.json()["format"].endswith("question-set@1")


def test_the_curl_prefers_the_sets_production_label(client, people):
    writer, checker = people
    qs, v1 = _approved("triage", writer, checker, label="production")
    services.label_move(question_set=qs, name="staging", version=v1, actor=checker)
    client.force_login(checker)
    body = client.get(reverse("token-list") + "?set=triage").content.decode()
    assert "/api/sets/triage/export.json?label=production" in body
    assert "Bearer &lt;token&gt;" in body


def test_without_any_label_the_tokens_page_shows_no_curl(client, people):
    client.force_login(people[1])
    body = client.get(reverse("token-list") + "?set=nothing").content.decode()
    assert "curl" not in body


def test_times_read_just_now_then_the_largest_unit():
    now = timezone.now()
    assert ago(now) == "just now"
    assert ago(now - timedelta(seconds=59)) == "just now"
    assert ago(now - timedelta(minutes=3, seconds=10)) == "3\xa0minutes ago"
    assert ago(now - timedelta(days=2, hours=5)) == "2\xa0days ago"


def test_backticks_in_a_message_become_code_and_the_rest_is_escaped():
    assert code("option `full_refund` is used <twice>") == (
        "option <code>full_refund</code> is used &lt;twice&gt;"
    )
    assert code("`<b>`") == "<code>&lt;b&gt;</code>"
    assert code("a lone ` tick") == "a lone ` tick"


def test_an_issue_path_quotes_a_blank_or_odd_key_instead_of_ending_in_a_dot():
    from questions.core import check, spec

    doc = {"refund_action": {"type": "choice", "criteria": {"": "blank", "keep it": "x"}}}
    paths = {issue.path for issue in check.validate(doc, limits=spec.DEFAULT_LIMITS).errors}
    assert 'questions.refund_action.criteria[""]' in paths
    assert not any(path.endswith(".") for path in paths)
    assert spec.path_of(("questions", "q", "criteria", 0)) == "questions.q.criteria.0"
    assert spec.path_of(()) == "$"


def test_save_and_add_another_opens_a_new_state_and_preview_this_state_preselects_it(
    client, people
):
    writer, _ = people
    qs = factories.question_set("triage", owner=writer)
    client.force_login(writer)
    saved = client.post(
        reverse("state-create", args=["triage"]),
        {"name": "first", "state": '{"text": "hi"}', "tags": "", "then": "another"},
    )
    assert saved.status_code == 302 and saved.url == reverse("state-create", args=["triage"])
    sample = qs.sample_states.get()
    page = client.get(reverse("state-edit", args=["triage", sample.pk])).content.decode()
    link = f"{reverse('version-edit', args=['triage', 1])}?state={sample.pk}#preview-heading"
    assert f'href="{link}"' in page
    editor = client.get(link.split("#")[0]).content.decode()
    assert f'<option value="{sample.pk}" selected>' in editor
    plain = client.post(
        reverse("state-create", args=["triage"]), {"name": "second", "state": "null", "tags": ""}
    )
    assert plain.url == reverse(
        "state-edit", args=["triage", qs.sample_states.get(name="second").pk]
    )


def test_the_states_table_shows_expected_answers_as_values(client, people):
    writer, _ = people
    qs = factories.question_set("triage", owner=writer)
    # a stored answer the version's question does not take (an import refuses it): shown as
    # JSON all the same
    services.sample_state_create(
        question_set=qs, name="s", state=None, expected={"q0": True}, author=writer
    )
    client.force_login(writer)
    body = client.get(qs.get_absolute_url()).content.decode()
    assert '<span class="pair"><code>q0</code> true</span>' in body
    assert "True" not in body


def test_keep_freezes_the_draft_and_continues_in_a_new_one_without_a_review(client, people):
    from questions.models import ReviewEvent, Version

    writer, checker = people
    qs = factories.question_set("triage", owner=writer)
    client.force_login(writer)
    kept = client.post(reverse("version-keep", args=["triage", 1]))
    v1, v2 = qs.versions.order_by("number")
    assert kept.status_code == 302 and kept.url == v2.get_absolute_url()
    assert (v1.status, v2.status, v2.parent, v2.document) == ("kept", "draft", v1, v1.document)
    assert v1.events.filter(kind=ReviewEvent.Kind.KEPT, actor=writer).exists()
    assert not qs.versions.filter(status=Version.Status.IN_REVIEW).exists()
    page = client.get(v1.get_absolute_url()).content.decode()
    assert "Submit v1 for review" in page and f'href="{v2.get_absolute_url()}"' in page
    editor = client.get(v2.get_absolute_url()).content.decode()
    assert "Keep as v2, continue" in editor
    # the kept version changes no more, is run like any other, and goes to review later
    refused = client.post(
        reverse("version-save", args=["triage", 1]), {"base_revision": "1", "document": "{}"}
    )
    assert refused.status_code == 409
    services.sample_states_import(
        question_set=qs, items=[{"name": "s", "state": None}], author=writer
    )
    assert services.batch_create(version=v1, backend="recorded", user=writer, enqueue=False)
    client.post(reverse("version-submit", args=["triage", 1]))
    assert qs.versions.get(number=1).status == "in_review"
    assert (
        services.version_approve(confirm_weak_evidence=True, version=v1, reviewer=checker).status
        == "approved"
    )


def test_keep_refuses_what_it_cannot_keep_and_changes_nothing(client, people):
    from questions.models import Version

    writer, checker = people
    qs = factories.question_set("triage", owner=writer, doc={"q": {"type": "choice"}})
    with pytest.raises(services.Invalid):
        services.version_keep(version=qs.versions.get(), author=writer)
    with pytest.raises(services.NotAllowed):
        services.version_keep(version=qs.versions.get(), author=checker)
    assert list(qs.versions.values_list("status", flat=True)) == ["draft"]
    fine = factories.question_set("fine", owner=writer)
    v1 = services.version_submit(version=fine.versions.get(), author=writer)
    with pytest.raises(services.NotADraft):
        services.version_keep(version=v1, author=writer)
    client.force_login(writer)
    page = client.post(reverse("version-keep", args=["triage", 1]), follow=True)
    assert "The draft is invalid: choice <code>q</code> needs criteria" in page.content.decode()
    assert Version.objects.filter(question_set=qs).count() == 1


@pytest.mark.parametrize(
    ("statement", "two"),
    [
        ("The customer is threatening to cancel or leave for a competitor.", False),
        ("The customer asks for a refund or a discount.", False),
        ("Is the customer angry or upset?", False),
        ("The customer is angry or the order is late.", True),
        ("Is the customer angry, or is the order late?", True),
        ("The customer is angry and the order is late.", True),
        ("The customer wants a refund and threatens to leave.", True),
        ("Orange orders are late.", False),
    ],
)
def test_the_two_statements_lint_spares_an_or_inside_one_statement(statement, two):
    from questions.core import check, spec

    doc = {"churn": {"type": "noul", "instructions": statement}}
    codes = [w.code for w in check.validate(doc, limits=spec.DEFAULT_LIMITS).warnings]
    assert ("compound_statement" in codes) is two


def test_a_token_form_sent_twice_makes_one_token(client, people):
    from questions.models import APIToken

    client.force_login(people[1])
    form = {"name": "runtime", **token_form(client)}
    first = client.post(reverse("token-list"), form)
    assert first.status_code == 200 and 'id="new-token"' in first.content.decode()
    again = client.post(reverse("token-list"), form)  # the browser's reload
    body = again.content.decode()
    assert again.status_code == 409 and "no second token was made" in body
    assert 'id="new-token"' not in body and 'value="runtime"' in body
    assert APIToken.objects.filter(name="runtime").count() == 1


def test_revoking_a_token_and_removing_a_webhook_ask_first(client, people):
    from questions.services.webhooks import webhook_create

    writer, checker = people
    qs, _ = _approved("triage", writer, checker)
    client.force_login(checker)
    client.post(reverse("token-list"), {"name": "runtime", **token_form(client)})
    tokens = client.get(reverse("token-list")).content.decode()
    assert 'data-confirm="Revoke runtime?' in tokens
    webhook_create(question_set=qs, url="https://runtime.example/hook", user=checker)
    hooks = client.get(reverse("set-webhooks", args=["triage"])).content.decode()
    assert 'data-confirm="Remove the webhook to https://runtime.example/hook?' in hooks


@pytest.mark.parametrize(
    ("slug", "words"),
    [
        ("bad slug/../x", "not 'bad slug/../x'; 'bad-slugx' would do"),
        ("Refunds", "not 'Refunds'; 'refunds' would do"),
        ("x" * 1000, "at most 64 characters; this one has 1000"),
        ("  ", "A set needs a slug"),
    ],
)
def test_a_slug_that_cannot_name_a_set_is_refused_never_changed(client, people, slug, words):
    from questions.models import QuestionSet

    client.force_login(people[0])
    response = client.post(reverse("set-create"), {"name": "Refunds", "slug": slug})
    body = html.unescape(response.content.decode())
    assert response.status_code == 422 and words in body
    assert f'value="{slug.strip()}"' in body  # what was typed stays in the form
    assert not QuestionSet.objects.exists()


def test_long_free_text_is_refused_with_its_length_and_changes_nothing(client, people):
    from questions.models import QuestionSet, ReviewEvent

    writer, checker = people
    client.force_login(writer)
    too_long = client.post(
        reverse("set-create"), {"name": "Long", "slug": "long", "description": "x" * 4001}
    )
    assert too_long.status_code == 422
    assert "description has 4,001 characters; at most 4,000" in too_long.content.decode()
    assert not QuestionSet.objects.exists()
    qs = factories.question_set("triage", owner=writer)
    with pytest.raises(services.Invalid, match="A tag has 300 characters; at most 64"):
        services.sample_state_create(
            question_set=qs, name="s", state=None, author=writer, tags=["t" * 300]
        )
    with pytest.raises(services.Invalid, match="at most 20 tags"):
        services.sample_state_create(
            question_set=qs, name="s", state=None, author=writer, tags=[f"t{i}" for i in range(21)]
        )
    v1 = services.version_submit(version=factories.draft(qs), author=writer)
    before = ReviewEvent.objects.count()
    with pytest.raises(services.Invalid, match="comment has 20,000 characters"):
        services.version_comment(version=v1, actor=checker, note="c" * 20_000)
    assert ReviewEvent.objects.count() == before and not qs.sample_states.exists()


def test_a_refused_step_and_a_missing_page_read_as_pages_not_bare_codes(client, people, settings):
    settings.DEBUG = False
    writer, _ = people
    qs = factories.question_set("triage", owner=writer)
    services.version_submit(version=factories.draft(qs), author=writer)
    client.force_login(writer)
    refused = client.post(reverse("version-review", args=["triage", 1]), {"action": "approve"})
    body = refused.content.decode()
    assert refused.status_code == 403 and "You may not do that" in body
    assert "Only reviewers do that." in body and 'href="/"' in body
    missing = client.get("/sets/nothing-here/")
    assert missing.status_code == 404 and "There is nothing here" in missing.content.decode()


@pytest.mark.parametrize("mark", ["\u202e", "\u202b", "\u2067"])
def test_a_name_with_a_reordering_character_is_refused(client, people, mark):
    from questions.models import APIToken, QuestionSet

    writer, checker = people
    spoof = f"{mark}evil"
    with pytest.raises(services.Invalid, match=f"U\\+{ord(mark):04X}, a character that reorders"):
        services.question_set_create(slug="s", name=spoof, owner=writer)
    qs = factories.question_set("triage", owner=writer)
    with pytest.raises(services.Invalid, match="reorders"):
        services.sample_state_create(question_set=qs, name=spoof, state=None, author=writer)
    with pytest.raises(services.Invalid, match="reorders"):
        services.sample_state_create(
            question_set=qs, name="fine", state=None, author=writer, tags=[spoof]
        )
    with pytest.raises(services.Invalid, match="reorders"):
        services.api_token_create(name=spoof, user=checker)
    assert not QuestionSet.objects.filter(slug="s").exists()
    assert not qs.sample_states.exists() and not APIToken.objects.exists()
    # right-to-left text itself is welcome: only the reordering controls are refused
    services.sample_state_create(question_set=qs, name="שלום", state=None, author=writer)
