"""`questions suggest`: rewordings of one question drafted through the `llm` wire from a run's
failing training states and their attribution, each proven on the held-out states
(`questions.services.suggestions`), listed as word diffs ranked by their proof; and
`--apply K`, which makes a new draft of candidate K with where it came from on its record."""

from __future__ import annotations

from typing import Any

from questions import roles, services
from questions.cli.base import (
    EXIT_FAILED,
    EXIT_NOT_PROVEN,
    EXIT_OK,
    Console,
    Unusable,
    acting_user,
    add_json,
    add_set,
    bad_input,
)
from questions.core import controls, diff, rewording
from questions.engine import backends
from questions.models import Suggestion, Version
from questions.selectors import suggestions as reads
from questions.services import proofs, suggestions

#: `suggest`'s exit status by what it found: a candidate proven better, or none
EXITS = {True: EXIT_OK, False: EXIT_NOT_PROVEN}


def add_parsers(sub: Any) -> None:
    """The `suggest` subcommand."""
    suggest = sub.add_parser(
        "suggest",
        help="draft rewordings of a question from its failing states and prove each",
        description="Draft K rewordings of question Q of version N through the llm backend "
        "(a chat model answering a JSON schema of Q's own ids, so only its words can change) "
        "from the training states the version's last run answered wrong and the attribution "
        "of their wrong answers; check each by the contract and the lints; then prove each on "
        "the held-out labelled states as `prove` does (the version's words asked once, each "
        "candidate's beside them, paired). The plan — its calls (attribution, drafting, the "
        "proofs) and its cost where the backends price them — goes to stderr before anything "
        "is asked. The candidates are listed ranked by their proof (better, not proven, worse) "
        "as word diffs: [-gone-]{+new+}. Nothing changes until you apply one: --apply K makes "
        "a new draft of candidate K with where it came from on its record.",
        epilog="Exit 0 when a candidate is proven better, 3 when none is (a candidate that "
        "wins on the training states but not on the held-out ones is not proven), 1 when the "
        "suggestion failed (drafting failed, say) or an --apply is refused, 2 for bad input "
        "(no such set, version or question, no failing training state, no held-out state to "
        "prove on, a plan above --max-calls). --dry-run prints the plan and asks nothing. "
        "--json prints {set, version, question, suggestion, run, backend, model, draft_model, "
        "status, detail, calls, failed_calls, draft_cost, plan, evidence, candidates: [{number, "
        "status, verdict, reason, why, lints, changes: [{label, kind, before, after, "
        "word_diff}], proof (prove's per-question object, or null), question}]}; with --apply "
        "{set, version, parent, suggestion, candidate, provenance}.",
    )
    add_set(suggest)
    suggest.add_argument("--version", required=True, type=int, dest="number", metavar="N")
    suggest.add_argument("--question", required=True, metavar="Q")
    suggest.add_argument(
        "--candidates",
        type=int,
        default=rewording.DEFAULT_CANDIDATES,
        metavar="K",
        help=f"rewordings to draft (default {rewording.DEFAULT_CANDIDATES}, "
        f"at most {rewording.MAX_CANDIDATES})",
    )
    suggest.add_argument(
        "--backend",
        choices=list(backends.LIVE),
        help="the live backend that attributes and proves (default: the run's)",
    )
    suggest.add_argument(
        "--shuffles",
        type=int,
        default=proofs.DEFAULT_SHUFFLES,
        metavar="K",
        help=f"shuffles of each candidate for its floor (default {proofs.DEFAULT_SHUFFLES}, "
        f"at most {controls.MAX_VARIANTS})",
    )
    suggest.add_argument(
        "--max-calls",
        type=int,
        default=suggestions.DEFAULT_MAX_CALLS,
        metavar="M",
        help=f"refuse a plan that would ask more (default {suggestions.DEFAULT_MAX_CALLS})",
    )
    suggest.add_argument("--dry-run", action="store_true", help="print the plan, ask nothing")
    suggest.add_argument("--apply", type=int, metavar="K", help="make a draft of candidate K")
    suggest.add_argument(
        "--suggestion",
        type=int,
        metavar="ID",
        help="with --apply: the suggestion (default: the question's latest that finished)",
    )
    suggest.add_argument("--user", metavar="U", help="with --apply: the author of the draft")
    add_json(suggest)
    suggest.set_defaults(handler=do_suggest)


def do_suggest(
    cli: Console,
    *,
    slug: str,
    number: int,
    question: str,
    apply: int | None,
    json: bool,
    **options: Any,
) -> int:
    version = Version.objects.of(slug, number).select_related("question_set").first()
    if version is None:
        return bad_input(cli, f"{slug} has no version {number}.", as_json=json, status=404)
    if apply is not None:
        return _apply(cli, version, question, apply, json=json, **options)
    if options["suggestion"] is not None or options["user"] is not None:
        raise Unusable("--suggestion and --user go with --apply")
    try:
        plan = suggestions.suggestion_plan(
            version=version,
            question=question,
            user=roles.OPERATOR,
            backend=options["backend"] or "",
            candidates=options["candidates"],
            shuffles=options["shuffles"],
            max_calls=options["max_calls"],
        )
    except services.Refusal as exc:
        return bad_input(cli, str(exc), as_json=json, status=exc.status)
    cli.stderr.write(f"suggesting for {slug}: {plan.words()}")
    for note in plan.notes:
        cli.stderr.write(f"note: {note}")
    if options["dry_run"]:
        if json:
            cli.emit_json({"set": slug, "version": number, "plan": plan.as_json()})
        return EXIT_OK
    made = suggestions.suggestion_start(plan=plan, user=roles.OPERATOR, enqueue=False)
    done = suggestions.suggestion_execute(made.pk)
    view = reads.suggestion_view(done)
    if json:
        cli.emit_json(_as_json(view))
    else:
        _show(cli, view)
    if done.status != Suggestion.Status.DONE:
        return EXIT_FAILED
    return EXITS[bool(view.better)]


def _as_json(view: reads.SuggestionView) -> dict[str, Any]:
    s = view.suggestion
    return {
        "set": s.version.question_set.slug,
        "version": s.version.number,
        "question": s.question,
        "suggestion": s.pk,
        "run": s.run_id,
        "backend": s.backend,
        "model": s.model,
        "draft_model": s.draft_model_answered or s.draft_model,
        "status": s.status,
        "detail": s.detail,
        "calls": s.calls_done,
        "failed_calls": s.calls_failed,
        "draft_cost": s.draft_cost,
        "plan": s.plan,
        "evidence": view.evidence,
        "candidates": [c.as_json() for c in view.candidates],
    }


def _show(cli: Console, view: reads.SuggestionView) -> None:
    s = view.suggestion
    write = cli.stdout.write
    write(
        f"{s.version.question_set.slug} v{s.version.number} `{s.question}`: suggestion {s.pk} "
        f"from run {s.run_id}, drafted through llm ({s.draft_model_answered or s.draft_model}), "
        f"proven through {s.backend} ({s.model}) on the held-out states only"
    )
    write(f"  asked: {s.calls_done} calls, {s.calls_failed} failed; {s.status}")
    if s.detail:
        write(f"  {s.detail}")
    for e in view.evidence:
        for f in e["findings"]:
            write(f"  evidence: {f['says']}")
    for c in view.candidates:
        write("")
        headline = f"candidate {c.number}: {c.label}"
        if c.difference_words:
            headline += f" — {c.difference_words}"
        write(headline)
        if c.reason:
            write(f"  {c.reason}")
        if c.why:
            write(f"  why: {c.why}")
        for change in c.changes:
            write(f"  {change.label}: {diff.word_diff(change.segments)}")
        _show_proof(write, c.proof, s.version.number)
        for lint in c.lints:
            write(f"  lint: {lint}")
    usable = [c for c in view.candidates if c.usable]
    if usable and s.applied_version_id is None:
        write("")
        write(
            f"apply one: manage.py questions suggest --set {s.version.question_set.slug} "
            f"--version {s.version.number} --question {s.question} --apply "
            f"{usable[0].number} --user U"
        )


def _show_proof(write: Any, found: dict[str, Any] | None, number: int) -> None:
    if not found:
        return
    write(f"  v{number}:      {found['version']['words']}")
    write(f"  candidate: {found['candidate']['words']}")
    if found["n"]:
        write(f"  {found['up']} up, {found['down']} down, McNemar p = {found['mcnemar_p']:.2g}")
    write(f"  shuffled floor: {found['floor_words']}")
    if found["few_states_words"]:
        write(f"  note: {found['few_states_words']}")


def _apply(
    cli: Console, version: Version, question: str, number: int, *, json: bool, **options: Any
) -> int:
    author = acting_user(options["user"])
    found = Suggestion.objects.filter(version=version, question=question)
    if options["suggestion"] is not None:
        found = found.filter(pk=options["suggestion"])
    else:
        found = found.filter(status=Suggestion.Status.DONE)
    suggestion = found.order_by("-id").first()
    if suggestion is None:
        return cli.fail(
            f"v{version.number} has no finished suggestion for `{question}` to apply.",
            as_json=json,
            status=404,
        )
    made = suggestions.suggestion_apply(suggestion=suggestion, number=number, author=author)
    said = suggestions.provenance(suggestion, suggestion.candidate(number))
    if json:
        cli.emit_json(
            {
                "set": version.question_set.slug,
                "version": made.number,
                "parent": version.number,
                "suggestion": suggestion.pk,
                "candidate": number,
                "provenance": said,
            }
        )
    else:
        cli.stdout.write(f"v{made.number} (a draft, from v{version.number}): {said}")
    return EXIT_OK
