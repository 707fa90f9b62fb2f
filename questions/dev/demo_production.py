"""The demo's live traffic: what `refund-triage`'s application sent over the last ten days —
each state asked of the version production answers with, read by the stand-in's rules (the
answers production got), sent through the ingest path the endpoint takes (redacted: some
messages carry an e-mail address or a card number; deduplicated), and a few of them labelled,
so the production page has a live pass rate beside the hand-made one, and the labelling page
production's states to offer."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from typing import Any

from django.utils import timezone

from questions import roles, services
from questions.core import ingest, spec
from questions.dev import standin
from questions.models import Label, QuestionSet, SampleState

SLUG = "refund-triage"
DAYS = 10

#: (message, desk, urgency, churn risk): what customers wrote, and what a labeller says of it
TRAFFIC: list[tuple[str, str, int, bool]] = [
    ("I was charged twice for my order, please refund one of them.", "billing", 2, False),
    ("My parcel is a week late and the tracking has not moved.", "shipping", 2, False),
    ("There is a charge on my card for an order I never made.", "fraud", 4, True),
    ("The refund you promised has still not arrived. I am done with you.", "billing", 3, True),
    ("The box arrived damaged and the lamp inside is broken.", "shipping", 2, False),
    ("Can you tell me when the summer sale starts?", "other", 0, False),
    ("Please send the invoice for last month, my accountant needs it.", "billing", 1, False),
    ("Someone ordered from my account from another country!", "fraud", 4, True),
    ("I returned the shoes two weeks ago, where is my money?", "billing", 3, False),
    ("The courier left my parcel at the wrong house.", "shipping", 2, False),
    ("Do you ship to Norway?", "other", 0, False),
    ("Cancel everything, I will never order again after this mess.", "other", 3, True),
]
#: how many of each day's states a labeller has labelled (the oldest days')
LABELLED_DAYS = 6


def _states(now: datetime) -> list[dict[str, Any]]:
    """The records the application sent: each message a few times over the days, some with a
    customer's e-mail address or card number in it (which redaction takes out)."""
    out = []
    for day in range(DAYS):
        at = now - timedelta(days=day, hours=day % 5)
        for i, (message, *_) in enumerate(TRAFFIC):
            if (i + day) % 3 == 0:
                continue  # not every message every day
            text = message
            if (i + day) % 7 == 0:
                text += f" Write to me at customer{day}{i}@example.com."
            if (i + day) % 11 == 0:
                text += " My card is 4111 1111 1111 1111."
            state = {"channel": "chat" if i % 2 else "email", "message": text, "day": day}
            out.append({"state": state, "at": at.isoformat(), "truth": i})
    return out


def load(labeller: Any, *, now: datetime | None = None) -> list[str]:
    """Send `refund-triage` its live traffic and label some of it as `labeller`; nothing when
    the set is missing, has no version under the baseline label, or has production states."""
    question_set = QuestionSet.objects.filter(slug=SLUG).first()
    if question_set is None:
        return []
    label = question_set.labels.filter(name=Label.BASELINE).select_related("version").first()
    states = question_set.sample_states.filter(source=SampleState.Source.PRODUCTION)
    if label is None or states.exists():
        return []
    version = label.version
    checked = spec.validate(version.document, limits=spec.DEFAULT_LIMITS, lints=False)
    records = _states(now or timezone.now())
    lines = []
    for record in records:
        answers = {
            qid: standin.answer(q, record["state"]) for qid, q in checked.document.questions.items()
        }
        sent = {"state": record["state"], "answers": answers, "version": version.number}
        lines.append(json.dumps(sent | {"label": label.name, "at": record["at"]}))
    counts = services.states_ingest(
        slug=SLUG, body="\n".join(lines).encode(), media_type=ingest.NDJSON, by=roles.OPERATOR
    )
    labelled = 0
    for record in records:
        if record["state"]["day"] < DAYS - LABELLED_DAYS:
            continue
        stored = states.filter(state_sha256=spec.state_sha256(record["state"])).first()
        if stored is None:  # redacted: its stored content differs from what was sent
            continue
        _, desk, urgency, churn = TRAFFIC[record["truth"]]
        for qid, answer in (("desk", desk), ("urgency", str(urgency)), ("churn_risk", churn)):
            services.state_label(
                sample=stored,
                question_id=qid,
                answer="true" if answer is True else "false" if answer is False else answer,
                labeller=labeller,
            )
        labelled += 1
    return [
        f"production traffic of {SLUG}: {counts.received} states sent over {DAYS} days, "
        f"{counts.kept} kept ({counts.redacted} redacted), {labelled} labelled"
    ]
