"""Page cost at scale: server time, queries and bytes of the pages that grow with the data.

Builds, through the services, a set of 32 choices x 255 described options (a 1.8 MB document)
with 30 versions (approved ones with label moves, changes requested, one in review, a draft), and
a set of 2,000 sample states with 6 questions, three versions and three batch runs (through the
typesafe wire against the local stand-in, in process). Then, in a fresh process, it requests each
page through Django's test client (middleware, view, SQL, template; no network; DEBUG off) and
prints per page the p50 server time, the query count and the bytes of the response, and the
web process's memory growth over the set page.

At --scale above 1, or with --sets N, the states set is built through bulk inserts instead (its
runs answered as the stand-in answers, in process, then finished as a run finishes: summary and
reports stored), and --sets N adds filler sets (one draft each) up to N sets in all: the
20,000-state and 5,000-set point is `--scale 10 --sets 5000`, built in minutes.

Run:  .venv/bin/python bench/scale_pages.py [--scale 0.1] [--rounds 5] [--sets 5000]
      DATABASE_URL=postgres://... .venv/bin/python bench/scale_pages.py   (an empty database)
The data set is built once per database and reused (SQLite: /tmp/scale-pages-<scale>.sqlite3;
--rebuild starts over).
Aims (at scale 1): compare <= 300 ms and <= 1 MB a page; set page <= 100 ms and < 20 MB growth;
editor 32 x 255 <= 300 ms and <= 3 MB; run and review pages, "compare, changes only" and the
scorecard <= 150 ms (the first two cold as warm), flat from 2,000 to 20,000 states; the set
page's states and the set list <= 100 ms and <= 300 KB at any size; query counts constant.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)

BIG = "big-catalogue"
STATES = "states-big"

#: page → (target ms, target bytes or None); the aims of the scale issue
TARGETS = {
    "compare (default link)": (300, 1_000_000),
    "compare, 2 runs": (300, 1_000_000),
    "compare, 3 runs": (300, 1_000_000),
    "compare, 2 runs + recorded": (300, 1_000_000),
    "compare, one state": (300, 1_000_000),
    "compare, changes only": (150, 1_000_000),
    "scorecard": (150, None),
    "set page, 30 versions": (100, None),
    "set history, 30 versions": (100, None),
    "editor, 32 x 255": (300, 3_000_000),
    "editor, states set": (300, 3_000_000),
    "run page": (150, None),
    "run page, cold": (150, None),
    "review page, states": (150, None),
    "review page, states, cold": (150, None),
    "set page, states": (100, 300_000),
    "set page, states by tag": (100, 300_000),
    "set page, states failing": (100, 300_000),
    "set page, states unlabelled": (100, 300_000),
    "set list": (100, 300_000),
    "set list, searched": (100, 300_000),
    "labelling page": (150, 300_000),
    "labelling, key press": (50, 300_000),
}


def setup_django(database_url: str) -> None:
    bench_environment(database_url)
    os.environ.pop("DJANGO_DEBUG", None)
    import logging

    start_django()
    logging.disable(logging.INFO)  # one log line per decision would drown the figures


def big_document(variant: int) -> dict:
    return {
        f"q{i}": {
            "type": "choice",
            "instructions": f"Which entry of catalogue {i} fits best? (revision {variant})",
            "criteria": {
                f"entry-{i}-{j}": {
                    "what": f"entry {j} of catalogue {i} — what it means, in a sentence or two",
                    "not_for": "anything the other entries describe better",
                    "examples": [f"an example of {j}", f"another example of {j}"],
                }
                for j in range(254)
            }
            | {"other": "none of these"},
        }
        for i in range(32)
    }


def states_document(variant: int) -> dict:
    return {
        "topic": {
            "type": "choice",
            "instructions": f"Which topic is this about? ({variant})",
            "criteria": {f"topic{j}": f"topic number {j}" for j in range(11)} | {"other": "-"},
        },
        "team": {
            "type": "choice",
            "instructions": "Which team handles it?",
            "criteria": {f"team{j}": f"team number {j}" for j in range(19)} | {"other": "-"},
        },
        "urgency": {
            "type": "score",
            "instructions": "How urgent is it?",
            "criteria": ["none", "low", "some", "high", "now"],
        },
        "mood": {
            "type": "score",
            "instructions": "How does the writer feel?",
            "criteria": ["calm", "annoyed", "angry"],
        },
        "refund": {
            "type": "noul",
            "instructions": "Does the writer ask for a refund?",
            "criteria": {"true": "asks for money back", "false": "does not"},
        },
        "repeat": {
            "type": "noul",
            "instructions": "Has the writer asked before?",
            "criteria": {"true": "mentions an earlier message", "false": "first contact"},
        },
    }


def state_items(count: int) -> list[dict]:
    filler = "lorem ipsum dolor sit amet " * 36  # about 1 KB of state per state
    return [
        {
            "name": f"state-{i:05d}",
            "state": {"message": f"message {i}: {filler}", "customer": i % 97, "tier": i % 3},
            "expected": {
                "topic": f"topic{i % 11}",
                "urgency": i % 5,
                "refund": bool(i % 2),
            },
            "tags": ["even" if i % 2 == 0 else "odd", f"batch{i % 10}"],
        }
        for i in range(count)
    ]


def build_states_bulk(count: int, author, reviewer) -> None:
    """The states set through bulk inserts: its three versions through the services, the
    states and their revisions in chunks, each run's items answered as the stand-in answers
    (in process, no HTTP) and written in chunks, then finished the way `batch_execute`
    finishes a run (its summary and reports stored)."""
    from django.utils import timezone

    from questions import services
    from questions.core import check, spec
    from questions.dev import standin
    from questions.models import BatchItem, BatchRun, SampleState, SampleStateRevision
    from questions.services.summaries import store_summary
    from questions.services.versions import document_text

    small = services.question_set_start(slug=STATES, name="States at scale", owner=author)
    services.version_save(
        version=services.open_draft(small),
        document=states_document(1),
        base_revision=1,
        author=author,
    )
    items = state_items(count)
    chunk = 2000
    for start in range(0, count, chunk):
        part = items[start : start + chunk]
        states = SampleState.objects.bulk_create(
            SampleState(
                question_set=small,
                name=i["name"],
                state_text=document_text(i["state"]),
                expected=i["expected"],
                tags=i["tags"],
            )
            for i in part
        )
        if not all(s.pk for s in states):  # SQLite before 3.35 returns no ids
            by_name = dict(
                small.sample_states.filter(name__in=[i["name"] for i in part]).values_list(
                    "name", "pk"
                )
            )
            for s in states:
                s.pk = by_name[s.name]
        SampleStateRevision.objects.bulk_create(
            SampleStateRevision(
                sample_state_id=s.pk,
                revision=1,
                name=i["name"],
                state_text=s.state_text,
                state_sha256=spec.state_sha256(i["state"]),
                expected=i["expected"],
                tags=i["tags"],
                author=author,
            )
            for s, i in zip(states, part, strict=True)
        )
    print(f"data set: {STATES}, {count} states inserted", flush=True)
    for n in (1, 2, 3):
        version = services.open_draft(small)
        if n > 1:
            version = services.version_draft_from(
                version=small.versions.order_by("-number").first(), author=author
            )
            services.version_save(
                version=version,
                document=states_document(n),
                base_revision=version.revision,
                author=author,
            )
        services.version_submit(version=version, author=author)
        if n < 3:
            label = "production" if n == 1 else "staging"
            services.version_approve(
                confirm_weak_evidence=True, version=version, reviewer=reviewer, label=label
            )
    from django.conf import settings

    settings.TYPESAFE_API_KEY = standin.KEY  # a run is made for the backend; nothing is sent
    states = {i["name"]: i["state"] for i in items}
    for version in small.versions.order_by("number"):
        run = services.batch_create(
            version=version, backend="typesafe", user=author, concurrency=8, enqueue=False
        )
        questions = check.validate(
            version.document, limits=spec.DEFAULT_LIMITS, lints=False
        ).document.questions
        BatchRun.objects.filter(pk=run.pk).update(
            status=BatchRun.Status.RUNNING, started_at=timezone.now()
        )
        pending = list(run.items.select_related("sample_state").only("pk", "sample_state__name"))
        for start in range(0, len(pending), chunk):
            part = pending[start : start + chunk]
            for item in part:
                state = states[item.sample_state.name]
                item.status, item.attempts = BatchItem.Status.ANSWERED, 1
                item.answers = {qid: standin.answer(q, state) for qid, q in questions.items()}
            BatchItem.objects.bulk_update(part, ["status", "attempts", "answers"])
        BatchRun.objects.filter(pk=run.pk).update(
            status=BatchRun.Status.DONE, finished_at=timezone.now()
        )
        store_summary(BatchRun.objects.get(pk=run.pk))
        print(f"data set: run {run.pk} of v{version.number} answered", flush=True)


def build_filler_sets(count: int, author) -> None:
    """`count` more sets, one draft each, through bulk inserts (the set list's load)."""
    from questions.core.spec import sha256_of
    from questions.models import QuestionSet, Version
    from questions.services.versions import document_text

    have = QuestionSet.objects.count()
    document = {"q": {"type": "noul", "instructions": "Is it so?"}}
    for start in range(have, count, 1000):
        sets = QuestionSet.objects.bulk_create(
            QuestionSet(
                slug=f"filler-{n:05d}",
                name=f"Filler set {n}",
                description="a set the set list pages past",
                owner=author,
                version_counter=1,
            )
            for n in range(start, min(count, start + 1000))
        )
        if not all(qs.pk for qs in sets):
            ids = dict(
                QuestionSet.objects.filter(slug__in=[q.slug for q in sets]).values_list(
                    "slug", "pk"
                )
            )
            for qs in sets:
                qs.pk = ids[qs.slug]
        Version.objects.bulk_create(
            Version(
                question_set_id=qs.pk,
                number=1,
                document_text=document_text(document),
                sha256=sha256_of(document),
                author=author,
            )
            for qs in sets
        )
    print(f"data set: {QuestionSet.objects.count()} sets", flush=True)


def build(scale: float, sets: int = 0) -> None:
    from django.conf import settings

    from questions import services
    from questions.dev import standin
    from questions.models import QuestionSet
    from tests import factories

    migrate()
    if QuestionSet.objects.filter(slug__in=[BIG, STATES]).count() == 2:
        print("data set: reused", flush=True)
        return
    started = time.perf_counter()
    settings.DECISIONS_ALLOW_SELF_APPROVAL = False
    author = factories.author("scale-author")
    reviewer = factories.reviewer("scale-reviewer")
    versions = max(3, round(30 * min(scale, 1)))
    bulk = scale > 1 or sets > 0  # the services would take the better part of an hour

    big = services.question_set_start(slug=BIG, name="Big catalogue", owner=author)
    for n in range(1, versions + 1):
        parent = services.open_draft(big)
        if parent is None:
            last = big.versions.order_by("-number").first()
            parent = services.version_draft_from(version=last, author=author)
        services.version_save(
            version=parent,
            document=big_document(n),
            base_revision=parent.revision,
            author=author,
        )
        if n == versions:
            break  # the newest stays a draft
        services.version_submit(version=parent, author=author)
        if n == versions - 1:
            continue  # in review
        if n % 4 == 3:
            services.version_request_changes(version=parent, reviewer=reviewer, note="not yet")
        else:
            label = "production" if n % 2 else "staging"
            services.version_approve(
                confirm_weak_evidence=True, version=parent, reviewer=reviewer, label=label
            )
    print(f"data set: {BIG}, {versions} versions", flush=True)

    count = max(20, round(2000 * scale))
    if bulk:
        build_states_bulk(count, author, reviewer)
        build_filler_sets(sets, author)
        print(f"data set: built in {time.perf_counter() - started:.0f} s", flush=True)
        return
    small = services.question_set_start(slug=STATES, name="States at scale", owner=author)
    services.version_save(
        version=services.open_draft(small),
        document=states_document(1),
        base_revision=1,
        author=author,
    )
    items = state_items(count)
    services.sample_states_import(question_set=small, items=items, author=author)
    for n in (1, 2, 3):
        version = services.open_draft(small)
        if n > 1:
            version = services.version_draft_from(
                version=small.versions.order_by("-number").first(), author=author
            )
            services.version_save(
                version=version,
                document=states_document(n),
                base_revision=version.revision,
                author=author,
            )
        services.version_submit(version=version, author=author)
        if n < 3:
            label = "production" if n == 1 else "staging"
            services.version_approve(
                confirm_weak_evidence=True, version=version, reviewer=reviewer, label=label
            )
    server = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        for version in small.versions.order_by("number"):
            run = services.batch_create(
                version=version, backend="typesafe", user=author, concurrency=8, enqueue=False
            )
            services.batch_execute(run.pk)
    finally:
        server.shutdown()
    print(
        f"data set: {STATES}, {count} states, 3 runs; built in "
        f"{time.perf_counter() - started:.0f} s",
        flush=True,
    )


def rss_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def measure(rounds: int, only: str) -> list[dict]:
    from django.core.cache import cache
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext, setup_test_environment
    from django.urls import reverse

    from questions.models import BatchRun, QuestionSet, SampleState

    setup_test_environment()
    from questions.models import LabelQueue
    from questions.services.labels import label_queue_task

    for ranked in QuestionSet.objects.filter(slug=STATES).exclude(
        pk__in=LabelQueue.objects.values("question_set")
    ):
        label_queue_task.call(ranked.pk)  # what the task worker does after the last run
    client = Client()
    client.force_login(QuestionSet.objects.get(slug=STATES).owner)
    big = QuestionSet.objects.get(slug=BIG)
    small = QuestionSet.objects.get(slug=STATES)
    runs = list(BatchRun.objects.filter(question_set=small).order_by("pk"))
    newest_big = big.versions.order_by("-number").first().number
    state = SampleState.objects.filter(question_set=small).order_by("name").first()
    v2 = runs[1].version.number
    compare = reverse("set-compare", args=[STATES])
    cols2 = f"col=run:{runs[0].pk}&col=run:{runs[1].pk}"
    cols3 = cols2 + f"&col=run:{runs[2].pk}"
    pages = {
        "set page, 30 versions": reverse("set-detail", args=[BIG]),
        "set history, 30 versions": reverse("set-history", args=[BIG]),
        "set list": reverse("set-list"),
        "set list, searched": reverse("set-list") + "?q=filler-04&from=50",
        "set page, states": reverse("set-detail", args=[STATES]),
        "set page, states by tag": reverse("set-detail", args=[STATES]) + "?state_tag=batch3",
        "set page, states failing": reverse("set-detail", args=[STATES])
        + "?state_show=failing&states_from=500",
        "set page, states unlabelled": reverse("set-detail", args=[STATES])
        + "?state_show=unlabelled",
        "editor, 32 x 255": reverse("version-edit", args=[BIG, newest_big]),
        "editor, states set": reverse("version-edit", args=[STATES, 3]),
        "review page, 30 versions": reverse("version-review", args=[BIG, newest_big - 1]),
        "review page, states": reverse("version-review", args=[STATES, 3]),
        "run page": reverse("run-detail", args=[runs[2].pk]),
        "run page, cold": reverse("run-detail", args=[runs[2].pk]),
        "review page, states, cold": reverse("version-review", args=[STATES, 3]),
        "compare (default link)": compare,
        "compare, 2 runs": f"{compare}?{cols2}",
        "compare, 3 runs": f"{compare}?{cols3}",
        "compare, 2 runs + recorded": f"{compare}?{cols2}&col=v{v2}:recorded",
        "compare, one state": f"{compare}?{cols3}&state={state.pk}",
        "compare, changes only": f"{compare}?{cols3}&filter=changes",
        "scorecard": reverse("set-scorecard", args=[STATES]),
        "labelling page": reverse("label-states", args=[STATES]),
        "compare CSV, 3 runs (all rows)": f"{compare}?{cols3}&format=csv",
        "compare JSON, 3 runs (all rows)": f"{compare}?{cols3}&format=json",
    }
    print(
        f"SIZES {big.versions.count()} versions of {BIG}; "
        f"{small.sample_states.count()} states in {STATES}; {QuestionSet.objects.count()} sets",
        flush=True,
    )
    results = []
    for name, url in pages.items():
        if only and only not in name:
            continue
        before = rss_kb()
        samples, cpu, size, queries = [], [], 0, 0
        for i in range(rounds + 1):
            if name.endswith(", cold"):
                cache.clear()  # a comparison not stored with a run is kept per process
            with CaptureQueriesContext(connection) as captured:
                start, start_cpu = time.perf_counter(), time.process_time()
                response = client.get(url)
                if response.streaming:
                    size = sum(len(chunk) for chunk in response.streaming_content)
                else:
                    size = len(response.content)
                elapsed = (time.perf_counter() - start) * 1000
                used = (time.process_time() - start_cpu) * 1000
            assert response.status_code == 200, (name, response.status_code)
            queries = len(captured)
            if i or name.endswith(", cold"):  # the first is a warm-up, but a cold view counts
                samples.append(elapsed)
                cpu.append(used)
        results.append(
            {
                "page": name,
                "p50_ms": statistics.median(samples),
                "cpu_ms": statistics.median(cpu),
                "queries": queries,
                "bytes": size,
                "growth_mb": (rss_kb() - before) / 1024,
            }
        )
        print(json.dumps(results[-1]), flush=True)
    if not only or only in "labelling, key press":
        results.append(key_presses(client, small, rounds))
        print(json.dumps(results[-1]), flush=True)
    return results


def key_presses(client, question_set, rounds: int) -> dict:
    """A key press on the labelling page: the htmx POST of one answer to a state's first
    question (another state each time, an answer it does not expect yet), and the next
    state's fragment it answers with."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from questions.core import labelling
    from questions.selectors.labels import labelling_version

    version = labelling_version(question_set)
    question = labelling.questions_of(version.document)[0]
    rows = question_set.sample_states.order_by("-name").values_list("pk", "expected")[:50]
    values = [value for value, _ in question.choices]
    presses = [  # each an answer the state does not expect yet: the label changes it
        (pk, next(v for v in values if v != str((expected or {}).get(question.id)).lower()))
        for pk, expected in rows
    ]
    samples, cpu, size, queries = [], [], 0, 0
    for i in range(rounds + 1):
        pk, answer = presses[i]
        url = reverse("label-save", args=[question_set.slug, pk])
        data = {"version": version.number, "question": question.id, "answer": answer}
        with CaptureQueriesContext(connection) as captured:
            start, start_cpu = time.perf_counter(), time.process_time()
            response = client.post(url, data, HTTP_HX_REQUEST="true")
            elapsed = (time.perf_counter() - start) * 1000
            used = (time.process_time() - start_cpu) * 1000
        assert response.status_code == 200, ("key press", response.status_code)
        size, queries = len(response.content), len(captured)
        if i:
            samples.append(elapsed)
            cpu.append(used)
    return {
        "page": "labelling, key press",
        "p50_ms": statistics.median(samples),
        "cpu_ms": statistics.median(cpu),
        "queries": queries,
        "bytes": size,
        "growth_mb": 0.0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="states x scale (2,000 at 1)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument(
        "--sets", type=int, default=0, help="this many sets in all (bulk inserts), e.g. 5000"
    )
    parser.add_argument("--only", default="", help="measure only pages whose name holds this")
    parser.add_argument("--rebuild", action="store_true", help="SQLite: build the data again")
    parser.add_argument("--sqlite", default="", help="SQLite: this file, not the shared /tmp one")
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        name = f"{args.scale:g}" + (f"-{args.sets}" if args.sets else "")
        path = Path(args.sqlite or f"/tmp/scale-pages-{name}.sqlite3")
        if args.rebuild and not args.measure:
            for suffix in ("", "-wal", "-shm"):
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        database_url = f"sqlite:///{path}"
    if args.measure:
        setup_django(database_url)
        results = measure(args.rounds, args.only)
        print("RESULTS " + json.dumps(results))
        return
    setup_django(database_url)
    build(args.scale, args.sets)
    # measure in a fresh process, so its memory is the web process's, not the builder's
    out = subprocess.run(
        [sys.executable, __file__, "--measure", *sys.argv[1:]],
        env={**os.environ, "DATABASE_URL": database_url},
        capture_output=True,
        text=True,
    )
    if out.returncode:
        sys.exit(out.stderr[-3000:])
    results = json.loads(out.stdout.split("RESULTS ", 1)[1])
    sizes = out.stdout.split("SIZES ", 1)[1].splitlines()[0]
    engine = "PostgreSQL" if database_url.startswith("postgres") else "SQLite"
    print(
        f"\n{engine}, scale {args.scale:g} ({sizes}), p50 of {args.rounds} requests after a warm-up"
    )
    print("(page names give the sizes at scale 1)\n")
    print(
        f"{'page':36} {'p50 ms':>8} {'CPU ms':>8} {'queries':>8} {'bytes':>11} "
        f"{'growth MB':>10}  target"
    )
    for r in results:
        ms, size = TARGETS.get(r["page"], (None, None))
        aim = []
        if ms:
            aim.append(f"<= {ms} ms")
        if size:
            aim.append(f"<= {size / 1e6:g} MB")
        print(
            f"{r['page']:36} {r['p50_ms']:8.1f} {r['cpu_ms']:8.1f} {r['queries']:8d} "
            f"{r['bytes']:11,d} "
            f"{r['growth_mb']:10.1f}  {', '.join(aim)}"
        )


if __name__ == "__main__":
    main()
