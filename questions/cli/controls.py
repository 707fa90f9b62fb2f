"""`questions controls` and `questions drift`: the subcommands of the console's command line
that run a control or a drift run in the foreground, print what it found, and gate on it."""

from __future__ import annotations

from typing import Any

from questions import exports, roles
from questions.cli.base import (
    Console,
    Unusable,
    add_json,
    add_label,
    add_set,
    add_version_or_label,
    no_version,
    run_in_foreground,
)
from questions.core import controls, stats
from questions.engine import backends
from questions.models import BatchRun, Version
from questions.selectors import control_reports, runs, sets
from questions.services import batches as run_defaults
from questions.services import controls as control_services

#: an invariance check's verdict, as the CLI prints it
_VERDICTS = {True: "holds", False: "BROKEN", None: "n/a"}


def _rate(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1%}"


def _signed(value: float | None, percent: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.1%}" if percent else f"{value:+.3f}"


def add_parsers(sub: Any) -> None:
    """The `controls` and `drift` subcommands."""
    ctl = sub.add_parser(
        "controls",
        help="a shuffle control, order sensitivity or repeatability run, in the foreground",
        description="Ask a version about every sample state as written and in K variants "
        "(--shuffle K: option descriptions shuffled among a choice's options; --orders K: a "
        "choice's options reordered; --repeat R: the same call R times; --invariance: ids "
        "renamed, questions reordered, nouls negated, an option cloned, each question alone), "
        "live, and print per question what the control found. Exit status: 0 when every call "
        "answered and nothing was found; 1 when a call failed, a shuffle control finds a "
        "question whose words carry no signal, an invariance check is broken, or the control "
        "is refused (no such set or version, a replay backend, a bad count or seed: the reason "
        "printed; with --json {status, detail}); 2 when the command line cannot be parsed.",
        epilog="--shuffle K prints the real pass rate and the shuffled floor, --orders K the "
        "flip rate and the largest distance, --repeat R (2 to 20) the flip rate and the largest "
        "spread; K is 1 to 20, the seed 0 unless given. --json gives batch --json's summary of "
        "the real calls and control: {kind, title, count, seed, calls, no_signal: [question "
        "ids], questions: {id: {type, varied, real_pass_rate, real_checked, floor, "
        "floor_checked, no_signal, flip_rate, compared, largest_distance, largest_spread, "
        "mean_spread}}}. --invariance prints per question each check's verdict (holds, BROKEN, "
        "or n/a when no state was compared) and names the broken questions on stderr; its "
        "--json control is {kind: invariance, title, count, seed, calls, tolerance, broken: "
        "[question ids], "
        "questions: {id: {type, checks: {check: {compared, broken, broken_states, largest, "
        "holds}}}}}. Orders and repeat runs exit 1 only when a call failed: they measure, "
        "they do not gate.",
    )
    add_set(ctl)
    add_version_or_label(ctl)
    ctl.add_argument("--backend", required=True, choices=list(backends.NAMES))
    ctl.add_argument("--model", help="the model to ask (default: the backend's)")
    kind = ctl.add_mutually_exclusive_group(required=True)
    kind.add_argument("--shuffle", type=int, metavar="K")
    kind.add_argument("--orders", type=int, metavar="K")
    kind.add_argument("--repeat", type=int, metavar="R")
    kind.add_argument(
        "--invariance",
        action="store_true",
        help="ids renamed, questions reordered, nouls negated, an option cloned, each question "
        "alone: a verdict per question and check",
    )
    ctl.add_argument("--seed", type=int, default=0, metavar="X")
    ctl.add_argument(
        "--concurrency",
        type=int,
        default=run_defaults.DEFAULT_CONCURRENCY,
        metavar="K",
        help=f"default {run_defaults.DEFAULT_CONCURRENCY}",
    )
    add_json(ctl)
    ctl.set_defaults(handler=do_controls)

    drift = sub.add_parser(
        "drift",
        help="re-ask a label's approved version on another model and gate on the flips",
        description="Re-ask the approved version a label points at about its sample states "
        "on --model, and set the answers against the last finished run of that version on "
        "another model: flips, shifts (the decision kept, its probability moved past the "
        "noise floor), pass-rate and calibration deltas. Exit 1 when a call failed, the flip "
        "rate is above --max-flip-rate or the share of shifted answers above --max-shift.",
        epilog="--json gives the summary with model, baseline (run, model, pass_rate), "
        "compared, flips, flip_rate, pass_rate_delta, calibration (noul_brier, noul_ece, "
        "choice_brier, choice_ece, each before, after, delta) and per_question (compared, "
        "flip_rate, flipped_states, pass rates before and after and their delta; shifts, "
        "shift_rate and per question shifted_states and noise_floor). Exit 2 when "
        "--max-flip-rate or --max-shift is not a fraction from 0 to 1. With no run on the "
        "approved model yet it is refused (409): run the version on its model first.",
    )
    add_set(drift)
    add_label(drift, required=True)
    drift.add_argument("--model", required=True, metavar="NEW")
    drift.add_argument("--backend", choices=list(backends.NAMES), help="default: the baseline's")
    drift.add_argument("--max-flip-rate", type=float, default=None, metavar="X")
    drift.add_argument(
        "--max-shift",
        type=float,
        default=None,
        metavar="X",
        help="the largest share (0 to 1) of compared answers that may shift",
    )
    drift.add_argument("--concurrency", type=int, metavar="K")
    add_json(drift)
    drift.set_defaults(handler=do_drift)


def do_controls(
    cli: Console,
    *,
    slug: str,
    number: int | None,
    label: str | None,
    backend: str,
    model: str | None,
    shuffle: int | None,
    orders: int | None,
    repeat: int | None,
    invariance: bool = False,
    seed: int = 0,
    concurrency: int,
    json: bool,
    **_: Any,
) -> int:
    version = sets.version_named(slug, number=number, label=label)
    missing = no_version(slug, number, label)
    if invariance:
        return run_in_foreground(
            cli,
            version,
            missing=missing,
            start=lambda version: control_services.invariance_create(
                version=version,
                backend=backend,
                user=roles.OPERATOR,
                concurrency=concurrency,
                model=model,
                enqueue=False,
            ),
            summary=control_reports.invariance_summary,
            show=lambda run, summary: _show_invariance(cli, run, summary, version, backend),
            failed=lambda summary: bool(summary["failed"] or summary["control"]["broken"]),
            as_json=json,
        )
    kind, count = next(
        (k, n)
        for k, n in (
            (controls.SHUFFLE, shuffle),
            (controls.ORDERS, orders),
            (controls.REPEAT, repeat),
        )
        if n is not None
    )

    def show(run: BatchRun, summary: dict[str, Any]) -> None:
        control = summary["control"]
        cli.stdout.write(
            f"run {run.pk}: {control['title']} of {slug} v{version.number} via {backend} "
            f"({kind} {count}, seed {seed}): {summary['states']} states, "
            f"{control['calls']} calls, {summary['failed']} failed, "
            f"{summary['duration_ms']} ms"
            + ("" if summary["calibrated"] else " (calibrated: false)")
        )
        for qid, q in control["questions"].items():
            cli.stdout.write(f"  {qid} ({q['type']}): " + _line(kind, q))
        if control["no_signal"]:
            cli.stderr.write(f"{', '.join(control['no_signal'])}: {controls.NO_SIGNAL}")

    return run_in_foreground(
        cli,
        version,
        missing=missing,
        start=lambda version: control_services.control_create(
            version=version,
            backend=backend,
            user=roles.OPERATOR,
            kind=kind,
            count=count,
            seed=seed,
            concurrency=concurrency,
            model=model,
            enqueue=False,
        ),
        summary=control_reports.control_summary,
        show=show,
        failed=lambda summary: bool(summary["failed"] or summary["control"]["no_signal"]),
        as_json=json,
    )


def _show_invariance(
    cli: Console, run: BatchRun, summary: dict[str, Any], version: Version, backend: str
) -> None:
    control = summary["control"]
    cli.stdout.write(
        f"run {run.pk}: {control['title']} of {version.question_set.slug} v{version.number} "
        f"via {backend}: {summary['states']} states, {control['calls']} calls, "
        f"{summary['failed']} failed"
    )
    for qid, q in control["questions"].items():
        verdicts = ", ".join(f"{name} {_VERDICTS[c['holds']]}" for name, c in q["checks"].items())
        cli.stdout.write(f"  {qid} ({q['type']}): {verdicts}")
    if control["broken"]:
        cli.stderr.write(f"{', '.join(control['broken'])}: an invariance check is broken")


def do_drift(
    cli: Console,
    *,
    slug: str,
    label: str,
    model: str,
    backend: str | None,
    max_flip_rate: float | None,
    concurrency: int | None,
    json: bool,
    max_shift: float | None = None,
    **_: Any,
) -> int:
    for name, bound in (("--max-flip-rate", max_flip_rate), ("--max-shift", max_shift)):
        if bound is not None and not 0 <= bound <= 1:
            raise Unusable(f"{name} is a fraction from 0 to 1")
    version = exports.exportable_version(slug, label=label)

    def above(summary: dict[str, Any]) -> bool:
        rate = summary.get("flip_rate")
        return max_flip_rate is not None and rate is not None and rate > max_flip_rate

    def shifted_above(summary: dict[str, Any]) -> bool:
        shifted = summary.get("shift_rate")
        return max_shift is not None and shifted is not None and shifted > max_shift

    def show(run: BatchRun, summary: dict[str, Any]) -> None:
        rate, shifted = summary.get("flip_rate"), summary.get("shift_rate")
        base = summary["baseline"]
        cli.stdout.write(
            f"run {run.pk}: drift of {slug} {label} (v{version.number}) from "
            f"{base['model']} (run {base['run']}) to {model}: "
            f"{summary['flips']}/{summary['compared']} answers flipped "
            f"({_rate(rate)}), {summary['shifts']} shifted ({_rate(shifted)}), "
            f"pass rate {stats.rate_words(base['passed'], base['checked'])}"
            f" → {stats.rate_words(summary['passed'], summary['checked'])}"
            + ("" if summary["calibrated"] else " (calibrated: false)")
        )
        paired = runs.paired_verdicts(run.baseline, run)["overall"]
        change = paired.difference_words()
        cli.stdout.write(f"  paired, overall: {change + ' — ' if change else ''}{paired.words()}")
        for name, c in summary["calibration"].items():
            if c["delta"] is not None:
                cli.stdout.write(
                    f"  {name}: {c['before']:.3f} → {c['after']:.3f} "
                    f"({_signed(c['delta'], percent=False)})"
                )
        for qid, q in summary["per_question"].items():
            cli.stdout.write(f"  {qid}: " + _drift_line(q))
        if above(summary):
            cli.stderr.write(f"flip rate {rate:.1%} is above {max_flip_rate:.1%}")
        if shifted_above(summary):
            cli.stderr.write(f"shifted share {shifted:.1%} is above {max_shift:.1%}")

    return run_in_foreground(
        cli,
        version,
        missing=f"{slug} has no label {label} on an approved version.",
        start=lambda version: control_services.drift_create(
            version=version,
            model=model,
            user=roles.OPERATOR,
            backend=backend,
            concurrency=concurrency,
            enqueue=False,
        ),
        summary=control_reports.drift_summary,
        show=show,
        failed=lambda summary: bool(above(summary) or shifted_above(summary) or summary["failed"]),
        as_json=json,
    )


def _drift_line(q: dict[str, Any]) -> str:
    """One question's flips and shifts in a drift run, as the CLI prints them."""
    flipped = ", ".join(q["flipped_states"][:10])
    moved = ", ".join(
        f"{s['state']} {s['before']:.2f}→{s['after']:.2f}" for s in q["shifted_states"][:10]
    )
    return (
        f"{len(q['flipped_states'])}/{q['compared']} flipped"
        + (f" ({flipped}{', …' if len(q['flipped_states']) > 10 else ''})" if flipped else "")
        + f", {q['shifts']} shifted past {q['noise_floor']:.2f} "
        f"({q['noise_floor_source']})"
        + (f": {moved}{', …' if q['shifts'] > 10 else ''}" if moved else "")
    )


def _line(kind: str, q: dict[str, Any]) -> str:
    """One question's finding, as the CLI prints it."""
    if not q["varied"]:
        return "not varied by this control"
    if kind == controls.SHUFFLE:
        text = (
            f"real pass rate {stats.rate_words(q['real_passed'], q['real_checked'])}, "
            f"shuffled floor {stats.rate_words(q['floor_passed'], q['floor_checked'])}"
        )
        if q["no_signal"]:
            text += f" — {controls.NO_SIGNAL}"
        elif q["real_pass_rate"] is None:
            text += " (no expected answers)"
        if q["few_answers"]:
            text += f" (only {q['real_checked']} labelled answers)"
        return text
    if kind == controls.ORDERS:
        distance = q["largest_distance"]
        return f"flip rate {_rate(q['flip_rate'])}, largest distance " + (
            "n/a" if distance is None else f"{distance:.2f}"
        )
    spread = q["largest_spread"]
    return f"flip rate {_rate(q['flip_rate'])}, largest spread " + (
        "n/a" if spread is None else f"{spread:.2f}"
    )
