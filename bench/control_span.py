"""A shuffle control's span against the ideal, as issue 12 names it.

64 sample states × 3 shuffles, a stand-in answering after 200 ms, concurrency 8. A shuffle
control asks every state as written and once per shuffle, so 64 × (1 + 3) = 256 calls: the
ideal span is 256 / 8 × 0.2 s = 6.4 s. The control goes through the console's batch engine
exactly as a run does (claims, retries policy, recordings, answer checks), with each call's
questions made by `questions.controls`; the stand-in runs in its own process and counts the
requests in flight (bench/batch_span.py's).

Run:  .venv/bin/python bench/control_span.py [--states 64] [--shuffles 3] [--concurrency 8]
      [--latency-ms 200]
Aim:  span within 15 % of the ideal; never more than `concurrency` requests in flight.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from batch_span import bench_world  # noqa: E402  (bench/ is on the path just above)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--states", type=int, default=64)
    parser.add_argument("--shuffles", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--latency-ms", type=float, default=200)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    latency = args.latency_ms / 1000
    process, seen, version, user, _ = bench_world("bench-control-", latency, args.states)
    from questions import services
    from questions.core import controls
    from questions.selectors import control_reports, runs
    from questions.services import controls as control_services

    calls = args.states * controls.variants(controls.SHUFFLE, args.shuffles)
    ideal = calls / args.concurrency * latency

    run = control_services.control_create(
        version=version,
        backend="typesafe",
        user=user,
        kind=controls.SHUFFLE,
        count=args.shuffles,
        seed=args.seed,
        concurrency=args.concurrency,
        enqueue=False,
    )
    start = time.perf_counter()
    run = services.batch_execute(run.pk)
    span = time.perf_counter() - start
    counts = runs.run_counts(run)
    summary = control_reports.control_summary(run)

    print(
        f"shuffle control span — {args.states} states × {args.shuffles} shuffles "
        f"(+ the real call each: {calls} calls), stand-in latency {args.latency_ms:.0f} ms, "
        f"concurrency {args.concurrency}; ideal {ideal:.2f} s"
    )
    print(
        f"run {run.pk}: {counts['answered']} answered, {counts['failed']} failed, "
        f"{seen['calls'].value} requests; span {span:.2f} s ({span / ideal:.2f} × ideal), "
        f"most in flight {seen['max'].value}"
    )
    desk = summary["control"]["questions"]["desk"]
    print(
        f"desk: real pass rate {desk['real_pass_rate']:.1%}, shuffled floor {desk['floor']:.1%}"
        f" (the stand-in reads no words: flagged {bool(desk['no_signal'])})"
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
