"""`questions holdout` and `questions prove`: the subcommands of the console's command line that
show or set a set's held-out split (`questions.core.holdout`) and prove a candidate wording
against a version on the held-out labelled states (`questions.services.proofs`)."""

from __future__ import annotations

from typing import Any

from questions import roles, services
from questions.cli.base import (
    EXIT_NOT_PROVEN,
    EXIT_OK,
    Console,
    Unusable,
    acting_user,
    add_json,
    add_set,
    bad_input,
    read_json_file,
)
from questions.core import controls, holdout, proof, spec, stats
from questions.engine import backends
from questions.models import QuestionSet, Version
from questions.selectors.holdout import holdout_split
from questions.services import proofs

#: `prove`'s exit status by the proof's verdict
EXITS = {proof.BETTER: EXIT_OK, proof.WORSE: 1, proof.NOT_PROVEN: EXIT_NOT_PROVEN}


def add_parsers(sub: Any) -> None:
    """The `holdout` and `prove` subcommands."""
    split = sub.add_parser(
        "holdout",
        help="show a set's held-out split, or set its share (a reviewer)",
        description="Print how many of SLUG's sample states are held out for proofs and how "
        "many are left for drafting, each with how many of them are labelled. A state's side "
        "follows from its id and the set's (a seeded hash), so it never changes as states "
        "are added; raising the share only moves states from training into the held-out "
        "side. --share P sets the share, a whole percent from "
        f"{holdout.LEAST_SHARE} to {holdout.MOST_SHARE} (default {holdout.DEFAULT_SHARE}).",
        epilog="Setting the share is a reviewer's (--user; 403 otherwise); a share out of "
        "range exits 1 and says the range. --json prints {set, share, states, held_out, "
        "training, labelled_held_out, labelled_training}.",
    )
    add_set(split)
    split.add_argument("--share", type=int, metavar="P", help="held out, in whole percent")
    split.add_argument("--user", metavar="U", help="the reviewer who sets it")
    add_json(split)
    split.set_defaults(handler=do_holdout)

    prove = sub.add_parser(
        "prove",
        help="prove a candidate wording against a version on the held-out states",
        description="Ask version N and FILE (a question-set document, e.g. a draft with one "
        "question reworded) about SLUG's held-out labelled states only — both through the "
        "same backend, state by state, so each state is a pair — and judge each question "
        "the candidate changed: both pass rates with their 95 % intervals and n, the paired "
        "difference with its interval, the flips up and down, McNemar's exact p, and the "
        "candidate's shuffled floor (its choice descriptions shuffled among its options). "
        "The verdict: better (the difference's interval lies above 0), worse (below 0) or "
        "not proven. Unchanged questions are not asked. The plan (states, calls, cost) goes "
        "to stderr before anything is asked.",
        epilog="Exit 0 when every changed question is better, 1 when any is worse, 3 when "
        "none is worse but some is not proven, 2 for bad input (no such set or version, a "
        "FILE that is not JSON or breaks the contract, a candidate that changes nothing, a "
        "plan above --max-calls). A proof on fewer than 20 held-out states says so. Every "
        "call is recorded: --backend recorded replays a proof without a call. --json prints "
        "{set, version, candidate, backend, model, holdout, states, calls, failed_calls, "
        "verdict, questions: {ID: {type, verdict, n, version, candidate (each {passed, "
        "pass_rate, pass_rate_interval, words}), difference, difference_interval, up, down, "
        "mcnemar_p, unpaired, few_states, few_states_words, shuffled_floor ({floor, "
        "floor_interval, floor_checked, real_pass_rate, real_checked, no_signal} or null)}}, "
        "unchanged, added, removed, notes}.",
    )
    add_set(prove)
    prove.add_argument("--version", required=True, type=int, dest="number", metavar="N")
    prove.add_argument("--candidate", required=True, metavar="FILE")
    prove.add_argument("--backend", default=backends.DEFAULT, choices=list(backends.NAMES))
    prove.add_argument("--model", help="the model to ask (default: the backend's)")
    prove.add_argument(
        "--shuffles",
        type=int,
        default=proofs.DEFAULT_SHUFFLES,
        metavar="K",
        help=f"shuffles of the candidate for its floor (default {proofs.DEFAULT_SHUFFLES}, "
        f"at most {controls.MAX_VARIANTS}; 0: none)",
    )
    prove.add_argument(
        "--max-calls",
        type=int,
        default=proofs.DEFAULT_MAX_CALLS,
        metavar="M",
        help=f"refuse a proof that would ask more (default {proofs.DEFAULT_MAX_CALLS})",
    )
    add_json(prove)
    prove.set_defaults(handler=do_prove)


def do_holdout(
    cli: Console, *, slug: str, share: int | None, user: str | None, json: bool, **_: Any
) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    if share is not None:
        reviewer = acting_user(user) if user else roles.OPERATOR
        question_set = proofs.holdout_configure(
            question_set=question_set, user=reviewer, share=share
        )
    elif user is not None:
        raise Unusable("--user goes with --share")
    found = holdout_split(question_set)
    if json:
        cli.emit_json({"set": slug, **found.as_json()})
    else:
        cli.stdout.write(f"{slug}: {found.words()}")
    return EXIT_OK


def do_prove(
    cli: Console,
    *,
    slug: str,
    number: int,
    candidate: str,
    backend: str,
    model: str | None,
    shuffles: int,
    max_calls: int,
    json: bool,
    **_: Any,
) -> int:
    version = Version.objects.of(slug, number).select_related("question_set").first()
    if version is None:
        return bad_input(cli, f"{slug} has no version {number}.", as_json=json, status=404)
    try:
        document = read_json_file(candidate)
        plan = proofs.proof_plan(
            version=version,
            candidate=document,
            backend=backend,
            user=roles.OPERATOR,
            model=model,
            shuffles=shuffles,
            max_calls=max_calls,
        )
    except Unusable as exc:
        return bad_input(cli, str(exc), as_json=json)
    except services.InvalidContent as exc:
        shown = "; ".join(f"{spec.shown_path(e.loc)}: {e.message}" for e in exc.errors[:5])
        return bad_input(cli, f"{candidate} is no valid question set: {shown}", as_json=json)
    except services.Refusal as exc:
        return bad_input(cli, str(exc), as_json=json, status=exc.status)
    cli.stderr.write(f"proving {candidate} against {slug} v{number}: {plan.words()}")
    found = proofs.proof_run(plan=plan, user=roles.OPERATOR)
    if json:
        cli.emit_json(_as_json(plan, found, candidate))
    else:
        _show(cli, plan, found, candidate)
    return EXITS[found.verdict]


def _as_json(plan: proofs.ProofPlan, found: proof.Proof, candidate: str) -> dict[str, Any]:
    return {
        "set": plan.version.question_set.slug,
        "version": plan.version.number,
        "candidate": candidate,
        "backend": plan.backend,
        "model": plan.model,
        "holdout": plan.split.as_json(),
        "states": found.states,
        "calls": found.calls,
        "failed_calls": found.failed_calls,
        "verdict": found.verdict,
        "questions": {qid: q.as_json() for qid, q in found.questions.items()},
        "unchanged": found.changes.unchanged,
        "added": found.changes.added,
        "removed": found.changes.removed,
        "notes": found.notes,
    }


def _show(cli: Console, plan: proofs.ProofPlan, found: proof.Proof, candidate: str) -> None:
    write = cli.stdout.write
    v = f"v{plan.version.number}"
    write(
        f"{plan.version.question_set.slug}: {candidate} against {v} through {plan.backend} "
        f"({plan.model}), on the held-out states only"
    )
    write(f"  split: {plan.split.words()}")
    write(f"  asked: {found.calls} calls, {found.failed_calls} failed")
    width = max(len(v), len("candidate"))
    for qid, q in found.questions.items():
        p = q.paired
        write("")
        write(f"{qid} ({q.qtype}): {q.verdict}")
        write(f"  {v:<{width}}  {stats.rate_words(p.passed_before, p.n)}")
        write(f"  {'candidate':<{width}}  {stats.rate_words(p.passed_after, p.n)}")
        if p.n:
            write(
                f"  difference: {p.difference_words()}; {q.up} up, {q.down} down, "
                f"McNemar p = {p.p_value:.2g}"
            )
        write(f"  shuffled floor: {q.floor_words()}")
        if q.unpaired:
            write(f"  {q.unpaired} held-out states left out: a call failed")
        if q.few:
            write(f"  note: {q.few_words()}")
    if found.changes.unchanged:
        write("")
        write(f"unchanged, not judged: {', '.join(found.changes.unchanged)}")
    for note in found.notes:
        write(f"note: {note}")
    write("")
    write(f"verdict: {found.verdict}")
