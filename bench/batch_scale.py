"""The batch engine at scale: span ÷ ideal and span ÷ bare loop at concurrency 8 to 128.

1,000 sample states (or --states 10000; inserted in bulk) of 6 questions, about 1.2 KB of state
each; the project's stand-in answering after 200 ms in a process of its own, each distinct body
from the answer it worked out in an untimed warm-up pass (`StandIn`: working them out in the
rounds kept a core busy at K >= 64, and the rounds measured the stand-in). For each
concurrency, rounds alternate (engine first in odd rounds, bare loop first in even ones):

- engine: `batch_create` + `batch_execute`, everything a real run does (claims, provider
  calls, answer checks, recordings, heartbeat);
- bare loop: K asyncio loops POSTing the same request bytes through a plain
  `httpx.AsyncClient` of one connection each (one TLS context for all, as the engine has),
  each status checked — no database, no answer checks: the floor. (One pooled `AsyncClient` of
  K connections is slower at K = 64: httpcore scans every connection on every request and
  response.) The engine's own calls go through its own transport, HTTP/1.1 on an asyncio
  protocol (`questions.engine.backends.streams`), which costs less CPU than the client does.

A run here is one executor in this process at the whole K (`batch_execute` without a task),
as a run is in a `db_worker` up to `batches.WORKER_CALLS` (64) calls at a time; a queued run
wider than that is shared by several workers (docs/operating.md). An untimed engine run at the
widest K goes first (connections opened, code warm).

Printed per concurrency: medians of span ÷ ideal and span ÷ bare loop over the rounds, the
engine's and the bare loop's CPU per state (the whole process's, but for the bench's own
connection poller; "of it DB": this process's thread that claims and writes), this process's
SQL statements per state (those through Django: a COPY of recordings is not counted),
(PostgreSQL) the most connections the database saw from the run and the CPU per state of the
database's process serving the run ("PG CPU", when PostgreSQL runs on this machine: the bare
loop records nothing), and the stand-in's CPU per request ("provider CPU"); the load average
before and after. The rounds run with the garbage collector a `db_worker`
runs its tasks with (`batches.fewer_collections`; the bare loop shares it, in the same process).
SQLite by default
(a file in a temporary directory); PostgreSQL when DATABASE_URL names it (the bench migrates it
and adds a set of its own).

Run:  .venv/bin/python bench/batch_scale.py [--states 1000] [--rounds 3] [--concurrency 8 32 64 128]
Aim:  span within 10 % of the bare loop at 8, 32, 64 and 128 on PostgreSQL (8 and 32 on SQLite),
      and the engine's CPU per state <= 1.5 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import multiprocessing
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)

QUESTIONS = {
    "route": {
        "type": "choice",
        "instructions": "Which team should take this ticket?",
        "criteria": {f"team_{i}": f"the team for kind {i} of work" for i in range(12)},
    },
    "product": {
        "type": "choice",
        "instructions": "Which product is it about?",
        "criteria": {f"product_{i}": f"product number {i}" for i in range(20)},
    },
    "severity": {
        "type": "score",
        "instructions": "How severe is it?",
        "criteria": ["none", "minor", "moderate", "major", "critical"],
    },
    "effort": {"type": "score", "criteria": ["small", "medium", "large"]},
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    "refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"},
}


def a_state(i: int) -> dict:
    words = " ".join(f"word{(i * 7 + j) % 97}" for j in range(150))
    return {"ticket": i, "subject": f"ticket number {i}", "body": words, "tier": i % 3}


def _serve(port, latency_ms: float, worked) -> None:
    import dataclasses
    import json

    from questions.dev import standin

    route = standin.ROUTES["/v1/systemone"]
    kept: dict[str, tuple] = {}

    def respond(body):
        """The stand-in's answer, worked out once per distinct body (`worked` counts them)."""
        key = json.dumps(body)
        if key not in kept:
            kept[key] = route.respond(body)
            with worked.get_lock():  # the server answers in a thread per connection
                worked.value += 1
        return kept[key]

    standin.ROUTES["/v1/systemone"] = dataclasses.replace(route, respond=respond)
    server = standin.make_server(0, latency_ms)
    port.value = server.server_address[1]
    server.serve_forever()


class StandIn:
    """The project's stand-in in a process of its own, as a provider is, answering each distinct
    body from what it worked out the first time: its answers read the words of every state
    (3–3.6 ms of CPU a request on a two-core machine), which at K >= 64 kept a core busy that
    the engine and the bare loop then competed for, so the rounds measured the stand-in. Warmed
    by an untimed pass over the bodies, a round's provider costs only its HTTP; its CPU per
    request and the answers it still had to work out are printed."""

    def __init__(self, latency_ms: float):
        self.port, self.worked = multiprocessing.Value("i", 0), multiprocessing.Value("i", 0)
        self.process = multiprocessing.Process(
            target=_serve, args=(self.port, latency_ms, self.worked), daemon=True
        )
        self.process.start()
        while not self.port.value:
            time.sleep(0.01)

    def cpu(self) -> float:
        """The stand-in process's CPU seconds so far."""
        return _process_cpu(self.process.pid) or 0.0


async def _bare(url: str, bodies: list[bytes], concurrency: int, timeout: float) -> int:
    """The floor: K loops POSTing the bodies through the engine's transport (an
    httpx.AsyncClient of one connection each); the number that did not answer 200."""
    import httpx

    from questions.dev import standin

    one = httpx.Limits(max_connections=1, max_keepalive_connections=1)
    headers = {"Authorization": f"Bearer {standin.KEY}", "Content-Type": "application/json"}
    todo, failed = list(reversed(bodies)), [0]
    tls = _tls()  # one TLS context for all, as the engine has: each costs ~20 ms of CPU to build

    async def loop() -> None:
        async with httpx.AsyncClient(limits=one, trust_env=False, verify=tls) as client:
            while todo:
                body = todo.pop()
                try:
                    async with asyncio.timeout(timeout):
                        response = await client.post(url, content=body, headers=headers)
                except (TimeoutError, httpx.HTTPError):  # counted, as the engine counts it
                    failed[0] += 1
                    continue
                failed[0] += response.status_code != 200

    await asyncio.gather(*(loop() for _ in range(concurrency)))
    return failed[0]


@functools.cache
def _tls():
    import httpx

    return httpx.create_ssl_context()


def _stat_cpu(stat: Path) -> float | None:
    """The CPU seconds (user + system) a /proc `stat` file gives, None if it cannot be read."""
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _process_cpu(pid: int | None) -> float | None:
    """CPU seconds of a process of this machine so far (Linux's /proc), None if it is not here."""
    return None if pid is None else _stat_cpu(Path(f"/proc/{pid}/stat"))


def _thread_cpu() -> dict[int, float]:
    """CPU seconds of each thread of this process (Linux's /proc), by native id."""
    cpu = {
        int(stat.parent.name): _stat_cpu(stat) for stat in Path("/proc/self/task").glob("*/stat")
    }
    return {tid: seconds for tid, seconds in cpu.items() if seconds is not None}


class Connections:
    """The most connections PostgreSQL saw to this database while the block ran (not ours)."""

    def __init__(self, settings_dict: dict):
        self.settings = settings_dict
        self.most = 0

    def __enter__(self):
        import psycopg

        self.stop = threading.Event()
        s = self.settings
        self.conn = psycopg.connect(
            host=s["HOST"], port=s["PORT"] or 5432, user=s["USER"], dbname=s["NAME"],
            password=s["PASSWORD"] or None, autocommit=True,
        )  # fmt: skip
        self.thread = threading.Thread(target=self._poll, daemon=True)
        self.most, self.cpu = 0, 0.0
        self.thread.start()
        return self

    def _poll(self) -> None:
        while not self.stop.wait(0.05):
            [(n,)] = self.conn.execute(
                "select count(*) from pg_stat_activity "
                "where datname = current_database() and pid <> pg_backend_pid()"
            ).fetchall()
            self.most = max(self.most, n)
        self.cpu = time.thread_time()  # what the polling cost this process, not the engine's

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join()
        self.conn.close()


def insert_states(qs, user, count: int) -> None:
    """The sample states through bulk inserts, as `sample_state_create` would store them (the
    services take about 12 ms a state: two minutes for 10,000)."""
    from questions.core import spec
    from questions.models import SampleState, SampleStateRevision
    from questions.services.versions import document_text

    for start in range(0, count, 2000):
        part = range(start, min(count, start + 2000))
        states = SampleState.objects.bulk_create(
            SampleState(
                question_set=qs, name=f"state {i:05d}", state_text=document_text(a_state(i))
            )
            for i in part
        )
        if not all(s.pk for s in states):  # SQLite before 3.35 returns no ids
            ids = dict(qs.sample_states.values_list("name", "pk"))
            for s in states:
                s.pk = ids[s.name]
        SampleStateRevision.objects.bulk_create(
            SampleStateRevision(
                sample_state_id=s.pk,
                revision=1,
                name=s.name,
                state_text=s.state_text,
                state_sha256=spec.state_sha256(a_state(i)),
                author=user,
            )
            for s, i in zip(states, part, strict=True)
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64, 128])
    parser.add_argument("--latency-ms", type=float, default=200)
    args = parser.parse_args()

    bench_environment()
    if not os.environ.get("DATABASE_URL"):
        workdir = tempfile.mkdtemp(prefix="bench-scale-")
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    start_django()
    import logging

    from django.conf import settings
    from django.db import connection

    from questions import services
    from questions.core import spec
    from questions.dev import standin
    from questions.engine import backends, batches
    from questions.models import BatchRun
    from tests import factories

    logging.getLogger("questions").setLevel(logging.WARNING)
    migrate()
    provider = StandIn(args.latency_ms)
    port = provider.port.value
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{port}"
    settings.DECISIONS_TIMEOUT_SECONDS = 30
    postgres = connection.vendor == "postgresql"

    user = factories.author(f"bench-{uuid.uuid4().hex[:6]}")
    qs = factories.question_set(f"scale-{uuid.uuid4().hex[:8]}", owner=user, doc=QUESTIONS)
    insert_states(qs, user, args.states)
    version = services.open_draft(qs)
    questions = spec.validate(version.document, limits=spec.DEFAULT_LIMITS).document.questions
    wire = backends.get("typesafe").wire()
    bodies = [
        wire.prepare(backends.Ask(questions=questions, state=a_state(i), model="jev-latest"))[1]
        for i in range(args.states)
    ]
    url = wire.url
    asyncio.run(_bare(url, bodies, 32, settings.DECISIONS_TIMEOUT_SECONDS))  # the warm-up pass
    warmed = provider.worked.value

    def engine(k: int) -> dict:
        run = services.batch_create(
            version=version, backend="typesafe", user=user, concurrency=k, enqueue=False
        )
        statements = [0]

        def count(execute, sql, params, many, context):
            statements[0] += 1
            return execute(sql, params, many, context)

        watch = Connections(connection.settings_dict) if postgres else None
        threads = _thread_cpu()
        served = provider.cpu()
        server = None  # the PostgreSQL backend of the run's connection, when it runs here
        if postgres:
            connection.ensure_connection()
            server = connection.connection.info.backend_pid
        recorded = _process_cpu(server)
        cpu, start = time.process_time(), time.perf_counter()
        with connection.execute_wrapper(count), watch or _nothing():
            services.batch_execute(run.pk)
        span = time.perf_counter() - start
        cpu = time.process_time() - cpu
        served = provider.cpu() - served
        if recorded is not None:
            recorded = (_process_cpu(server) or recorded) - recorded
        here = threading.get_native_id()
        after = _thread_cpu()
        db_thread = after.get(here, 0) - threads.get(here, 0)
        if watch:  # the bench's own poller is not the engine's
            cpu -= watch.cpu
        run = BatchRun.objects.get(pk=run.pk)
        answered = run.items.filter(status="answered").count()
        return {
            "span": span,
            "cpu_ms": cpu * 1000 / args.states,
            # the thread that claims and writes; the rest is the calls' loop (and the pollers)
            "db_ms": db_thread * 1000 / args.states,
            "sql": statements[0] / args.states,
            "connections": watch.most if watch else None,
            "answered": answered,
            "provider_ms": served * 1000 / args.states,
            "database_ms": None if recorded is None else recorded * 1000 / args.states,
        }

    def bare(k: int) -> dict:
        served = provider.cpu()
        cpu, start = time.process_time(), time.perf_counter()
        failed = asyncio.run(_bare(url, bodies, k, settings.DECISIONS_TIMEOUT_SECONDS))
        return {
            "span": time.perf_counter() - start,
            "cpu_ms": (time.process_time() - cpu) * 1000 / args.states,
            "failed": failed,
            "provider_ms": (provider.cpu() - served) * 1000 / args.states,
        }

    latency = args.latency_ms / 1000
    print(
        f"batch scale — {args.states} states, stand-in latency {args.latency_ms:.0f} ms, "
        f"{connection.vendor}, {args.rounds} alternating rounds per concurrency"
    )
    print(
        f"{'K':>3} {'ideal s':>8} {'engine s':>9} {'bare s':>7} {'eng/ideal':>9} "
        f"{'bare/ideal':>10} {'eng/bare':>8} {'CPU ms/state':>12} {'of it DB':>8} "
        f"{'bare CPU':>8} {'SQL/state':>9} "
        f"{'PG conns':>8} {'PG CPU':>6} {'provider CPU':>12}  answered, bare failures"
    )
    results, cpu_per_state = {}, {}
    print(f"load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    # the rounds run with the collector a db_worker runs its tasks with (an older commit has none)
    worker = getattr(batches, "fewer_collections", None)
    print(
        "garbage collector: "
        + (
            f"a worker's (start frozen, young every {batches.YOUNG_COLLECTION:,})"
            if worker
            else "Python's"
        )
    )
    with worker() if worker else contextlib.nullcontext():
        warm = engine(max(args.concurrency))  # untimed: connections opened, code warm
        print(
            f"warm-up: an engine run at K={max(args.concurrency)}, {warm['span']:.2f} s",
            flush=True,
        )
        for k in args.concurrency:
            ideal = args.states * latency / k
            engines, bares = [], []
            for r in range(args.rounds):
                order = (engine, bare) if r % 2 == 0 else (bare, engine)
                for f in order:
                    (engines if f is engine else bares).append(f(k))
            spans = [e["span"] for e in engines]
            floors = [b["span"] for b in bares]
            ratio = statistics.median(e / b for e, b in zip(spans, floors, strict=True))
            results[k] = ratio
            cpu_per_state[k] = statistics.median(e["cpu_ms"] for e in engines)
            conns = max(e["connections"] or 0 for e in engines) if postgres else "-"
            print(
                f"{k:>3} {ideal:>8.2f} {statistics.median(spans):>9.2f} "
                f"{statistics.median(floors):>7.2f} {statistics.median(spans) / ideal:>9.3f} "
                f"{statistics.median(floors) / ideal:>10.3f} {ratio:>8.3f} "
                f"{statistics.median(e['cpu_ms'] for e in engines):>12.2f} "
                f"{statistics.median(e['db_ms'] for e in engines):>8.2f} "
                f"{statistics.median(b['cpu_ms'] for b in bares):>8.2f} "
                f"{statistics.median(e['sql'] for e in engines):>9.2f} {conns!s:>8} "
                f"{_median_or_dash(e['database_ms'] for e in engines):>6} "
                f"{statistics.median(r['provider_ms'] for r in engines + bares):>12.2f}  "
                f"{min(e['answered'] for e in engines)}/{args.states}, "
                f"{sum(b['failed'] for b in bares)}",
                flush=True,
            )
            print(
                "     rounds engine/bare: "
                + ", ".join(f"{e / b:.3f}" for e, b in zip(spans, floors, strict=True)),
                flush=True,
            )
    targets = (8, 32, 64, 128) if postgres else (8, 32)
    verdict = ", ".join(
        f"K={k} {'meets' if results[k] <= 1.10 else 'misses'} ({(results[k] - 1) * 100:+.1f} %)"
        for k in targets
        if k in results
    )
    print(f"target: engine within 10 % of the bare loop at {targets} — {verdict}")
    cpu = ", ".join(f"K={k} {ms:.2f}" for k, ms in cpu_per_state.items())
    print(f"target: engine CPU per state <= 1.5 ms — {cpu}")
    print(
        f"the stand-in worked out {warmed} answers in the warm-up pass and "
        f"{provider.worked.value - warmed} in the rounds (0: every round's were kept ones)"
    )
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    provider.process.terminate()


def _median_or_dash(values) -> str:
    known = [v for v in values if v is not None]
    return f"{statistics.median(known):.2f}" if known else "-"


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


if __name__ == "__main__":
    main()
