"""Replay: answers recorded from earlier live calls for the same question words, state and model.

It answers every question whose canonical content and state are unchanged since it was last
asked (under any id, in any version) and reports the rest as not recorded. It never guesses and
never touches the network."""

from __future__ import annotations

import time

from django.conf import settings
from django.db.models import Q

from questions import answers
from questions.backends.base import Ask, DecisionError, Outcome


class RecordedBackend:
    name = "recorded"
    live = False

    def configured(self) -> bool:
        return True

    def missing_configuration(self) -> str:
        return ""

    def default_model(self) -> str:
        return settings.DECISIONS_MODEL

    def ask(self, ask: Ask) -> Outcome:
        from questions.models import DecisionAnswer

        started = time.perf_counter()
        outcome = Outcome(backend=self.name, model_asked=ask.model, live=False)
        state_sha = ask.state_sha256
        by_sha = {q.sha256: qid for qid, q in ask.questions.items()}
        rows = (
            DecisionAnswer.objects.filter(question_sha256__in=list(by_sha), state_sha256=state_sha)
            .filter(Q(model=ask.model) | Q(model_answered=ask.model))
            .order_by("-id")
            .values("question_sha256", "answer", "model_answered")
        )
        found: dict[str, dict] = {}
        models = set()
        for row in rows:
            qid = by_sha[row["question_sha256"]]
            if qid not in found:
                found[qid] = row["answer"]
                models.add(row["model_answered"])
        outcome.missing = [qid for qid in ask.questions if qid not in found]
        if not found:
            outcome.error = DecisionError(
                404,
                "Nothing recorded for these questions and this state with model "
                f"{ask.model}: ask a live backend first.",
            )
            outcome.total_ms = (time.perf_counter() - started) * 1000
            return outcome
        asked = {qid: ask.questions[qid] for qid in found}
        body = {"model": ", ".join(sorted(m for m in models if m)) or ask.model, "answers": found}
        try:
            outcome.checked = answers.check_response(asked, body, price_per_million=0)
        except answers.AnswerError as exc:
            outcome.error = DecisionError(502, exc.detail)
        outcome.total_ms = (time.perf_counter() - started) * 1000
        return outcome
