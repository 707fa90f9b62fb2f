"""Suggestions as the editor, the command line and the review read them: which questions of a
version its last run failed (the cards that offer "Suggest rewordings"), a suggestion's
candidates with their word diffs and proofs, and the suggestion a version was made from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from questions.core import diff, metrics, proof, rewording
from questions.core.rewording import PROVEN, REFUSED, SAME, UNCHANGED, USABLE
from questions.models import BatchRun, RunReport, Suggestion, Version


def failing_by_question(version: Version) -> tuple[int | None, dict[str, int]]:
    """The version's last finished run (its id) and, per question it checked, how many of its
    states missed the expected answer: read in one query from the report the run stored when
    it finished (a run that stored none offers nothing)."""
    found = (
        RunReport.objects.filter(
            run__version=version,
            run__kind=BatchRun.PLAIN,
            run__status=BatchRun.Status.DONE,
            against=None,
        )
        .order_by("-run_id")
        .values_list("run_id", "data")
        .first()
    )
    if found is None:
        return None, {}
    run, data = found
    report = metrics.report_from_json(data)
    return run, {
        qid: q.checked - q.passed for qid, q in report.questions.items() if q.checked > q.passed
    }


def latest_suggestion(version: Version, question: str) -> Suggestion | None:
    return (
        Suggestion.objects.filter(version=version, question=question)
        .select_related("run", "applied_version", "version__question_set")
        .order_by("-id")
        .first()
    )


#: what a candidate that was not proven is called, by its status
UNPROVEN = {REFUSED: "refused", UNCHANGED: "changes nothing", SAME: "a repeat"}


@dataclass
class CandidateView:
    """One candidate as a page or a command shows it."""

    number: int
    status: str
    verdict: str | None
    reason: str
    why: str
    lints: list[str]
    changes: list[diff.Change]
    proof: dict[str, Any] | None
    question: dict[str, Any] | None = None
    #: whether a draft may be made of it now: usable, and proven (or the suggestion ended)
    ready: bool = False

    @property
    def label(self) -> str:
        """Its verdict, or why it has none ("pending" until it is proven)."""
        return self.verdict or UNPROVEN.get(self.status, "pending")

    @property
    def usable(self) -> bool:
        return self.status in USABLE

    @property
    def better(self) -> bool:
        return self.verdict == proof.BETTER

    @property
    def difference_words(self) -> str:
        """ "+36 points [+13, +55]", or "" before it is proven or with nothing paired."""
        p = self.proof or {}
        if p.get("difference") is None:
            return ""
        return (
            f"{rewording.points(p['difference'])} points "
            f"{rewording.interval_points(p.get('difference_interval'))}"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "number": self.number,
            "status": self.status,
            "verdict": self.verdict,
            "reason": self.reason,
            "why": self.why,
            "lints": self.lints,
            "changes": [
                {
                    "label": c.label,
                    "kind": c.kind,
                    "before": diff.sides(c.segments)[0],
                    "after": diff.sides(c.segments)[1],
                    "word_diff": diff.word_diff(c.segments),
                }
                for c in self.changes
            ],
            "proof": self.proof,
            "question": self.question,
        }


@dataclass
class SuggestionView:
    suggestion: Suggestion
    candidates: list[CandidateView]
    evidence: list[dict[str, Any]] = field(default_factory=list)

    @property
    def better(self) -> list[CandidateView]:
        return [c for c in self.candidates if c.better]


def candidate_views(suggestion: Suggestion) -> list[CandidateView]:
    """Its candidates in their stored order (ranked by their proof once it is done), each with
    its changes against the question it rewords."""
    before = suggestion.plan.get("before") or {}
    out = []
    for c in suggestion.candidates:
        after = c.get("question")
        changes = diff.question_diff(suggestion.question, before, after).changes if after else []
        out.append(
            CandidateView(
                number=c["number"],
                status=c["status"],
                verdict=c.get("verdict"),
                reason=c.get("reason") or "",
                why=c.get("why") or "",
                lints=list(c.get("lints") or []),
                changes=changes,
                proof=c.get("proof"),
                question=after,
                ready=c["status"] == PROVEN or (c["status"] in USABLE and suggestion.finished),
            )
        )
    return out


def suggestion_view(suggestion: Suggestion) -> SuggestionView:
    return SuggestionView(suggestion, candidate_views(suggestion), list(suggestion.evidence))


@dataclass
class MadeFrom:
    """What the review shows of a version made from a suggestion."""

    suggestion: Suggestion
    candidate: CandidateView
    words: str
    as_suggested: bool


def made_from(version: Version) -> MadeFrom | None:
    """The suggestion `version` was made from ("Use this", `suggest --apply`), the candidate,
    its proof in words, and whether the question still reads as suggested; None when it was
    not made so."""
    suggestion = (
        Suggestion.objects.filter(applied_version=version).select_related("version").first()
    )
    if suggestion is None:
        return None
    number = suggestion.applied_candidate
    found = next((c for c in candidate_views(suggestion) if c.number == number), None)
    stored = suggestion.candidate(number) if number else None
    if found is None or stored is None:
        return None
    current = version.document.get(suggestion.question)
    return MadeFrom(
        suggestion=suggestion,
        candidate=found,
        words=rewording.candidate_proof_words(
            run=suggestion.run_id or suggestion.plan.get("run"), candidate=stored
        ),
        as_suggested=current == found.question,
    )
