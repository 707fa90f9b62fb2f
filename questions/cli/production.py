"""`questions production` and `questions states-purge`: how a set's approved version does on
live traffic, as the production page shows it (`selectors.production` reads it; this module
prints it), and the purge of its old unlabelled production states by hand
(`services.production_purge`, what the workers do each hour)."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from questions import roles, services
from questions.cli.base import EXIT_OK, Console, Unusable, add_json, add_set
from questions.core import ingest, production
from questions.models import QuestionSet, SampleState
from questions.selectors.production import production_traffic, traffic_json

#: an age as `--older-than` takes it: a whole number of days, "30d" or "30"
AGE = re.compile(r"([0-9]{1,5})d?")


def add_parsers(sub: Any) -> None:
    """The `production` and `states-purge` subcommands."""
    shown = sub.add_parser(
        ingest.SOURCE,  # the subcommand is named after the states it reads
        help="how the approved version does on live traffic, per question",
        description="Print what SLUG's production page shows: the version production answers "
        "with, the sampling rate, retention and quota; the states received and stored each of "
        f"the last {production.DAYS_SHOWN} days (UTC); and per question production's answers "
        "by day against the labelled states' expected answers, the answers no labelled state "
        "expects (a gap to label), the near-uniform and unsure shares, and the live pass rate "
        "of the approved version (production's answers against the settled labels) with its "
        "95 percent interval and n, beside its rate on the hand-made states. Reads only.",
    )
    add_set(shown)
    add_json(shown, 'print {"set", "version", "sampling", "questions": [...], "live", ...}')
    shown.set_defaults(handler=do_production)

    purge = sub.add_parser(
        "states-purge",
        help="delete a set's unlabelled production states older than an age",
        description="Delete SLUG's production states that production answered more than AGE "
        "ago (e.g. 30d; the set's retention when left out) and that nobody labelled and no "
        "run asked about, as the task workers do every hour; print how many were deleted and "
        "kept. Manual states are never purged.",
    )
    add_set(purge)
    purge.add_argument(
        "--source",
        choices=[SampleState.Source.PRODUCTION.value],
        default=SampleState.Source.PRODUCTION.value,
        help="the states to purge: production's (the only ones purged)",
    )
    purge.add_argument("--older-than", metavar="AGE", help="an age in days: 30d")
    add_json(purge, 'print {"deleted", "kept_labelled", "kept_in_runs"}')
    purge.set_defaults(handler=do_states_purge)


def _question_set(slug: str) -> QuestionSet | None:
    return QuestionSet.objects.filter(slug=slug).first()


def do_production(cli: Console, *, slug: str, json: bool, **_: Any) -> int:
    question_set = _question_set(slug)
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    found = production_traffic(question_set)
    if json:
        cli.emit_json(traffic_json(found))
        return EXIT_OK
    for line in _lines(found):
        cli.stdout.write(line)
    return EXIT_OK


def _lines(found) -> list[str]:
    slug, settings = found.question_set.slug, found.settings
    version = (
        f"v{found.version.number}" + (f" ({found.label})" if found.label else "")
        if found.version is not None
        else "no approved version"
    )
    lines = [
        f"{slug}: production answers with {version}; sampling keeps 1 in "
        f"{settings.keep_one_in}; unlabelled production states kept {settings.retention_days} "
        f"days; {found.held:,} production states, {found.labelled:,} labelled",
    ]
    if found.live is not None and found.live.checked:
        lines.append(f"  live pass rate: {found.live.words}")
    if found.hand_made is not None:
        lines.append(
            f"  on the hand-made states (run {found.hand_made_run}): {found.hand_made.words}"
        )
    for t in found.questions:
        given = ", ".join(f"{v} {n}" for v, n in t.given.most_common(5)) or "no answers read"
        lines.append(f"{t.question.id} ({t.question.type}): {given}")
        lines.append(
            f"  near uniform {t.near_uniform} of {t.read}, unsure {t.unsure} of {t.read}"
            + (f", unreadable {t.unreadable}" if t.unreadable else "")
        )
        if t.gaps:
            lines.append(f"  no labelled state expects: {', '.join(t.gaps)}")
        if t.live.checked:
            lines.append(f"  live: {t.live.words}")
    return lines


def _age(text: str | None) -> timedelta | None:
    if text is None:
        return None
    found = AGE.fullmatch(text.strip())
    if found is None:
        raise Unusable(f"--older-than takes a number of days, such as 30d; not {text[:20]!r}.")
    return timedelta(days=int(found.group(1)))


def do_states_purge(
    cli: Console, *, slug: str, older_than: str | None, json: bool, **_: Any
) -> int:
    age = _age(older_than)
    question_set = _question_set(slug)
    if question_set is None:
        return cli.fail(f"There is no set {slug}.", as_json=json, status=404)
    purged = services.production_purge(
        question_set=question_set, user=roles.OPERATOR, older_than=age
    )
    if json:
        cli.emit_json(purged.as_json())
        return EXIT_OK
    cli.stdout.write(
        f"{slug}: deleted {purged.deleted:,} production states; kept {purged.kept_labelled:,} "
        f"labelled and {purged.kept_in_runs:,} a run asked about"
    )
    return EXIT_OK
