"""A batch run's span against the ideal, and its concurrency bound, as issue 5 names them.

64 sample states, a stand-in answering after 200 ms, concurrency 8: the ideal span is
64 / 8 × 0.2 s = 1.6 s. Printed side by side, in the same run: the console's batch engine
(claims, retries policy, recordings, answer checks — everything a real run does) and a bare
loop of the same 64 requests through httpx with 8 threads (the floor), plus the most requests
the stand-in saw in flight at once.

Run:  .venv/bin/python bench/batch_span.py [--states 64] [--concurrency 8] [--latency-ms 200]
Aim:  span within 15 % of the ideal; never more than `concurrency` requests in flight.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)


def _serve(latency: float, port, now, most, calls) -> None:
    """The stand-in's answers after `latency` seconds, counting requests in flight; in its own
    process, as a provider is, so that it takes no share of the console's interpreter."""
    from questions.dev import standin

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with now.get_lock():
                now.value += 1
                calls.value += 1
                most.value = max(most.value, now.value)
            time.sleep(latency)
            status, out = standin.respond(body)
            with now.get_lock():
                now.value -= 1
            data = json.dumps(out).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    port.value = server.server_address[1]
    server.serve_forever()


def counting_stand_in(latency: float):
    counters = {name: multiprocessing.Value("i", 0) for name in ("port", "now", "max", "calls")}
    process = multiprocessing.Process(
        target=_serve,
        args=(latency, counters["port"], counters["now"], counters["max"], counters["calls"]),
        daemon=True,
    )
    process.start()
    while not counters["port"].value:
        time.sleep(0.01)
    return process, counters


#: the bench's question set: a choice, a noul and a score; states name a desk in turn
DESKS = {"billing": "money", "tech": "bugs", "other": "anything else"}
DOC = {
    "desk": {"type": "choice", "instructions": "Which desk?", "criteria": DESKS},
    "urgent": {"type": "noul", "instructions": "Is it urgent?"},
    "level": {"type": "score", "criteria": ["low", "mid", "high"]},
}


def bench_world(prefix: str, latency: float, states: int):
    """A throwaway SQLite console pointed at a counting stand-in of its own (its own process),
    with a draft of DOC and `states` sample states with expected answers. Returns the stand-in's
    process and counters, the draft, its author and DOC."""
    workdir = tempfile.mkdtemp(prefix=prefix)
    bench_environment(f"sqlite:///{workdir}/bench.sqlite3")
    import logging

    start_django()
    from django.conf import settings

    from questions import services
    from tests import factories

    logging.getLogger("questions").setLevel(logging.WARNING)
    migrate()
    process, seen = counting_stand_in(latency)
    settings.TYPESAFE_API_KEY = "bench"
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{seen['port'].value}"
    user = factories.author("bench")
    qs = factories.question_set("bench", owner=user, doc=DOC)
    for i in range(states):
        services.sample_state_create(
            question_set=qs,
            name=f"state {i:03d}",
            state={"message": f"message number {i}"},
            author=user,
            expected={"desk": list(DESKS)[i % 3], "urgent": i % 2 == 0},
        )
    return process, seen, services.open_draft(qs), user, DOC


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=200)
    args = parser.parse_args()

    latency = args.latency_ms / 1000
    process, seen, version, user, doc = bench_world("bench-batch-", latency, args.states)
    import httpx
    from django.conf import settings

    from questions import services
    from questions.core import spec
    from questions.selectors import runs

    ideal = args.states / args.concurrency * latency

    # the floor: the same requests, 8 threads, plain httpx
    bodies = [
        spec.canonical_json(
            {"state": {"message": f"message number {i}"}, "model": "jev-latest", "questions": doc}
        )
        for i in range(args.states)
    ]
    with httpx.Client() as client, ThreadPoolExecutor(args.concurrency) as pool:
        url = f"{settings.TYPESAFE_BASE_URL}/v1/systemone"
        headers = {"Authorization": "Bearer x", "Content-Type": "application/json"}
        client.post(url, content=bodies[0], headers=headers)
        seen["max"].value = 0
        start = time.perf_counter()
        list(pool.map(lambda b: client.post(url, content=b, headers=headers), bodies))
        floor = time.perf_counter() - start
    floor_max = seen["max"].value

    seen["max"].value = seen["calls"].value = 0
    run = services.batch_create(
        version=version, backend="typesafe", user=user, concurrency=args.concurrency, enqueue=False
    )
    start = time.perf_counter()
    run = services.batch_execute(run.pk)
    span = time.perf_counter() - start
    counts = runs.run_counts(run)
    recorded_span = (run.finished_at - run.started_at).total_seconds()

    print(
        f"batch span — {args.states} states, stand-in latency {args.latency_ms:.0f} ms, "
        f"concurrency {args.concurrency}; ideal {ideal:.2f} s"
    )
    print(f"{'what':44} {'span s':>8} {'/ ideal':>8} {'max in flight':>14}")
    print(
        f"{'floor: httpx, 8 threads, same requests':44} {floor:8.2f} {floor / ideal:8.2f} "
        f"{floor_max:14d}"
    )
    print(
        f"{'console: batch engine (batch_execute)':44} {span:8.2f} {span / ideal:8.2f} "
        f"{seen['max'].value:14d}"
    )
    print(
        f"run {run.pk}: {counts['answered']} answered, {counts['failed']} failed, "
        f"{seen['calls'].value} calls; span on the record {recorded_span:.2f} s"
    )
    within = span <= ideal * 1.15
    print(
        f"target: span within 15 % of ideal — {'meets' if within else 'misses'} "
        f"({(span / ideal - 1) * 100:+.1f} %); in flight ≤ {args.concurrency} — "
        f"{'meets' if seen['max'].value <= args.concurrency else 'misses'} "
        f"({seen['max'].value})"
    )
    process.terminate()


if __name__ == "__main__":
    main()
