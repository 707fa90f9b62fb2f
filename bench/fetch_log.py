"""What the fetch log adds to one export fetch, in process (no HTTP): the time of
`services.export_fetch_record` when it only counts (the usual case: same token, label and
version within `FLUSH_EVERY`) and when it writes (one upsert), beside the two statements every
fetch makes anyway (the token check and `exports.export_ref`).

Run:  DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_export \
      .venv/bin/python bench/fetch_log.py [--calls 20000] [--writes 500]
Uses the set `bench-export` of bench/export_api.py (made there; run that once first) or any
set with a `production` label.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, start_django  # noqa: E402  (bench/ is the script's own folder)


def per_call_us(fn, calls: int) -> float:
    """The median over 5 batches of the time per call, in microseconds."""
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls // 5):
            fn()
        batches.append((time.perf_counter() - start) / (calls // 5) * 1e6)
    return statistics.median(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--writes", type=int, default=500)
    args = parser.parse_args()
    bench_environment(os.environ.get("DATABASE_URL") or f"sqlite:///{ROOT / 'db.sqlite3'}")
    start_django()
    from django.db import connection

    from questions import exports, roles, services
    from questions.models import Label
    from questions.services import fetches

    label = Label.objects.select_related("question_set").filter(name="production").first()
    if label is None:
        sys.exit("no set has a production label: run bench/export_api.py once first")
    slug = label.question_set.slug
    token, raw = services.api_token_create(
        name=f"bench fetch log {time.time():.0f}", user=roles.OPERATOR
    )
    ref = exports.export_ref(slug, label="production")

    def record() -> None:
        services.export_fetch_record(
            token_id=token.pk,
            set_id=ref.set_id,
            label="production",
            version_id=ref.version_id,
            etag="bench",
            status=304,
        )

    record()  # the first is written: a poller this process has not written yet
    counted = per_call_us(record, args.calls)
    fetches.FLUSH_EVERY = 0.0  # now every call writes its count
    written = per_call_us(record, args.writes)
    fetches.FLUSH_EVERY = 10.0
    checks = per_call_us(
        lambda: (
            services.api_token_authenticate(raw),
            exports.export_ref(slug, label="production"),
        ),
        args.writes,
    )
    print(
        f"{connection.vendor}; {args.calls} counted calls, {args.writes} written, "
        f"{args.writes} token checks + export_ref"
    )
    print(f"  counted (no write)           {counted:8.1f} µs per fetch")
    print(f"  written (one upsert)         {written:8.1f} µs per fetch")
    print(f"  token check + export_ref     {checks:8.1f} µs per fetch (every fetch, for scale)")


if __name__ == "__main__":
    main()
