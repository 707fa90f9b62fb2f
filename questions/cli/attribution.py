"""`questions attribute`: the subcommand of the console's command line that asks which words
decide an answer — one state, one question or every question, each part left out in turn — in
the foreground, and prints what moved."""

from __future__ import annotations

from typing import Any

from questions import roles
from questions.cli.base import (
    Console,
    add_json,
    add_set,
    add_version_or_label,
    no_version,
    run_in_foreground,
)
from questions.core import attribution
from questions.engine import backends
from questions.models import BatchRun, Version
from questions.selectors import sets
from questions.services import attribution as attribution_services
from questions.services import batches as run_defaults


def add_parsers(sub: Any) -> None:
    """The `attribute` subcommand."""
    cmd = sub.add_parser(
        "attribute",
        help="which words decide an answer: leave one part out at a time, see what moves",
        description="Ask a version's question (or every question) about one sample state as "
        "written, R more times unchanged (the noise floor), and once with each part left out "
        "— each sentence of the instructions, each option's or level's description (and "
        "within a structured entry its what, not_for and each example), a noul's true and "
        "false cases, each top-level field of the state — live, and print per part the change "
        "in the probability of the answer given as written (for a score, in the score). Parts "
        "that move more than the floor are decisive. The calls and their estimated cost are "
        "printed before asking. Exit 1 when the call as written failed.",
    )
    add_set(cmd)
    add_version_or_label(cmd, required=True)
    cmd.add_argument("--state", required=True, metavar="NAME")
    cmd.add_argument("--question", metavar="ID", help="default: every question")
    cmd.add_argument("--backend", default="typesafe", choices=list(backends.NAMES))
    cmd.add_argument(
        "--repeats",
        type=int,
        default=attribution.DEFAULT_REPEATS,
        metavar="R",
        help=f"unchanged calls for the noise floor (default {attribution.DEFAULT_REPEATS}, "
        f"at most {attribution.MAX_REPEATS})",
    )
    cmd.add_argument(
        "--concurrency",
        type=int,
        default=run_defaults.DEFAULT_CONCURRENCY,
        metavar="K",
        help=f"default {run_defaults.DEFAULT_CONCURRENCY}",
    )
    add_json(cmd)
    cmd.set_defaults(handler=do_attribute)


def _delta(value: float | None) -> str:
    return "n/a (the call failed)" if value is None else f"{value:+.2f}"


def do_attribute(
    cli: Console,
    *,
    slug: str,
    number: int | None,
    label: str | None,
    state: str,
    question: str | None,
    backend: str,
    repeats: int,
    concurrency: int,
    json: bool,
    **_: Any,
) -> int:
    version = sets.version_named(slug, number=number, label=label)
    calls = 0

    def start(version: Version) -> BatchRun:
        nonlocal calls
        plan = attribution_services.attribution_plan(
            version=version,
            state=state,
            backend=backend,
            user=roles.OPERATOR,
            question=question,
            repeats=repeats,
        )
        cost = plan.estimated_cost
        cli.stderr.write(
            f"{plan.calls} calls via {backend} ({len(plan.plan.parts)} parts left out, "
            f"{plan.plan.repeats} repeats), estimated cost "
            + ("unknown" if cost is None else f"${cost:.6f}")
        )
        for skipped in plan.plan.skipped:
            cli.stderr.write(f"  not asked: {skipped.part.path}: {skipped.reason}")
        calls = plan.calls
        return attribution_services.attribution_start(
            plan=plan, user=roles.OPERATOR, concurrency=concurrency, enqueue=False
        )

    def show(run: BatchRun, reports: list[attribution.Report]) -> None:
        cli.stdout.write(
            f"run {run.pk}: attribution of {slug} v{version.number} on {state} via "
            f"{backend}: {calls} calls"
        )
        for r in reports:
            cli.stdout.write(_report_text(r))
        if _failed(reports):
            cli.stderr.write("The call as written failed: nothing to attribute.")

    def as_value(reports: list[attribution.Report]) -> Any:
        shapes = [r.as_json() for r in reports]
        return shapes[0] if question is not None else shapes

    return run_in_foreground(
        cli,
        version,
        missing=no_version(slug, number, label),
        start=start,
        summary=attribution_services.attribution_report,
        show=show,
        failed=_failed,
        as_json=json,
        as_value=as_value,
        progress=False,
    )


def _failed(reports: list[attribution.Report]) -> bool:
    """The call as written got no answer: there is nothing to attribute."""
    return any(r.answer is None for r in reports)


def _report_text(r: attribution.Report) -> str:
    if r.answer is None:
        return f"  {r.question}: the call as written failed"
    lines = [
        f"  {r.question} ({r.type}): answer {_answer(r)}, noise floor {r.noise_floor:.2f}, "
        f"{len(r.decisive)} of {len(r.findings)} parts decisive"
    ]
    for f in r.findings:
        mark = f"#{r.rank(f.part)} decisive" if f.decisive else "        "
        lines.append(f"    {mark:<12} {_delta(f.delta):>7}  {f.part.path}: {f.part.text[:60]}")
    return "\n".join(lines)


def _answer(r: attribution.Report) -> str:
    a = r.answer or {}
    if r.type == "choice":
        return f"{a['choice']} ({a['probabilities'][a['choice']]:.2f})"
    if r.type == "score":
        return f"score {a['score']}"
    return f"P(true) {a['noul']}"
