"""One run worked by one or two real `db_worker` processes on PostgreSQL: its span ÷ the ideal.

1,000 sample states of `batch_scale`'s 6 questions, the project's stand-in at 200 ms in a
process of its own (`batch_scale.StandIn`: each distinct body answered from what it worked out
once, in an untimed warm-up run). For each case `KxW` (concurrency K, W workers), W fresh
`manage.py db_worker` processes on the bench's database take the run as the run page queues it
(`batch_create`, enqueued: on PostgreSQL one task per 64 calls, `services.batches.task_widths`).

Printed per case: the median span over the rounds (the run's `started_at` to `finished_at`), the
ideal (states ÷ K × latency), their ratio, the workers' CPU per state (their processes' own,
read from /proc), the states answered and those asked more than once (none, when each is asked
exactly once); and the load average before and after. Each worker's log (JSON lines) goes to
`--logs` (a temporary directory by default): with two workers, the line of the one that ended
its share first and the run's end line say how far apart they ended.

Run:  DATABASE_URL=postgres://… .venv/bin/python bench/batch_workers.py [--states 1000]
      [--rounds 3] [--cases 64x1 128x1 128x2] [--latency-ms 200]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)
from batch_scale import QUESTIONS, StandIn, _process_cpu, insert_states  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", nargs="+", default=["64x1", "128x1", "128x2"])
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--logs", default=None)
    args = parser.parse_args()
    cases = [tuple(int(n) for n in case.split("x")) for case in args.cases]
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("bench: DATABASE_URL must name a PostgreSQL database (workers share a run there)")

    bench_environment()
    start_django()
    import logging

    from django.conf import settings
    from django.db import connection

    from questions import services
    from questions.dev import standin
    from questions.models import BatchRun
    from tests import factories

    logging.getLogger("questions").setLevel(logging.WARNING)
    migrate()
    provider = StandIn(args.latency_ms)
    url = f"http://127.0.0.1:{provider.port.value}"
    settings.TYPESAFE_API_KEY, settings.TYPESAFE_BASE_URL = standin.KEY, url
    user = factories.author(f"bench-{uuid.uuid4().hex[:6]}")
    qs = factories.question_set(f"workers-{uuid.uuid4().hex[:8]}", owner=user, doc=QUESTIONS)
    insert_states(qs, user, args.states)
    version = services.open_draft(qs)
    logs = Path(args.logs or tempfile.mkdtemp(prefix="bench-workers-"))
    logs.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "DJANGO_DEBUG": "0",
        "TYPESAFE_API_KEY": standin.KEY,
        "TYPESAFE_BASE_URL": url,
        "DECISIONS__TIMEOUT_SECONDS": "30",
    }

    def started(n: int) -> list[subprocess.Popen]:
        workers = []
        for i in range(n):
            out = (logs / f"worker-{n}-{i}.log").open("a")
            workers.append(
                subprocess.Popen(
                    [
                        *(sys.executable, "manage.py", "db_worker", "--no-reload"),
                        *("--no-startup-delay", "--interval", "0.1", "--verbosity", "0"),
                        *("--worker-id", f"bench-{n}-{i}"),
                    ],
                    cwd=ROOT,
                    env=env,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                )
            )
        return workers

    def one(k: int, workers: list[subprocess.Popen]) -> dict:
        before = {w.pid: _process_cpu(w.pid) or 0.0 for w in workers}
        run = services.batch_create(version=version, backend="typesafe", user=user, concurrency=k)
        while not BatchRun.objects.get(pk=run.pk).finished:
            time.sleep(0.05)
        run = BatchRun.objects.get(pk=run.pk)
        time.sleep(0.5)  # the worker that left first has logged its line
        cpu = sum((_process_cpu(w.pid) or 0.0) - before[w.pid] for w in workers)
        result = {
            "span": (run.finished_at - run.started_at).total_seconds(),
            "cpu_ms": cpu * 1000 / args.states,
            "answered": run.items.filter(status="answered").count(),
            "again": run.items.filter(attempts__gt=1).count(),
        }
        connection.close()
        return result

    latency = args.latency_ms / 1000
    print(
        f"batch workers — {args.states} states, stand-in latency {args.latency_ms:.0f} ms, "
        f"{args.rounds} rounds per case; logs in {logs}"
    )
    print(f"load average at the start: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results: dict[tuple[int, int], list[dict]] = {case: [] for case in cases}
    for n in sorted({w for _, w in cases}):
        workers = started(n)
        try:
            one(max(k for k, w in cases if w == n), workers)  # untimed: workers up, answers kept
            for _ in range(args.rounds):
                for k, w in cases:
                    if w == n:
                        results[(k, w)].append(one(k, workers))
        finally:
            for worker in workers:
                worker.terminate()
            for worker in workers:
                worker.wait(30)
    print(
        f"{'case':>6} {'ideal s':>8} {'span s':>7} {'span/ideal':>10} {'CPU ms/state':>12}  spans"
    )
    for (k, w), rounds in results.items():
        ideal = args.states * latency / k
        span = statistics.median(r["span"] for r in rounds)
        print(
            f"{f'{k}x{w}':>6} {ideal:>8.2f} {span:>7.2f} {span / ideal:>10.2f} "
            f"{statistics.median(r['cpu_ms'] for r in rounds):>12.2f}  "
            + ", ".join(f"{r['span']:.2f}" for r in rounds)
            + f"; answered {min(r['answered'] for r in rounds)}/{args.states}, "
            f"asked more than once {max(r['again'] for r in rounds)}",
            flush=True,
        )
    print(f"load average at the end: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
