"""The production page's reads (and `questions production`'s): the version production
answers with, the set's sampling and retention, the states received and stored each day, and
per question production's answers by day against the labelled states' expected answers, the
gaps, the near-uniform and unsure shares, and the live pass rate of the approved version
beside its rate on the hand-made states (`core.production`).

A page costs what it shows: the distribution reads the newest `MOST_READ` production states of
the days shown; the live pass rate reads the labelled production states that version answered
(as many as people labelled); the expected answers are counted by the database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

from django.db.models import Count
from django.db.models.fields.json import KeyTextTransform, KeyTransform
from django.db.models.functions import TruncDate
from django.utils import timezone

from questions.core import charts, labelling, production
from questions.models import (
    BatchItem,
    IngestDay,
    IngestSettings,
    Label,
    QuestionSet,
    SampleState,
    Version,
)
from questions.selectors.labels import labelling_version
from questions.selectors.runs import READING_KEYS, latest_run

#: the most production states the distribution reads (the newest of the days shown)
MOST_READ = 20_000


@dataclass
class Traffic:
    """What the production page shows of a set: the version production answers with (and the
    label that points at it), the set's ingest settings, the days shown with the states
    received and stored each, how many production states the set holds (and how many are
    labelled), how many the distribution read (`capped` when there were more), how many did
    not say which version answered, each question's traffic and the pooled pass rates."""

    question_set: QuestionSet
    version: Version | None
    label: str | None
    settings: IngestSettings
    days: list[dict[str, Any]]
    held: int
    labelled: int
    read: int
    capped: bool
    unversioned: int
    questions: list[production.QuestionTraffic]
    live: Any
    hand_made: Any
    hand_made_run: int | None

    @property
    def first_day(self) -> date:
        return self.days[0]["day"]

    @property
    def quota_words(self) -> str:
        return f"{self.settings.quota:,}"


def answering_version(question_set: QuestionSet) -> tuple[Version | None, str | None]:
    """The version production answers with: the one the baseline label points at, else the
    newest approved version (no label), else none."""
    found = (
        Version.objects.filter(
            question_set=question_set,
            status=Version.Status.APPROVED,
            labels__name=Label.BASELINE,
        )
        .order_by("-number")
        .first()
    )
    if found is not None:
        return found, Label.BASELINE
    newest = (
        question_set.versions.filter(status=Version.Status.APPROVED).order_by("-number").first()
    )
    return newest, None


def _days(question_set: QuestionSet, today: date) -> list[dict[str, Any]]:
    """The days shown, oldest first, each with the states received (the quota's count) and
    stored (arrived and kept) that day, UTC."""
    first = today - timedelta(days=production.DAYS_SHOWN - 1)
    received = dict(
        IngestDay.objects.filter(question_set=question_set, day__gte=first).values_list(
            "day", "received"
        )
    )
    stored = dict(
        question_set.sample_states.filter(
            source=SampleState.Source.PRODUCTION,
            created_at__gte=datetime.combine(first, datetime.min.time(), UTC),
        )
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("day")
        .annotate(n=Count("pk"))
        .values_list("day", "n")
    )
    return [
        {"day": day, "received": received.get(day, 0), "stored": stored.get(day, 0)}
        for day in (first + timedelta(days=i) for i in range(production.DAYS_SHOWN))
    ]


def _sent(rows) -> list[production.Sent]:
    return [
        production.Sent(
            day=(observed or created).astimezone(UTC).date(),
            version=version,
            answers=answers or {},
            expected=expected or {},
        )
        for observed, created, version, answers, expected in rows
    ]


def _expected(question_set: QuestionSet, questions: list[labelling.Question]) -> dict:
    """Per question, each expected answer the set's states hold and how many hold it."""
    out = {}
    for q in questions:
        out[q.id] = list(
            question_set.sample_states.filter(expected__has_key=q.id)
            .annotate(value=KeyTransform(q.id, "expected"))
            .values("value")
            .annotate(n=Count("pk"))
            .values_list("value", "n")
        )
    return out


def _hand_made(
    version: Version | None, questions: list[labelling.Question]
) -> tuple[dict[str, Any], int | None]:
    """The pass rates of `version`'s latest run on the hand-made states it asked, per
    question, and the run's id; nothing without such a run."""
    run = latest_run(version)
    if run is None:
        return {}, None
    fields = {
        f"r{i}": KeyTextTransform(READING_KEYS[q.type], KeyTransform(q.id, "answers"))
        for i, q in enumerate(questions)
    }
    rows = (
        run.items.filter(
            status=BatchItem.Status.ANSWERED,
            variant=0,
            sample_state__sample_state__source=SampleState.Source.MANUAL,
        )
        .annotate(**fields)
        .values_list("sample_state__expected", *fields)
    )
    answered = (
        (
            expected or {},
            {
                q.id: (v if q.type == "choice" else float(v))
                for q, v in zip(questions, values, strict=True)
                if v is not None
            },
        )
        for expected, *values in rows.iterator(chunk_size=2000)
    )
    return production.hand_made_rates(questions, answered, run.threshold), run.pk


def production_traffic(question_set: QuestionSet, *, now: datetime | None = None) -> Traffic:
    """What the production page and `questions production` show of `question_set`."""
    today = (now or timezone.now()).astimezone(UTC).date()
    version, label = answering_version(question_set)
    shown = version or labelling_version(question_set)
    questions = labelling.questions_of(shown.document) if shown is not None else []
    days = _days(question_set, today)
    states = question_set.sample_states.filter(source=SampleState.Source.PRODUCTION)
    first = datetime.combine(days[0]["day"], datetime.min.time(), UTC)
    fields = ("observed_at", "created_at", "production_version", "production_answers", "expected")
    recent = states.filter(observed_at__gte=first).order_by("-observed_at", "-pk")
    sent = _sent(recent.values_list(*fields)[: MOST_READ + 1])
    judged = []
    if version is not None:
        labelled_by_it = states.filter(production_version=version.number).exclude(expected={})
        judged = _sent(labelled_by_it.values_list(*fields).iterator(chunk_size=2000))
    found = production.traffic(
        questions,
        sent[:MOST_READ],
        version=version.number if version is not None else None,
        judged=judged,
        expected=_expected(question_set, questions),
    )
    hand_made, run_id = _hand_made(version, questions)
    for t in found:
        t.hand_made = hand_made.get(t.question.id)
    return Traffic(
        question_set=question_set,
        version=version,
        label=label,
        settings=IngestSettings.of(question_set),
        days=days,
        held=states.count(),
        labelled=states.exclude(expected={}).count(),
        read=min(len(sent), MOST_READ),
        capped=len(sent) > MOST_READ,
        unversioned=states.filter(production_version__isnull=True).count(),
        questions=found,
        live=production.overall(found),
        hand_made=production.overall(found, hand_made=True) if run_id is not None else None,
        hand_made_run=run_id,
    )


def traffic_json(found: Traffic) -> dict[str, Any]:
    """The production page's figures as `questions production --json` prints them."""
    settings = found.settings
    return {
        "set": found.question_set.slug,
        "version": found.version.number if found.version is not None else None,
        "label": found.label,
        "sampling": {"keep_one_in": settings.keep_one_in},
        "retention_days": settings.retention_days,
        "daily_quota": settings.quota,
        "states": {
            "held": found.held,
            "labelled": found.labelled,
            "read": found.read,
            "capped": found.capped,
            "without_version": found.unversioned,
        },
        "days": [
            {"day": d["day"].isoformat(), "received": d["received"], "stored": d["stored"]}
            for d in found.days
        ],
        "questions": [t.as_json() for t in found.questions],
        "live": None if found.live is None else production.rate_json(found.live),
        "hand_made": None if found.hand_made is None else production.rate_json(found.hand_made),
        "hand_made_run": found.hand_made_run,
    }


#: how many of a row's answers its words name, the most given first
NAMED = 3


def _row(title: str, counts: dict[str, int], places: dict[str, int], qtype: str) -> dict[str, Any]:
    ordered = [(v, counts[v]) for v in places if counts.get(v)]
    total = sum(n for _, n in ordered)
    most = sorted(ordered, key=lambda vn: (-vn[1], places[vn[0]]))
    words = " · ".join(f"{_said(v, qtype)} {n / total:.0%}" for v, n in most[:NAMED])
    if len(most) > NAMED:
        words += f" · {len(most) - NAMED} more"
    return {
        "title": title,
        "n": total,
        "bar": charts.share_bar(title, ordered, places),
        "words": words,
    }


def _said(value: str, qtype: str) -> str:
    """An answer as a chart's words say it: a score's level as "level 2"."""
    return f"level {value}" if qtype == "score" else value


def question_rows(t: production.QuestionTraffic, days: list[dict[str, Any]]) -> list[dict]:
    """A question's chart: a row per day shown (production's answers that day), then the
    labelled states' expected answers, each a share bar with its n and its most given answers
    in words."""
    places = {v: i for i, v in enumerate(t.values)}
    qtype = t.question.type
    rows = [
        _row(f"{t.question.id} on {d['day']:%b %-d}", t.by_day.get(d["day"], {}), places, qtype)
        | {"day": d["day"]}
        for d in days
    ]
    title = f"{t.question.id}: what labelled states expect"
    rows.append(_row(title, t.expected, places, qtype))
    return rows


def question_legend(t: production.QuestionTraffic) -> list[dict[str, Any]]:
    """The colours of a question's chart: each answer that production gave or a labelled
    state expects, in declared order, with its colour and description."""
    seen = t.given + t.expected
    return [
        {
            "value": _said(value, t.question.type),
            "colour": place % charts.SHARE_COLOURS,
            "detail": t.question.details[place] if place < len(t.question.details) else "",
        }
        for place, value in enumerate(t.values)
        if seen[value]
    ]
