"""`questions compare`, `ask` and `batch`: the subcommands of the console's command line that
set answers side by side (`questions.selectors.comparison`), ask a set about one state, and run
a version over every sample state in the foreground and gate on it."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from questions import roles, services
from questions.cli.base import (
    EXIT_FAILED,
    EXIT_OK,
    Console,
    Unusable,
    add_json,
    add_set,
    add_version_or_label,
    no_version,
    read_json_file,
    run_in_foreground,
)
from questions.core import check, metrics, stats
from questions.engine import backends
from questions.models import BatchRun, QuestionSet, Version
from questions.selectors import comparison, comparison_formats, runs, sets
from questions.services import batches as run_defaults

#: the misses a run's summary prints, the most confidently wrong first (--json: all it lists)
MISSES_PRINTED = 10


def add_parsers(sub: Any) -> None:
    """The `compare`, `ask` and `batch` subcommands."""
    compare = sub.add_parser(
        "compare",
        help="answers side by side: batch runs, or versions through a backend",
        description="Columns are run:ID (a batch run) or vN:BACKEND (version N asked "
        "through BACKEND; a live backend needs --state). Each column is marked against "
        "the first: flips, distances, and passes against the expected answers.",
        epilog="Each cell is marked against the first column (* and the distance where an "
        "answer moved, a check or a cross against the expected answer); --csv and --json are "
        "the compare page's downloads, every state. A column that cannot be shown (no such "
        "run, a live backend over every state) exits 1; a column that is not run:ID or "
        "vN:BACKEND exits 2.",
    )
    add_set(compare)
    compare.add_argument(
        "--col", required=True, action="append", dest="columns", metavar="run:ID|vN:BACKEND"
    )
    compare.add_argument("--state", dest="state_name", metavar="NAME", help="one state")
    compare.add_argument(
        "--threshold",
        type=float,
        default=run_defaults.DEFAULT_THRESHOLD,
        help="a noul's true from",
    )
    compare_format = compare.add_mutually_exclusive_group()
    compare_format.add_argument("--csv", action="store_true")
    add_json(compare_format)
    compare.set_defaults(handler=do_compare)

    ask = sub.add_parser(
        "ask",
        help="ask a question set about a state, live or recorded",
        description="Ask the questions of a version (--set) or a file (--file) about a "
        "sample state (--state) or a state file (--state-file: its JSON value; null is a "
        "value). Prints the checked decision as JSON.",
        epilog="The decision: model, answers by question id, usage, cost, timing (provider_ms "
        "and total_ms as the console measured them; the runtime's own as runtime_timing), "
        "backend, calibrated (false through llm), the provider's request_id, an answer's "
        "flags. On failure it exits 1 and, with --json, prints {status, detail, "
        "provider_status_code?, provider_detail?} with the mapped 422/429/502/503/504. An "
        "invalid document or a missing key sends nothing. Every live call is recorded: "
        "--backend recorded replays what typesafe answered, recorded:runtime and "
        "recorded:openrouter what those wires answered. --label L asks the approved "
        "version the label points at.",
    )
    source = ask.add_mutually_exclusive_group(required=True)
    add_set(source, required=False)
    source.add_argument("--file", metavar="FILE")
    add_version_or_label(ask)
    states = ask.add_mutually_exclusive_group(required=True)
    states.add_argument("--state", dest="state_name", metavar="NAME")
    states.add_argument("--state-file", metavar="FILE")
    ask.add_argument("--backend", default=backends.DEFAULT, choices=list(backends.NAMES))
    ask.add_argument("--model", help="the model to ask (default: the backend's)")
    add_json(ask, "on failure, print JSON too")
    ask.set_defaults(handler=do_ask)

    batch = sub.add_parser(
        "batch",
        help="ask a version about every sample state, in the foreground, and gate on it",
        description="Run the batch engine in the foreground and print a summary; exit 1 "
        "when any state failed or the pass rate is below --min-pass-rate.",
        epilog="Progress goes to stderr. The summary lists the run's misses, the most "
        "confidently wrong first (1 − the probability the answer gave the expected one; "
        "the first 10, --json the first 20). --json gives {run, set, version, backend, "
        "calibrated, status, states, answered, failed, pass_rate, per_question, misses "
        "([{state, question, expected, answered, wrong_confidence}]), duration_ms} "
        "(pass_rate null when no state has expected answers; status failed when every "
        "state failed). --rerun-failed RUN starts a new run of RUN's own version, backend, "
        "model, concurrency, attempts and threshold over the states that failed in RUN "
        "(refused while RUN is still running, or when none failed).",
    )
    what_batch = batch.add_mutually_exclusive_group(required=True)
    add_set(what_batch, required=False)
    what_batch.add_argument(
        "--rerun-failed",
        type=int,
        metavar="RUN",
        help="a new run of run RUN's version, backend, model, concurrency and threshold "
        "over the states that failed in it",
    )
    add_version_or_label(batch)
    batch.add_argument("--backend", choices=list(backends.NAMES), help="default typesafe")
    batch.add_argument("--model")
    batch.add_argument(
        "--concurrency",
        type=int,
        metavar="K",
        help=f"default {run_defaults.DEFAULT_CONCURRENCY}",
    )
    batch.add_argument("--tag", help="only the sample states with this tag")
    batch.add_argument(
        "--threshold",
        type=float,
        help=f"a noul at or above this is true (default {run_defaults.DEFAULT_THRESHOLD})",
    )
    batch.add_argument("--min-pass-rate", type=float, default=None, metavar="X")
    add_json(batch)
    batch.set_defaults(handler=do_batch)


def do_compare(
    cli: Console,
    *,
    slug: str,
    columns: list[str],
    state_name: str | None,
    threshold: float,
    csv: bool,
    json: bool,
    **_: Any,
) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    bad = [c for c in columns if not comparison.COLUMN.match(c)]
    if bad:
        raise Unusable(f"Unknown column {bad[0]!r}: use run:ID or vN:BACKEND.")
    if not 0 < threshold < 1:
        raise Unusable("--threshold lies strictly between 0 and 1")
    selection = comparison.Selection(columns=columns, threshold=threshold)
    if state_name is not None:
        state = question_set.sample_states.filter(name=state_name).first()
        if state is None:
            return cli.fail(f"{slug} has no sample state {state_name!r}.", as_json=json, status=404)
        selection.state = str(state.pk)
    built, streamed = comparison.stream(question_set, selection, roles.OPERATOR, ask_live=True)
    rows = list(streamed)  # every state, not one page of them
    problems = [f"{c.key}: {c.problem}" for c in built if c.problem]
    if problems:
        return cli.fail("; ".join(problems), as_json=json)
    if json:
        cli.stdout.write(comparison_formats.as_json(built, rows, selection))
    elif csv:
        cli.stdout.write(comparison_formats.as_csv(built, rows), ending="")
    else:
        cli.stdout.write(comparison_formats.as_text(built, rows, selection.noise))
    return EXIT_OK


def do_ask(
    cli: Console,
    *,
    slug,
    file,
    number,
    label,
    state_name,
    state_file,
    backend,
    model,
    json: bool,
    **_: Any,
) -> int:
    version = sample = None
    if file:
        if number is not None or label:
            raise Unusable("--version and --label go with --set, not --file")
        if state_name:
            raise Unusable("--state names a sample state of a set; with --file use --state-file")
        document = read_json_file(file)
    else:
        version = sets.version_named(slug, number=number, label=label)
        if version is None:
            return cli.fail(no_version(slug, number, label), as_json=json, status=404)
        document = version.document
    result = check.validate(document, limits=settings.DECISIONS_LIMITS)
    if result.document is None:
        shown = "; ".join(str(e) for e in result.errors[:5])
        return cli.fail(f"Nothing was sent: {shown}", as_json=json)
    questions = result.document.questions
    if state_file:
        state = read_json_file(state_file)
    else:
        if version is None:
            raise Unusable("--state needs --set")
        sample = version.question_set.sample_states.filter(name=state_name).first()
        if sample is None:
            return cli.fail(f"{slug} has no sample state {state_name!r}.", as_json=json, status=404)
        state = sample.state
    revision = sample.current_revision() if sample else None
    outcome = services.decision_ask(
        backend=backend,
        questions=questions,
        state=state,
        user=roles.OPERATOR,
        model=model,
        version=version,
        sample_state=revision,
    )
    if outcome.error:
        if json:
            cli.emit_json(outcome.error.to_json())
        else:
            cli.stderr.write(f"{outcome.error.status}: {outcome.error.detail}")
            if outcome.error.provider_detail:
                cli.stderr.write(f"provider said: {outcome.error.provider_detail}")
        return EXIT_FAILED
    cli.emit_json(outcome.to_json())
    return EXIT_OK


def do_batch(
    cli: Console,
    *,
    slug,
    number,
    label,
    backend,
    model,
    concurrency,
    tag,
    threshold,
    min_pass_rate,
    rerun_failed,
    json: bool,
    **_: Any,
) -> int:
    if min_pass_rate is not None and not 0 <= min_pass_rate <= 1:
        raise Unusable("--min-pass-rate is a fraction from 0 to 1")

    def below(summary: dict[str, Any]) -> bool:
        rate = summary["pass_rate"]
        return min_pass_rate is not None and rate is not None and rate < min_pass_rate

    def show(run: BatchRun, summary: dict[str, Any]) -> None:
        cli.stdout.write(
            f"run {run.pk}: {run.question_set.slug} v{run.version.number} via {run.backend}: "
            f"{summary['answered']}/{summary['states']} answered, {summary['failed']} failed, "
            f"pass rate {stats.rate_words(summary['passed'], summary['checked'])}, "
            f"{summary['duration_ms']} ms"
            + ("" if summary["calibrated"] else " (calibrated: false)")
        )
        for qid, q in summary["per_question"].items():
            if q["checked"]:
                cli.stdout.write(
                    f"  {qid}: {q['passed']}/{q['checked']} passed, "
                    f"{stats.rate_words(q['passed'], q['checked'])}"
                )
        if run.detail:  # why no state was answered (the commonest failure), once
            cli.stderr.write(run.detail)
        if summary["misses"]:
            cli.stdout.write("  misses, the most confidently wrong first:")
        for m in summary["misses"][:MISSES_PRINTED]:
            sure = m["wrong_confidence"]
            cli.stdout.write(
                f"    {m['state']} {m['question']}: expected "
                f"{metrics.expected_text(m['expected'])}, answered {m['answered']}"
                + ("" if sure is None else f" (sure of another answer: {sure:.2f})")
            )
        if below(summary):
            cli.stderr.write(
                f"pass rate {stats.rate_words(summary['passed'], summary['checked'])} "
                f"is below {min_pass_rate:.1%}"
            )

    if rerun_failed is None:
        subject: Any = sets.version_named(slug, number=number, label=label)
        missing = no_version(slug, number, label)

        def start(version: Version) -> BatchRun:
            return services.batch_create(
                version=version,
                backend=backend or backends.DEFAULT,
                user=roles.OPERATOR,
                concurrency=(
                    run_defaults.DEFAULT_CONCURRENCY if concurrency is None else concurrency
                ),
                tag=tag or "",
                threshold=run_defaults.DEFAULT_THRESHOLD if threshold is None else threshold,
                model=model,
                enqueue=False,
            )
    else:
        given = {
            "--version": number,
            "--label": label,
            "--backend": backend,
            "--model": model,
            "--concurrency": concurrency,
            "--tag": tag,
            "--threshold": threshold,
        }
        clashing = [flag for flag, value in given.items() if value is not None]
        if clashing:
            raise Unusable(
                f"--rerun-failed takes the run's own settings; drop {', '.join(clashing)}"
            )
        subject = BatchRun.objects.filter(pk=rerun_failed).first()
        missing = f"There is no run {rerun_failed}."

        def start(earlier: BatchRun) -> BatchRun:
            return services.batch_rerun_failed(run=earlier, user=roles.OPERATOR, enqueue=False)

    return run_in_foreground(
        cli,
        subject,
        missing=missing,
        start=start,
        summary=runs.run_summary,
        show=show,
        failed=lambda summary: bool(summary["failed"]) or below(summary),
        as_json=json,
    )
