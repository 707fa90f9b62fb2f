"""How long a batch run takes against a provider: the run's span beside the ideal, and CPU a state.

The run is made as a user makes it (`services.batch_create`, queued, as the run page does) and
worked by real `manage.py db_worker --no-reload --interval 1` processes that this bench starts
(1 or 2, the Procfile's `worker` line), against a light stand-in provider in a process of its
own (bench/_span.py: each POST answered exactly the latency after it arrived, every answer
worked out once, in an untimed warm-up run, so the provider takes almost no CPU). The work:
`--states` sample states of about 1.2 KB, one choice question of 8 described options.

Printed per cell (latency, workers, K), medians of `--rounds`:
- span: the run's own `finished_at - started_at` (its first claim to its end);
- ideal: states ÷ K × latency, what a run would take if every call took exactly the latency;
- ratio: span ÷ ideal, against its aim (below) and whether it is met;
- CPU a state: the worker processes' user + system CPU over the round (their helpers', if
  any, included; read from /proc), divided by the states;
- the 1-minute load average the cell's rounds started at, and the provider's CPU a request.
Each round checks that every state was answered and the provider asked exactly once a state.
The cells' rounds alternate (every cell's first round, then every cell's second, ...), so a
busy minute of the machine spreads over the cells rather than sinking one.

Aims (a quiet machine, median of 3): span <= 1.10 x ideal at K = 8, <= 1.30 x at K = 32,
<= 1.60 x at K = 64 with one worker at 200 ms; <= 1.15 x at every K up to 64 at 1 s; two
workers at K = 128 <= 1.60 x.

Run:   DATABASE_URL=postgres://… .venv/bin/python bench/run_span.py
       [--states 1000] [--latency-ms 200 1000] [--concurrency 8 32 64] [--workers 1 2]
       [--wide 128] [--rounds 3]
Smoke: .venv/bin/python bench/run_span.py --quick  (64 states, 1 round, 200 ms, K = 8, 1 worker)
Two workers want PostgreSQL; without DATABASE_URL one worker runs on a throwaway SQLite file.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)
from _span import StandIn, load, make_set, tree_cpu  # noqa: E402

#: the worker's command line, as the Procfile's `worker` runs it
WORKER = ["manage.py", "db_worker", "--no-reload", "--interval", "1"]
QUICK = {"states": 64, "rounds": 1, "latency_ms": [200.0], "concurrency": [8], "workers": [1]}
DEFAULTS = {
    "states": 1000,
    "rounds": 3,
    "latency_ms": [200.0, 1000.0],
    "concurrency": [8, 32, 64],
    "workers": [1, 2],
}


def aim(latency_ms: float, workers: int, k: int) -> float | None:
    """The most span ÷ ideal the cell may take (issue 36's aims), None where none is set."""
    if workers >= 2 and k == 128:
        return 1.60
    if latency_ms >= 1000 and k <= 64:
        return 1.15
    if latency_ms == 200 and workers == 1:
        return {8: 1.10, 32: 1.30, 64: 1.60}.get(k)
    return None


@dataclass
class Cell:
    latency_ms: float
    workers: int
    k: int
    states: int
    rounds: list[dict] = field(default_factory=list)

    @property
    def ideal(self) -> float:
        return self.states / self.k * self.latency_ms / 1000

    def median(self, key: str) -> float:
        return statistics.median(r[key] for r in self.rounds)


class Workers:
    """`n` real `manage.py db_worker` processes with this environment, their output in a log
    file each; ready once each has written its first heartbeat (what /healthz reads)."""

    def __init__(self, n: int, env: dict[str, str], logs: Path):
        from questions.models import WorkerHeartbeat

        self.logs = [logs / f"worker-{len(list(logs.iterdir())) + i}.log" for i in range(n)]
        self.processes = []
        for path in self.logs:
            out = path.open("w")
            self.processes.append(
                subprocess.Popen(
                    [sys.executable, *WORKER], cwd=ROOT, env=env, stdout=out, stderr=out
                )
            )
        self.pids = [p.pid for p in self.processes]
        deadline = time.monotonic() + 300
        while WorkerHeartbeat.objects.filter(pid__in=self.pids).count() < n:
            for p, path in zip(self.processes, self.logs, strict=True):
                if p.poll() is not None:
                    self.stop()
                    sys.exit(f"run_span: a db_worker ended at start; its log: {path}")
            if time.monotonic() > deadline:
                self.stop()
                sys.exit(f"run_span: the db_workers did not start within 300 s; logs: {logs}")
            time.sleep(0.2)

    def cpu(self) -> float:
        return tree_cpu(self.pids)

    def stop(self) -> None:
        """SIGTERM (a worker's graceful stop), then SIGKILL after 30 s."""
        for p in self.processes:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int)
    parser.add_argument("--rounds", type=int)
    parser.add_argument("--latency-ms", type=float, nargs="+")
    parser.add_argument("--concurrency", type=int, nargs="+", help="K, default 8 32 64")
    parser.add_argument("--workers", type=int, nargs="+", help="db_workers, default 1 2")
    parser.add_argument(
        "--wide",
        type=int,
        nargs="*",
        default=[128],
        help="the concurrencies measured with two workers or more only (default 128)",
    )
    parser.add_argument("--quick", action="store_true", help="a smoke: " + str(QUICK))
    args = parser.parse_args()
    chosen = QUICK if args.quick else DEFAULTS
    for name, value in chosen.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.quick:
        args.wide = []
    return args


def main() -> None:
    args = arguments()
    bench_environment()
    from questions.dev import standin as project_standin

    os.environ["TYPESAFE_API_KEY"] = project_standin.KEY
    if not os.environ.get("DATABASE_URL"):
        workdir = tempfile.mkdtemp(prefix="bench-span-")
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir}/bench.sqlite3"
    start_django()
    import logging

    from django.db import connection

    from questions import services
    from questions.models import BatchRun
    from questions.selectors import runs

    if connection.vendor != "postgresql" and max(args.workers) > 1:
        sys.exit(
            "run_span: two db_workers share a run only on PostgreSQL (SQLite has one writer "
            "at a time): set DATABASE_URL=postgres://… or give --workers 1"
        )
    logging.getLogger("questions").setLevel(logging.WARNING)
    migrate()
    unfinished = list(
        BatchRun.objects.filter(
            status__in=[BatchRun.Status.QUEUED, BatchRun.Status.RUNNING]
        ).values_list("pk", flat=True)
    )
    if unfinished:
        print(
            f"note: the database holds unfinished runs {unfinished[:10]} "
            f"({len(unfinished)}): the bench's workers may take them too",
            flush=True,
        )

    _, version, author = make_set(args.states, "span")
    provider = StandIn(args.latency_ms)
    logs = Path(tempfile.mkdtemp(prefix="bench-span-workers-"))
    env = dict(os.environ)
    finished = {BatchRun.Status.DONE, BatchRun.Status.FAILED, BatchRun.Status.CANCELLED}

    def one_run(workers: Workers, k: int) -> dict:
        """A run at K, queued as the run page queues it, worked by `workers`, timed."""
        before, cpu = provider.counts(), workers.cpu()
        served_cpu, started = provider.cpu(), os.getloadavg()[0]
        run = services.batch_create(version=version, backend="typesafe", user=author, concurrency=k)
        status = BatchRun.objects.filter(pk=run.pk).values_list("status", flat=True)
        while status[0] not in finished:  # a fresh query each time: a QuerySet's [0] is one
            time.sleep(0.1)
        cpu = workers.cpu() - cpu
        after = provider.counts()
        run.refresh_from_db()
        counts = runs.run_counts(run)
        return {
            "span": (run.finished_at - run.started_at).total_seconds(),
            "cpu_ms": cpu * 1000 / args.states,
            "answered": counts["answered"],
            "asked": after["served"] - before["served"],
            "worked": after["worked"] - before["worked"],
            "provider_ms": (provider.cpu() - served_cpu) * 1000 / args.states,
            "load": started,
            "run": run.pk,
        }

    cells: list[Cell] = []
    print(
        f"run span — {args.states} states of 1 choice question, {connection.vendor}, "
        f"db_workers {args.workers}, K {args.concurrency}"
        + (f" (and {args.wide} with two workers)" if args.wide and max(args.workers) > 1 else "")
        + ", "
        f"latency {[f'{ms:g} ms' for ms in args.latency_ms]}, {args.rounds} round(s)",
        flush=True,
    )
    print(f"load average at the start: {load()}", flush=True)
    try:
        for latency_ms in args.latency_ms:
            env["TYPESAFE_BASE_URL"] = provider.url(latency_ms)
            for n in args.workers:
                ks = args.concurrency + (args.wide if n >= 2 else [])
                group = [Cell(latency_ms, n, k, args.states) for k in ks]
                workers = Workers(n, env, logs)
                try:
                    # untimed: the workers' first connections (and helpers), the provider's answers
                    warm = one_run(workers, max(ks))
                    print(
                        f"  {latency_ms:g} ms, {n} worker(s): warm-up run at K={max(ks)} "
                        f"{warm['span']:.2f} s, {warm['worked']} answers worked out",
                        flush=True,
                    )
                    for r in range(args.rounds):
                        for cell in group:
                            result = one_run(workers, cell.k)
                            cell.rounds.append(result)
                            print(
                                f"  {latency_ms:g} ms, {n} worker(s), K={cell.k}, round {r + 1}: "
                                f"span {result['span']:.2f} s ({result['span'] / cell.ideal:.3f} "
                                f"x ideal), CPU {result['cpu_ms']:.2f} ms a state, "
                                f"load {result['load']:.2f}",
                                flush=True,
                            )
                finally:
                    workers.stop()
                cells.extend(group)
    finally:
        provider.stop()
    report(cells, args.states)
    print(f"load average at the end: {load()}")


def report(cells: list[Cell], states: int) -> None:
    print()
    print(
        f"{'latency':>7} {'workers':>7} {'K':>4} {'span s':>7} {'ideal s':>7} {'ratio':>6} "
        f"{'aim':>6} {'met':>5} {'CPU ms/state':>12} {'load':>11} {'provider ms':>11}  "
        "answered, asked once"
    )
    for cell in cells:
        ratio = statistics.median(r["span"] / cell.ideal for r in cell.rounds)
        limit = aim(cell.latency_ms, cell.workers, cell.k)
        met = "-" if limit is None else ("yes" if ratio <= limit else "NO")
        loads = [r["load"] for r in cell.rounds]
        exact = all(r["answered"] == states and r["asked"] == states for r in cell.rounds)
        print(
            f"{cell.latency_ms:>5g}ms {cell.workers:>7} {cell.k:>4} {cell.median('span'):>7.2f} "
            f"{cell.ideal:>7.2f} {ratio:>6.3f} {'-' if limit is None else f'{limit:.2f}':>6} "
            f"{met:>5} {cell.median('cpu_ms'):>12.2f} "
            f"{f'{min(loads):.1f}-{max(loads):.1f}':>11} {cell.median('provider_ms'):>11.3f}  "
            f"{min(r['answered'] for r in cell.rounds)}/{states}, "
            f"{'yes' if exact else 'NO'}"
        )
    redone = sum(r["worked"] for cell in cells for r in cell.rounds)
    print(
        f"answers the provider worked out during the rounds: {redone} "
        "(0: every round's provider cost was its HTTP alone)"
    )


if __name__ == "__main__":
    main()
