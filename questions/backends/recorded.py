"""Replay: answers recorded from earlier live calls through one live backend, for the same
question words, state and model.

`recorded:<backend>` (e.g. `recorded:openrouter`) replays only what `<backend>` answered;
`recorded` alone is `recorded:typesafe`, the console's default wire. It answers every question
whose canonical content and state were answered before (under any id, in any version; two ids
with the same words both get the recorded answer), re-checks each answer by the rules of the
wire that gave it, and reports the rest as not recorded. It never guesses and never touches the
network."""

from __future__ import annotations

import time

from django.db.models import Q

from questions import answers
from questions.backends.base import Ask, DecisionError, Outcome

NAME = "recorded"
DEFAULT_SOURCE = "typesafe"


class RecordedBackend:
    live = False

    def __init__(self, source: str = DEFAULT_SOURCE):
        from questions.backends.http import LIVE

        self.source = LIVE[source]()  # KeyError for a wire that is not live
        self.name = NAME if source == DEFAULT_SOURCE else f"{NAME}:{source}"

    @property
    def calibrated(self) -> bool:
        """A replay is as calibrated as the wire it replays."""
        return self.source.calibrated

    def configured(self) -> bool:
        return True

    def missing_configuration(self) -> str:
        return ""

    def default_model(self) -> str:
        return self.source.default_model()

    def ask(self, ask: Ask) -> Outcome:
        from questions.models import DecisionAnswer

        started = time.perf_counter()
        outcome = Outcome(
            backend=self.name, model_asked=ask.model, live=False, calibrated=self.calibrated
        )
        sha_of = {qid: q.sha256 for qid, q in ask.questions.items()}
        rows = (
            DecisionAnswer.objects.filter(
                question_sha256__in=set(sha_of.values()),
                state_sha256=ask.state_sha256,
                decision__backend=self.source.name,
            )
            .filter(Q(model=ask.model) | Q(model_answered=ask.model))
            .order_by("-id")
            .values("question_sha256", "answer", "model_answered")
        )
        newest: dict[str, dict] = {}  # question sha256 → its newest recorded answer
        for row in rows:
            newest.setdefault(row["question_sha256"], row)
        # every id is answered, also two ids that carry the same words
        hits = {qid: newest[sha] for qid, sha in sha_of.items() if sha in newest}
        found = {qid: row["answer"] for qid, row in hits.items()}
        models = {row["model_answered"] for row in hits.values()}
        outcome.missing = [qid for qid in ask.questions if qid not in found]
        if not found:
            outcome.error = DecisionError(
                404,
                f"Nothing recorded through {self.source.name} for these questions and this state "
                f"with model {ask.model}: ask {self.source.name} live first.",
            )
            outcome.total_ms = (time.perf_counter() - started) * 1000
            return outcome
        asked = {qid: ask.questions[qid] for qid in found}
        body = {"model": ", ".join(sorted(m for m in models if m)) or ask.model, "answers": found}
        try:
            outcome.checked = answers.check_response(
                asked, body, price_per_million=0, rules=self.source.rules
            )
        except answers.AnswerError as exc:
            outcome.error = DecisionError(502, exc.detail)
        outcome.total_ms = (time.perf_counter() - started) * 1000
        return outcome
