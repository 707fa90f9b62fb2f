"""A lint finding accepted with a reason (`services.lint_accept`): only an author of the set
accepts, with a reason of bounded length, an open finding of the saved version; it stops showing
for that question in the editor, on the review page, in `questions validate --set/--version` and
in the gate's lints, on the version and every version drawn from it while its words stay the
same; the record is append-only and the review page shows each reason."""

from __future__ import annotations

import json
import re

import pytest
from django.urls import reverse

from questions import services
from questions.models import LintAcceptance, Version
from questions.services import gates as gate_services
from tests import factories
from tests.helpers import write
from tests.providers import run_cli

pytestmark = pytest.mark.django_db

DOC = {
    "big": {
        "type": "noul",
        "instructions": "Is the invoice over 1k?",
        "criteria": {"true": "A large invoice", "false": "A small invoice"},
    },
    "desk": {
        "type": "choice",
        "instructions": "Which desk owns the message?",
        "criteria": {"billing": None, "support": None, "other": "Anything else"},
    },
}
REASON = "the state holds amount_band, which says over_1k"


@pytest.fixture
def drafted():
    """Set `acc` by `writer`: v1, an open draft of DOC."""
    writer = factories.author("writer")
    qs = factories.question_set("acc", owner=writer, doc=DOC)
    return Version.objects.get(question_set=qs, number=1), writer


def accept(version, actor, code="numeric_representation", question="big", **kw):
    return services.lint_accept(
        version=version, question=question, code=code, actor=actor, **({"reason": REASON} | kw)
    )


def codes_on(html: str) -> set[str]:
    return set(re.findall(r'class="issue warning" data-code="([a-z_]+)"', html))


def test_an_author_accepts_a_finding_on_the_page_and_the_editor_stops_showing_it(client, drafted):
    version, writer = drafted
    client.force_login(writer)
    editor = reverse("version-edit", args=["acc", 1])
    before = client.get(editor).content.decode()
    assert {"numeric_representation", "state_comparison"} <= codes_on(before)
    link = reverse("lint-accept", args=["acc", 1])
    assert f'href="{link}?question=big&amp;code=numeric_representation' in before
    page = client.get(link, {"question": "big", "code": "numeric_representation"})
    assert page.status_code == 200 and "“1k” writes a number in one form" in page.content.decode()
    assert LintAcceptance.objects.count() == 0  # a GET never writes
    posted = client.post(
        link,
        {
            "question": "big",
            "code": "numeric_representation",
            "path": "questions.big.instructions",
            "reason": REASON,
        },
    )
    assert (posted.status_code, posted.url) == (302, version.get_absolute_url())
    after = client.get(editor).content.decode()
    assert "numeric_representation" not in codes_on(after)
    assert "state_comparison" in codes_on(after)  # another rule's finding still shows
    [row] = LintAcceptance.objects.all()
    assert (row.version, row.question, row.code, row.words, row.actor) == (
        version,
        "big",
        "numeric_representation",
        "1k",
        writer,
    )


def test_the_json_views_check_leaves_an_accepted_finding_out(client, drafted):
    version, writer = drafted
    client.force_login(writer)
    url = reverse("version-json", args=["acc", 1])
    post = {"document": json.dumps(DOC), "action": "check", "base_revision": version.revision}
    before = client.post(url, post).content.decode()
    accept(version, writer)
    after = client.post(url, post).content.decode()
    assert after.count('class="issue warning"') == before.count('class="issue warning"') - 1
    assert "1k" in before and "1k" not in after


def test_the_review_page_shows_the_reason_beside_the_lints_still_open(client, drafted):
    version, writer = drafted
    accept(version, writer)
    services.version_submit(version=version, author=writer)
    client.force_login(factories.reviewer("rev"))
    html = client.get(reverse("version-review", args=["acc", 1])).content.decode()
    still_open = html.split('id="lints-heading"', 1)[1].split("</section>", 1)[0]
    assert "numeric_representation" not in still_open and "state_comparison" in still_open
    article = re.search(r'<article [^>]*id="q-big">(.*?)</article>', html, re.S).group(1)
    assert 'data-code="numeric_representation"' not in article
    accepted = html.split('id="accepted-lints-heading"', 1)[1].split("</section>", 1)[0]
    assert 'data-code="numeric_representation"' in accepted
    assert "accepted by writer on v1" in accepted and REASON in accepted


def test_only_an_author_of_the_set_accepts(drafted):
    version, _ = drafted
    for outsider in (factories.author("other-author"), factories.reviewer("rev")):
        with pytest.raises(services.NotAllowed):
            accept(version, outsider)
    assert LintAcceptance.objects.count() == 0


def test_an_editor_of_one_version_is_an_author_of_the_set(drafted):
    version, _writer = drafted
    editor = factories.author("editor")
    edited = {**DOC, "desk": {**DOC["desk"], "instructions": "Which desk owns the ticket?"}}
    services.version_save(
        version=version, document=edited, base_revision=version.revision, author=editor
    )
    assert accept(Version.objects.get(pk=version.pk), editor).actor == editor


@pytest.mark.parametrize(
    ("reason", "code"),
    [("", "reason_required"), ("   ", "reason_required"), ("x" * 501, "reason_too_long")],
)
def test_a_reason_is_required_and_bounded(drafted, reason, code):
    version, writer = drafted
    with pytest.raises(services.Invalid) as refused:
        accept(version, writer, reason=reason)
    assert refused.value.code == code
    assert LintAcceptance.objects.count() == 0


def test_a_reason_of_the_limit_is_kept_whole(drafted):
    version, writer = drafted
    assert accept(version, writer, reason="y" * 500).reason == "y" * 500


def test_only_an_open_finding_of_the_saved_version_is_accepted(drafted):
    version, writer = drafted
    with pytest.raises(services.NoSuchFinding, match="has no open `counting` warning"):
        accept(version, writer, code="counting")
    with pytest.raises(services.NoSuchFinding) as several:
        accept(version, writer, code="undescribed_option", question="desk")
    assert "`questions.desk.criteria.billing`, `questions.desk.criteria.support`" in str(
        several.value
    )
    one = accept(
        version,
        writer,
        code="undescribed_option",
        question="desk",
        path="questions.desk.criteria.support",
    )
    assert one.path == "questions.desk.criteria.support"
    accept(version, writer)
    with pytest.raises(services.Conflict, match="accepted already"):
        accept(version, writer)
    assert LintAcceptance.objects.count() == 2


def test_an_acceptance_holds_on_versions_drawn_from_it_while_the_words_stay(client, drafted):
    version, writer = drafted
    accept(version, writer)
    checker = factories.reviewer("checker")
    services.version_approve(
        version=services.version_submit(version=version, author=writer),
        reviewer=checker,
        confirm_weak_evidence=True,
    )
    v2 = services.version_draft_from(version=Version.objects.get(pk=version.pk), author=writer)
    client.force_login(writer)
    editor = reverse("version-edit", args=["acc", v2.number])
    assert "numeric_representation" not in codes_on(client.get(editor).content.decode())
    changed = json.loads(json.dumps(DOC))
    changed["big"]["instructions"] = "Is the invoice over 2k?"
    services.version_save(version=v2, document=changed, base_revision=v2.revision, author=writer)
    assert "numeric_representation" in codes_on(client.get(editor).content.decode())
    other = factories.question_set("other", owner=writer, doc=DOC)  # another set's: not held
    assert "numeric_representation" in codes_on(
        client.get(reverse("version-edit", args=[other.slug, 1])).content.decode()
    )


def test_the_page_refuses_a_reader_and_says_why_a_post_without_reason_failed(client, drafted):
    _version, writer = drafted
    link = reverse("lint-accept", args=["acc", 1])
    finding = {"question": "big", "code": "numeric_representation"}
    client.force_login(factories.user("reader"))
    page = client.get(link, finding).content.decode()
    assert "“1k”" in page and 'name="reason"' not in page
    assert client.post(link, {**finding, "reason": REASON}).status_code == 403
    client.force_login(writer)
    refused = client.post(link, {**finding, "reason": " "})
    assert refused.status_code == 422
    assert "accepting one needs a reason" in refused.content.decode()
    assert LintAcceptance.objects.count() == 0


def test_the_command_line_accepts_and_validate_leaves_accepted_findings_out(drafted, tmp_path):
    version, writer = drafted
    doc = write(tmp_path, DOC)
    code, out, err = run_cli(
        "lint-accept",
        "--set",
        "acc",
        "--version",
        "1",
        "--question",
        "big",
        "--code",
        "state_comparison",
        "--reason",
        "compared in code upstream",
        "--user",
        "writer",
    )
    assert code == 0, err
    assert out.strip() == (
        "acc v1: accepted state_comparison at questions.big.instructions: compared in code upstream"
    )
    code, out, _ = run_cli(
        "lint-accept",
        "--set",
        "acc",
        "--version",
        "1",
        "--question",
        "big",
        "--code",
        "state_comparison",
        "--reason",
        "again",
        "--user",
        "writer",
        "--json",
    )
    assert code == 1 and json.loads(out)["status"] == 409
    strict = ("validate", doc, "--strict", "--json")
    code, out, _ = run_cli(*strict, "--set", "acc", "--version", "1")
    result = json.loads(out)
    assert code == 1  # numeric_representation and the undescribed options are still open
    assert [w["code"] for w in result["accepted"]] == ["state_comparison"]
    assert result["accepted"][0]["reason"] == "compared in code upstream"
    assert result["accepted"][0]["accepted_by"] == "writer"
    assert "state_comparison" not in {w["code"] for w in result["warnings"]}
    accept(version, writer)
    for path in ("questions.desk.criteria.billing", "questions.desk.criteria.support"):
        accept(version, writer, code="undescribed_option", question="desk", path=path)
    assert run_cli(*strict, "--set", "acc", "--version", "1")[0] == 0
    assert run_cli(*strict)[0] == 1  # without the version, nothing is accepted
    code, text, _ = run_cli("validate", doc, "--set", "acc", "--version", "1")
    assert code == 0
    assert "accepted: questions.big.instructions: “1k” writes" in text
    assert f"by writer on v1: {REASON}" in text
    assert text.splitlines()[-1].startswith("valid: ")
    assert "0 warnings (4 more accepted)" in text.splitlines()[-1]


def test_validate_names_an_unknown_version_and_needs_both_flags(tmp_path):
    doc = write(tmp_path, DOC)
    code, out, _ = run_cli("validate", doc, "--set", "nope", "--version", "1", "--json")
    assert (code, json.loads(out)["status"]) == (1, 404)
    assert run_cli("validate", doc, "--set", "nope")[0] == 2


def test_the_gate_judges_the_lints_left_open(drafted):
    version, writer = drafted
    assert gate_services.gate_lints(version, strict=False) is None
    before = gate_services.gate_lints(version, strict=True)
    assert len(before.open) == 4 and before.accepted == 0
    assert any("[numeric_representation]" in line for line in before.open)
    accept(version, writer)
    after = gate_services.gate_lints(version, strict=True)
    assert (len(after.open), after.accepted) == (3, 1)
