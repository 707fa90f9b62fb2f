"""Replay: answers recorded from earlier live calls through one live backend, for the same
question words, state and model.

`recorded:<backend>` (e.g. `recorded:openrouter`) replays only what `<backend>` answered;
`recorded` alone is `recorded:typesafe`, the console's default wire. It answers every question
whose canonical content and state were answered before (under any id, in any version; two ids
with the same words both get the recorded answer), re-checks each answer by the rules of the
wire that gave it, and reports the rest as not recorded. It never guesses and never touches the
network: a state with nothing recorded for the model asked is a 404 that names the models its
questions were recorded with, if any, and how to ask for one (`--model`)."""

from __future__ import annotations

import time

from django.db.models import Q

from questions.core import answers
from questions.engine.backends.base import Ask, DecisionError, Outcome

NAME = "recorded"
DEFAULT_SOURCE = "typesafe"
#: how many recorded models a 404 names
MODELS_SHOWN = 5


class RecordedBackend:
    live = False

    def __init__(self, source: str = DEFAULT_SOURCE):
        from questions.engine.backends.http import LIVE

        self.source = LIVE[source]()  # KeyError for a wire that is not live
        self.name = NAME if source == DEFAULT_SOURCE else f"{NAME}:{source}"

    @property
    def calibrated(self) -> bool:
        """A replay is as calibrated as the wire it replays."""
        return self.source.calibrated

    @property
    def answers_from(self) -> str:
        """What a replay's answers come from: the wire it replays, recorded earlier."""
        return f"{self.source.answers_from}, recorded"

    def configured(self) -> bool:
        return True

    def missing_configuration(self) -> str:
        return ""

    def default_model(self) -> str:
        return self.source.default_model()

    def _rows(self, questions: dict, state_sha256s: set[str], model: str):
        from questions.models import DecisionAnswer

        return (
            DecisionAnswer.objects.filter(
                question_sha256__in={q.sha256 for q in questions.values()},
                state_sha256__in=state_sha256s,
                decision__backend=self.source.name,
            )
            .filter(Q(model=model) | Q(model_answered=model))
            .order_by("-id")
            .values("state_sha256", "question_sha256", "answer", "model_answered")
        )

    def _other_models(self, questions: dict, state_sha256: str) -> list[str]:
        """The models these questions were recorded with about this state through this wire,
        whatever model was asked (asked and answered, sorted): for a 404 to name."""
        from questions.models import DecisionAnswer

        rows = (
            DecisionAnswer.objects.filter(
                question_sha256__in={q.sha256 for q in questions.values()},
                state_sha256=state_sha256,
                decision__backend=self.source.name,
            )
            .order_by()
            .values_list("model", "model_answered")
            .distinct()
        )
        return sorted({model for pair in rows for model in pair if model})

    def ask(self, ask: Ask) -> Outcome:
        started = time.perf_counter()
        rows = self._rows(ask.questions, {ask.state_sha256}, ask.model)
        outcome = self._outcome(ask.questions, ask.model, list(rows), started)
        if outcome.status == 404:  # nothing for this model: say what there is instead
            self._name_others(outcome, self._other_models(ask.questions, ask.state_sha256))
        return outcome

    def ask_many(self, questions: dict, state_sha256s: set[str], model: str) -> dict[str, Outcome]:
        """What `ask` gives for each of many states (by state hash), in one query; a 404 here
        names no other model (a try's replayed questions and a compare column read answers,
        not reasons)."""
        started = time.perf_counter()
        by_state: dict[str, list[dict]] = {sha: [] for sha in state_sha256s}
        for row in self._rows(questions, state_sha256s, model):
            by_state[row["state_sha256"]].append(row)
        return {
            sha: self._outcome(questions, model, rows, started) for sha, rows in by_state.items()
        }

    def _name_others(self, outcome: Outcome, models: list[str]) -> None:
        """A 404 that says which models were recorded instead, and how to ask for one."""
        if not models:
            return
        shown = ", ".join(models[:MODELS_SHOWN])
        more = f" and {len(models) - MODELS_SHOWN} more" if len(models) > MODELS_SHOWN else ""
        outcome.error = DecisionError(
            404,
            f"Nothing recorded through {self.source.name} for these questions and this state "
            f"with model {outcome.model_asked}; they were recorded with {shown}{more}: replay "
            f"one of those (--model {models[0]} on the command line).",
        )

    def _outcome(self, questions: dict, model: str, rows: list[dict], started: float) -> Outcome:
        """The replay of one state from its recorded rows, newest first."""
        outcome = Outcome(
            backend=self.name, model_asked=model, live=False, calibrated=self.calibrated
        )
        sha_of = {qid: q.sha256 for qid, q in questions.items()}
        newest: dict[str, dict] = {}  # question sha256 → its newest recorded answer
        for row in rows:
            newest.setdefault(row["question_sha256"], row)
        # every id is answered, also two ids that carry the same words
        hits = {qid: newest[sha] for qid, sha in sha_of.items() if sha in newest}
        found = {qid: row["answer"] for qid, row in hits.items()}
        models = {row["model_answered"] for row in hits.values()}
        outcome.missing = [qid for qid in questions if qid not in found]
        if not found:
            outcome.error = DecisionError(
                404,
                f"Nothing recorded through {self.source.name} for these questions and this state "
                f"with model {model}: ask {self.source.name} live first.",
            )
            outcome.total_ms = (time.perf_counter() - started) * 1000
            return outcome
        asked = {qid: questions[qid] for qid in found}
        body = {"model": ", ".join(sorted(m for m in models if m)) or model, "answers": found}
        try:
            outcome.checked = answers.check_response(
                asked, body, price_per_million=0, rules=self.source.rules
            )
        except answers.AnswerError as exc:
            outcome.error = DecisionError(502, exc.detail)
        outcome.total_ms = (time.perf_counter() - started) * 1000
        return outcome
