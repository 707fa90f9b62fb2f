"""The semantic lints on the review page: each question shows its own, beside the summary."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from questions import services
from tests import factories

pytestmark = pytest.mark.django_db

DOC = {
    "energy": {
        "type": "score",
        "instructions": "How much energy does the moment call for?",
        "criteria": ["still", "calm", "lively", "playful"],
    },
    "count": {
        "type": "noul",
        "instructions": "Is the number of open tickets in `queue.open` large?",
        "criteria": {"true": "A long queue", "false": "A short queue"},
    },
    "clean": {
        "type": "noul",
        "instructions": "Does the customer ask for their money back?",
        "criteria": {"true": "Asks for a refund", "false": "Asks for something else"},
    },
}


def _article(html: str, qid: str) -> str:
    found = re.search(rf'<article [^>]*id="q-{qid}">(.*?)</article>', html, re.S)
    assert found, qid
    return found.group(1)


def test_the_review_page_shows_each_questions_lints_at_the_question(client):
    author = factories.author("writer")
    qs = factories.question_set(owner=author, doc=DOC)
    services.sample_state_create(
        question_set=qs, name="busy", state={"queue": {"waiting": 3}}, author=author
    )
    client.force_login(factories.reviewer("rev"))
    html = client.get(reverse("version-review", args=[qs.slug, 1])).content.decode()
    energy, count, clean = (_article(html, q) for q in ("energy", "count", "clean"))
    assert 'data-code="bare_levels"' in energy and "are bare labels" in energy
    assert 'data-code="counting"' in count and "“number of” asks the model to count" in count
    assert 'data-code="unknown_state_path"' in count
    assert "<code>queue.open</code> is in none of the sample states" in count
    assert "data-code=" not in clean
    summary = html.split('id="lints-heading"', 1)[1].split("</section>", 1)[0]
    assert "3 warnings" in summary
    assert 'href="#q-count"' in summary
