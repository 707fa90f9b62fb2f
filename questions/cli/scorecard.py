"""`questions scorecard`: the subcommand of the console's command line that prints a set's
scorecard — per version and question the pass rate with its interval and n, the controls'
verdicts and the cost — as a table or as JSON (`scorecard.scorecard` builds it; this module only
prints it)."""

from __future__ import annotations

from typing import Any

from questions.cli.base import EXIT_OK, Console, add_json, add_set
from questions.core import stats
from questions.models import QuestionSet
from questions.selectors import scorecard


def add_parsers(sub: Any) -> None:
    """The `scorecard` subcommand."""
    card = sub.add_parser(
        "scorecard",
        help="per version and question: pass rate with interval and n, controls, cost",
        description="Print SLUG's scorecard: one row per version (newest first, kept and "
        "approved marked), per question the pass rate of the version's latest finished full "
        "run on the default backend with its 95 % interval and n, the shuffle control's "
        "verdict and the order control's flip rate, the cost per 1,000 production calls, "
        "what this set's runs spent, and per question how many states a reviewer marked "
        "ambiguous (no pass rate counts them; --json: `ambiguous`).",
    )
    add_set(card)
    add_json(card, "print one JSON object")
    card.set_defaults(handler=do_scorecard)


def money(value: float | None) -> str:
    return "unknown" if value is None else f"${value:.6f}".rstrip("0").rstrip(".")


def version_lines(row: dict[str, Any]) -> list[str]:
    """One version of a scorecard as the text output prints it."""
    marks = [row["status_display"], *(f"label {name}" for name in row["labels"])]
    head = f"v{row['version']} ({', '.join(marks)})"
    run = row["run"]
    if run is None:
        return [f"{head}: no finished run on the default backend"]
    kind = " (a try: the rest replayed)" if run["try"] else ""
    lines = [
        f"{head}: run {run['run']}{kind}, overall {row['overall']['words']}, "
        f"{money(row['cost_per_1000_calls'])} per 1,000 calls"
    ]
    for qid, cell in row["questions"].items():
        notes = []
        if cell.get("no_signal"):
            notes.append(f"shuffle control (run {cell['shuffle_run']}): no signal")
        elif cell.get("no_signal") is False:
            notes.append("shuffle control: clearly above the floor")
        if cell.get("order_flip_rate") is not None:
            notes.append(
                f"order flips {cell['order_flip_rate']:.0%} of {cell['order_compared']} calls"
            )
        lines.append(f"  {qid}: {cell['words']}" + (f"; {'; '.join(notes)}" if notes else ""))
    return lines


def do_scorecard(cli: Console, *, slug: str, json: bool, **_: Any) -> int:
    question_set = QuestionSet.objects.filter(slug=slug).first()
    if question_set is None:
        return cli.fail(f"No set {slug}.", as_json=json, status=404)
    card = scorecard.scorecard(question_set)
    if json:
        cli.emit_json(card)
        return EXIT_OK
    spent = card["spent"]
    cli.stdout.write(
        f"{slug}: {stats.plural(len(card['versions']), 'version')}; this set's runs spent "
        f"{money(spent['cost'])} on {spent['calls']} live calls"
        + (f" ({spent['unpriced_calls']} with no known cost)" if spent["unpriced_calls"] else "")
    )
    if card["ambiguous"]:
        left_out = ", ".join(f"{qid} {n}" for qid, n in sorted(card["ambiguous"].items()))
        cli.stdout.write(f"ambiguous states left out of the pass rates: {left_out}")
    for row in card["versions"]:
        for line in version_lines(row):
            cli.stdout.write(line)
    for line in card["labels"]:
        cli.stdout.write(f"{line['question']}: {line['summary']}")
    return EXIT_OK
