"""The runtime's export fetch under `make serve`, beside a static file from the same server.

Builds (through the services) an approved 32 × 255 question set whose export is about 2.4 MB,
labels it `production` and makes an API token; starts `make serve` (gunicorn with
WEB_CONCURRENCY=2, one task worker) on a free port; then 32 concurrent clients fetch, the
cases taking turns for --rounds rounds of --seconds each:
  static  a static file (the console's stylesheet, hashed name, as a browser gets it)
  304     GET /api/sets/<slug>/export.json?label=production with If-None-Match: <the ETag>
  200     the same without If-None-Match, gzip accepted (as the runtime's HTTP client does)
  200-raw the same, identity encoding
and prints requests per second and p50/p99 latency of each, with the ratios to the static file.
Targets (issue 10): 304 within 2× of the static file, 200 within 3×. The clients share the
machine with the server (one asyncio process), so on a small machine they take some of its CPU.

Run:  DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_export \
      .venv/bin/python bench/export_api.py [--seconds 5] [--rounds 3] [--clients 32] [--port 8391]
The database is created when missing; the set `bench-export` is made once and reused.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import secrets
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)

SLUG = "bench-export"


def setup_django(database_url: str) -> None:
    bench_environment(database_url)
    start_django()
    migrate()  # a PostgreSQL database that is missing is made first


def big_document(questions: int = 32, options: int = 255) -> dict:
    """A set at the contract's size: 32 choice questions of 255 options, each described in
    words drawn at random (seeded) from a vocabulary, so that it compresses like prose rather
    than like one sentence repeated."""
    rng = random.Random(32255)
    vocabulary = [
        "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 10)))
        for _ in range(3000)
    ]

    def words(n: int) -> str:
        return " ".join(rng.choice(vocabulary) for _ in range(n))

    return {
        f"q{i:02d}": {
            "type": "choice",
            "instructions": f"Question {i}: {words(40)}?",
            "criteria": {f"option-{i}-{j:03d}": words(36) for j in range(options)},
        }
        for i in range(questions)
    }


def publish() -> str:
    """The approved, labelled set (made once) and a new token; returns the token."""
    from django.contrib.auth import get_user_model

    from questions import roles, services
    from questions.models import QuestionSet

    User = get_user_model()

    writer, _ = User.objects.get_or_create(username="bench-author")
    checker, _ = User.objects.get_or_create(username="bench-reviewer")
    for user, role in ((writer, roles.AUTHOR), (checker, roles.REVIEWER)):
        services.member_set(
            team=services.team_default(), username=user.username, role=role, user=roles.OPERATOR
        )
    if not QuestionSet.objects.filter(slug=SLUG).exists():
        qs = services.question_set_create(slug=SLUG, name="Export bench", owner=writer)
        version = services.version_create(question_set=qs, document=big_document(), author=writer)
        version = services.version_submit(version=version, author=writer)
        services.version_approve(
            confirm_weak_evidence=True, version=version, reviewer=checker, label="production"
        )
    _, raw = services.api_token_create(name=f"bench {time.time():.0f}", user=checker)
    return raw


def free_port(preferred: int) -> int:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", preferred))
        except OSError:
            s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(database_url: str, port: int) -> subprocess.Popen:
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        # a plain-HTTP trial on loopback (docs/operating.md, Run it for a team)
        "DJANGO_SSL_REDIRECT": "0",
        "DJANGO_SECURE_COOKIES": "0",
        "DJANGO_HSTS_SECONDS": "0",
        "DJANGO_LOG_LEVEL": "WARNING",
        "WEB_CONCURRENCY": "2",
        "WORKERS": "1",
    }
    env.pop("DJANGO_DEBUG", None)
    log = open(Path(tempfile.gettempdir()) / f"export_api_serve_{port}.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        ["make", "--no-print-directory", "serve", f"PORT={port}"],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code == 200:
                return server
        except httpx.HTTPError:
            pass
        if server.poll() is not None:
            break
        time.sleep(0.5)
    stop_server(server)
    sys.exit(f"make serve did not come up; see {log.name}")


def stop_server(server: subprocess.Popen) -> None:
    try:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(30)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        os.killpg(server.pid, signal.SIGKILL)


async def load(
    url: str, headers: dict, *, clients: int, seconds: float, expect: int
) -> tuple[int, list[float]]:
    """`clients` connections fetching `url` back to back for `seconds`; the latencies (ms) of
    the requests that ended inside the window. The body is read as it comes (not decoded)."""
    latencies: list[float] = []
    errors = 0
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(limits=limits, timeout=60) as client:

        async def one_client(stop_at: float) -> None:
            nonlocal errors
            while (now := time.perf_counter()) < stop_at:
                try:
                    async with client.stream("GET", url, headers=headers) as response:
                        async for _ in response.aiter_raw():
                            pass
                except httpx.TransportError:  # e.g. a kept-alive connection the server closed
                    errors += 1
                    continue
                if response.status_code != expect:
                    errors += 1
                latencies.append((time.perf_counter() - now) * 1000)

        await asyncio.gather(*(one_client(time.perf_counter() + 1) for _ in range(clients)))
        latencies.clear()  # the first second warms connections and caches
        await asyncio.gather(*(one_client(time.perf_counter() + seconds) for _ in range(clients)))
    return errors, latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5, help="per case and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--port", type=int, default=8391)
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL", "")
    if not database_url.startswith("postgres"):
        print("note: DATABASE_URL does not name PostgreSQL; the figures are for", database_url)
    setup_django(database_url or f"sqlite:///{ROOT / 'db.sqlite3'}")
    token = publish()
    port = free_port(args.port)
    server = start_server(database_url, port)
    try:
        base = f"http://127.0.0.1:{port}"
        page = httpx.get(f"{base}/accounts/login/").text
        css = next(part for part in page.split('"') if part.startswith("/static/console."))
        auth = {"Authorization": f"Bearer {token}"}
        export = f"{base}/api/sets/{SLUG}/export.json?label=production"
        first = httpx.get(export, headers=auth)
        first.raise_for_status()
        etag = first.headers["ETag"]
        print(
            f"export {len(first.content) / 1e6:.2f} MB ({first.num_bytes_downloaded / 1e3:.0f} kB "
            f"gzipped; {SLUG}), static {css}; "
            f"{args.clients} clients; {args.rounds} rounds of {args.seconds:g} s per case, taking "
            f"turns; make serve, WEB_CONCURRENCY=2, "
            f"{'PostgreSQL' if database_url.startswith('postgres') else 'SQLite'}"
        )
        cases = [
            ("static", base + css, {"Accept-Encoding": "gzip"}, 200),
            ("304", export, {**auth, "If-None-Match": etag, "Accept-Encoding": "gzip"}, 304),
            ("200", export, {**auth, "Accept-Encoding": "gzip"}, 200),
            ("200-raw", export, {**auth, "Accept-Encoding": "identity"}, 200),
        ]
        # the cases take turns, round after round, so that the load of anything else on the
        # machine falls on all of them alike; the figures pool the rounds
        pooled: dict[str, tuple[list[float], int]] = {name: ([], 0) for name, *_ in cases}
        for _ in range(args.rounds):
            for name, url, headers, expect in cases:
                errors, lat = asyncio.run(
                    load(url, headers, clients=args.clients, seconds=args.seconds, expect=expect)
                )
                latencies, failed = pooled[name]
                pooled[name] = (latencies + lat, failed + errors)
        rows = {}
        for name, (lat, errors) in pooled.items():
            lat.sort()
            rows[name] = (
                len(lat) / (args.seconds * args.rounds),
                statistics.median(lat),
                lat[min(len(lat) - 1, int(len(lat) * 0.99))],
                errors,
            )
        base_rps, base_p50, _base_p99, _ = rows["static"]
        print(f"{'path':8} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8}  {'p50 ×static':>11}  errors")
        for name, (rps, p50, p99, errors) in rows.items():
            print(f"{name:8} {rps:8.0f} {p50:8.1f} {p99:8.1f}  {p50 / base_p50:10.2f}×  {errors}")
        print("targets: 304 within 2× of static, 200 within 3× (p50; req/s ratio alike)")
        for name, target in (("304", 2), ("200", 3)):
            rps, p50, _, _ = rows[name]
            ok = p50 / base_p50 <= target and base_rps / rps <= target
            print(
                f"  {name}: p50 {p50 / base_p50:.2f}×, req/s {base_rps / rps:.2f}× slower "
                f"→ {'met' if ok else 'NOT met'}"
            )
    finally:
        stop_server(server)


if __name__ == "__main__":
    main()
