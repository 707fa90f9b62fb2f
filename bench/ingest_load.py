"""Production states coming in under load: `POST /api/sets/<slug>/states` from one gunicorn
worker on PostgreSQL, as an application's reporter would send them.

Makes (once) a set `bench-ingest` with a choice, a score and a noul, an ingest token for it and
a daily quota large enough; starts gunicorn with ONE worker process (one thread) on a free port;
then, each round, one client sends --states new states (each unique: the round's nonce is in
it, so none is a duplicate) in NDJSON requests of --per-request lines, one request after
another, each record a state of about 300 bytes (one in five carries an e-mail address and one
in seven a card number, so redaction works) with production's answers. It prints per round the
states a second (kept, over the round's wall time) and the request latency p50 / p95, then the
median of the rounds, against the aims (issue 37): at least 2,000 states a second, p95 of a
1,000-line request at most 1 s. It checks that every state was stored, redacted, and that no
provider call was recorded (the ingest path never asks one).

Run:  DATABASE_URL=postgres://postgres@127.0.0.1:5432/bench_ingest \\
      .venv/bin/python bench/ingest_load.py [--states 100000] [--per-request 1000] [--rounds 3]
The database is created when missing; the set is made once and reused (its states deleted at
the start of each run).
"""

from __future__ import annotations

import argparse
import json
import os
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

SLUG = "bench-ingest"
DEFAULT_DATABASE = "postgres://postgres@127.0.0.1:5432/bench_ingest"
AIM_STATES_A_SECOND = 2000
AIM_P95_SECONDS = 1.0
DOCUMENT = {
    "desk": {
        "type": "choice",
        "instructions": "Which desk should take this ticket?",
        "criteria": {
            "billing": "money: a charge, an invoice, a refund",
            "shipping": "a parcel that is late, lost or damaged",
            "other": "anything else",
        },
    },
    "urgency": {"type": "score", "criteria": ["calm", "soon", "now"]},
    "churn": {"type": "noul", "instructions": "Will the customer leave over this?"},
}
ANSWERS = {
    "desk": {
        "type": "choice",
        "choice": "billing",
        "probabilities": {"billing": 0.71, "shipping": 0.19, "other": 0.1},
        "confidence": 0.64,
    },
    "urgency": {
        "type": "score",
        "score": 1.2,
        "probabilities": {"0": 0.2, "1": 0.4, "2": 0.4},
        "confidence": 0.4,
    },
    "churn": {"type": "noul", "noul": 0.31},
}


def setup(database_url: str) -> str:
    """The set (made once, its states deleted), a quota large enough, and a new ingest token."""
    bench_environment(database_url)
    start_django()
    migrate()
    from django.contrib.auth import get_user_model

    from questions import roles, services
    from questions.models import QuestionSet
    from questions.services import ingest as ingest_services

    writer, _ = get_user_model().objects.get_or_create(username="bench-author")
    services.member_set(
        team=services.team_default(),
        username=writer.username,
        role=roles.AUTHOR,
        user=roles.OPERATOR,
    )
    question_set = QuestionSet.objects.filter(slug=SLUG).first()
    if question_set is None:
        question_set = services.question_set_create(slug=SLUG, name="Ingest bench", owner=writer)
        services.version_create(question_set=question_set, document=DOCUMENT, author=writer)
    question_set.sample_states.all().delete()
    question_set.ingest_days.all().delete()
    services.ingest_configure(
        question_set=question_set,
        user=roles.OPERATOR,
        daily_quota=ingest_services.MOST_DAILY_QUOTA,
    )
    _, raw = services.api_token_create(
        name=f"bench {time.time():.0f}", user=roles.OPERATOR, scope="ingest", sets=[SLUG]
    )
    return raw


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_gunicorn(database_url: str, port: int) -> subprocess.Popen:
    """gunicorn with one worker process of one thread, as `make serve` runs it otherwise."""
    env = {
        **os.environ,
        "DATABASE_URL": database_url,
        "DJANGO_SECRET_KEY": secrets.token_urlsafe(50),
        "DJANGO_ALLOWED_HOSTS": "127.0.0.1",
        "DJANGO_SSL_REDIRECT": "0",
        "DJANGO_SECURE_COOKIES": "0",
        "DJANGO_HSTS_SECONDS": "0",
        "DJANGO_LOG_LEVEL": "WARNING",
    }
    env.pop("DJANGO_DEBUG", None)
    log = open(Path(tempfile.gettempdir()) / f"ingest_load_{port}.log", "w")  # noqa: SIM115
    server = subprocess.Popen(
        [
            str(ROOT / ".venv/bin/gunicorn"),
            "console.wsgi:application",
            "--workers=1",
            "--threads=1",
            f"--bind=127.0.0.1:{port}",
            "--timeout=120",
        ],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2).status_code in (200, 503):
                return server
        except httpx.HTTPError:
            time.sleep(0.2)
    os.killpg(server.pid, signal.SIGTERM)
    sys.exit(f"gunicorn did not start; see {log.name}")


def body(nonce: str, start: int, n: int) -> bytes:
    lines = []
    for i in range(start, start + n):
        message = f"Ticket {i} of run {nonce}: my parcel is late and I was charged twice."
        if i % 5 == 0:
            message += f" Write to customer{i}@example.com."
        if i % 7 == 0:
            message += " Card 4111 1111 1111 1111."
        state = {"ticket": i, "run": nonce, "channel": "chat", "message": message, "orders": i % 9}
        lines.append(json.dumps({"state": state, "answers": ANSWERS, "version": 1}))
    return ("\n".join(lines) + "\n").encode()


def one_round(url: str, token: str, states: int, per_request: int) -> dict:
    nonce = secrets.token_hex(4)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/x-ndjson"}
    bodies = [
        body(nonce, start, min(per_request, states - start))
        for start in range(0, states, per_request)
    ]
    latencies, kept, redacted = [], 0, 0
    with httpx.Client(timeout=60) as client:
        started = time.perf_counter()
        for payload in bodies:
            sent = time.perf_counter()
            response = client.post(url, content=payload, headers=headers)
            latencies.append(time.perf_counter() - sent)
            if response.status_code != 202:
                sys.exit(f"{response.status_code}: {response.text[:300]}")
            counts = response.json()
            kept += counts["kept"]
            redacted += counts["redacted"]
        wall = time.perf_counter() - started
    latencies.sort()
    return {
        "states_a_second": kept / wall,
        "p50": statistics.median(latencies),
        "p95": latencies[max(0, round(0.95 * len(latencies)) - 1)],
        "kept": kept,
        "redacted": redacted,
        "requests": len(bodies),
        "wall": wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--states", type=int, default=100_000)
    parser.add_argument("--per-request", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    database_url = os.environ.get("DATABASE_URL", DEFAULT_DATABASE)
    token = setup(database_url)
    from django.db import connection

    from questions.models import Decision, SampleState

    if connection.vendor != "postgresql":
        print("bench: the aims are for PostgreSQL; DATABASE_URL names another database")
    decisions = Decision.objects.count()
    port = free_port()
    server = start_gunicorn(database_url, port)
    url = f"http://127.0.0.1:{port}/api/sets/{SLUG}/states"
    rows = []
    try:
        print(
            f"ingest: {args.states:,} states a round in requests of {args.per_request:,}, "
            f"one gunicorn worker, {connection.vendor}, load {os.getloadavg()[0]:.1f}"
        )
        for number in range(1, args.rounds + 1):
            row = one_round(url, token, args.states, args.per_request)
            rows.append(row)
            print(
                f"round {number}: {row['states_a_second']:,.0f} states/s, request p50 "
                f"{row['p50'] * 1000:,.0f} ms, p95 {row['p95'] * 1000:,.0f} ms "
                f"({row['kept']:,} kept, {row['redacted']:,} redacted, {row['wall']:.1f} s)"
            )
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        server.wait(timeout=30)
    rate = statistics.median(r["states_a_second"] for r in rows)
    p50 = statistics.median(r["p50"] for r in rows)
    p95 = statistics.median(r["p95"] for r in rows)
    stored = SampleState.objects.filter(question_set__slug=SLUG, source="production").count()
    calls = Decision.objects.count() - decisions
    print(
        f"median of {len(rows)}: {rate:,.0f} states/s (aim >= {AIM_STATES_A_SECOND:,}: "
        f"{'met' if rate >= AIM_STATES_A_SECOND else 'missed'}), request p50 {p50 * 1000:,.0f} ms, "
        f"p95 {p95 * 1000:,.0f} ms (aim <= {AIM_P95_SECONDS * 1000:,.0f} ms: "
        f"{'met' if p95 <= AIM_P95_SECONDS else 'missed'})"
    )
    print(f"stored {stored:,} production states; provider calls recorded: {calls}")
    if stored != sum(r["kept"] for r in rows) or calls:
        sys.exit("bench: the states stored or the provider calls are not what they should be")


if __name__ == "__main__":
    main()
