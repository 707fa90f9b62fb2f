"""The console's own share of a decision, measured as seed 000 measured the runtime's.

An 8-question, ~3.8 KB request (a choice over 22 options, a choice over 15, two scores, four
nouls) against the local stand-in answering instantly, N calls through the `typesafe` backend:
the console's share is total_ms − provider_ms (building the request, checking the answers);
beside it, in the same run, the same request sent straight to the stand-in with httpx (the
wire's floor). Then the full preview round trip: an HTTP request to the console (a real WSGI
server on loopback) → stand-in → the rendered partial.

Run:  .venv/bin/python bench/decisions_overhead.py [--calls 300] [--backend typesafe|llm]
Aim:  the console adds under 2 ms p50 (the runtime's own share was about 0.7 ms). With
`--backend llm` the same is measured through the chat wire (the stand-in answers it too): the
console's share then includes building the JSON-schema request and shaping the reply.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)


def p(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def document() -> dict:
    def choice(n: int, what: str) -> dict:
        return {
            "type": "choice",
            "instructions": f"Which {what} fits the latest message?",
            "criteria": {
                f"{what}_{i}": f"the {what} number {i} of the catalogue" for i in range(n - 1)
            }
            | {"other": "none of these"},
        }

    doc = {"skill": choice(22, "skill"), "desk": choice(15, "desk")}
    doc["urgency"] = {
        "type": "score",
        "instructions": "How urgent is it?",
        "criteria": ["can wait", "today", "within the hour", "now"],
    }
    doc["frustration"] = {
        "type": "score",
        "instructions": "How frustrated is the user?",
        "criteria": ["calm", "annoyed", "angry"],
    }
    for name in ("refund", "injection", "human", "repeat"):
        doc[name] = {"type": "noul", "instructions": f"Is this about {name}?"}
    return doc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--backend", choices=("typesafe", "llm"), default="typesafe")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="bench-decisions-")
    bench_environment(f"sqlite:///{workdir}/bench.sqlite3")
    start_django()
    import httpx
    from django.conf import settings
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler
    from django.core.wsgi import get_wsgi_application
    from django.test import Client

    from questions import roles, services
    from questions.core import spec
    from questions.dev import standin
    from tests import factories

    migrate()
    import logging

    logging.getLogger("questions").setLevel(logging.WARNING)
    stand_in = standin.serve_in_thread()
    settings.TYPESAFE_API_KEY = standin.KEY
    settings.TYPESAFE_BASE_URL = f"http://127.0.0.1:{stand_in.server_address[1]}"
    settings.LLM_API_KEY = standin.KEY
    settings.LLM_BASE_URL = f"{settings.TYPESAFE_BASE_URL}/v1"
    backend = args.backend
    settings.ALLOWED_HOSTS = ["127.0.0.1"]

    questions = document()
    state = {"conversation": [{"speaker": "user", "text": "word " * 45}] * 6}
    body = {"state": state, "model": "jev-latest", "questions": questions}
    size = len(spec.canonical_json(body))

    # warm both paths (connection set-up is not the steady state)
    for _ in range(5):
        services.decision_ask(backend=backend, document=questions, state=state, user=roles.OPERATOR)
    console_share, provider_ms, total_ms = [], [], []
    for _ in range(args.calls):
        outcome = services.decision_ask(
            backend=backend, document=questions, state=state, user=roles.OPERATOR
        )
        assert outcome.status == 200, outcome.error
        console_share.append(outcome.total_ms - outcome.provider_ms)
        provider_ms.append(outcome.provider_ms)
        total_ms.append(outcome.total_ms)

    direct = []
    url = f"{settings.TYPESAFE_BASE_URL}/v1/systemone"
    payload = spec.canonical_json(body)
    if backend == "llm":
        from questions.engine.backends import llm

        parsed = spec.parse(questions, limits=spec.DEFAULT_LIMITS).questions
        url = f"{settings.LLM_BASE_URL}/chat/completions"
        payload = spec.wire_json(llm.request_body(parsed, state, settings.LLM_MODEL))
    headers = {"Authorization": f"Bearer {standin.KEY}", "Content-Type": "application/json"}
    with httpx.Client() as client:
        for _ in range(5):
            client.post(url, content=payload, headers=headers)
        for _ in range(args.calls):
            start = time.perf_counter()
            response = client.post(url, content=payload, headers=headers)
            json.loads(response.content)
            direct.append((time.perf_counter() - start) * 1000)

    # the preview round trip through a real HTTP server
    user = factories.author("bench")
    qs = factories.question_set("bench", owner=user, doc=questions)
    sample = services.sample_state_create(question_set=qs, name="s", state=state, author=user)
    version = services.open_draft(qs)

    class QuietHandler(WSGIRequestHandler):
        disable_nagle_algorithm = True  # as production servers do; else 40 ms of delayed ACK

        def log_message(self, *a):
            pass

    server = ThreadedWSGIServer(("127.0.0.1", 0), QuietHandler)
    server.set_app(get_wsgi_application())
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    test_client = Client()
    test_client.force_login(user)
    preview_url = f"{base}/sets/bench/v{version.number}/preview/"
    preview = []
    with httpx.Client(cookies={"sessionid": test_client.cookies["sessionid"].value}) as http:
        http.get(f"{base}/sets/bench/v{version.number}/")
        token = http.cookies.get("csrftoken")
        form = {"preview_state": str(sample.pk), "preview_backend": backend}
        hdrs = {"X-CSRFToken": token, "HX-Request": "true", "Referer": base + "/"}
        rounds = max(50, args.calls // 3)
        for i in range(rounds + 5):
            start = time.perf_counter()
            response = http.post(preview_url, data=form, headers=hdrs)
            elapsed = (time.perf_counter() - start) * 1000
            assert response.status_code == 200 and "<svg" in response.text, response.text[:300]
            if i >= 5:
                preview.append(elapsed)
    server.shutdown()

    print(
        f"decisions overhead — 8 questions (choice 22, choice 15, 2 scores, 4 nouls), "
        f"request {size / 1024:.1f} KiB, {args.calls} calls, instant local stand-in, "
        f"backend {backend}"
    )
    print(f"{'what':72} {'p50 ms':>8} {'p95 ms':>8}")
    rows = [
        ("console's share: total_ms − provider_ms", console_share),
        ("provider_ms (console → stand-in round trip)", provider_ms),
        ("total_ms", total_ms),
        ("direct: httpx → stand-in, same body (the floor)", direct),
        (f"preview round trip: HTTP → console → stand-in → partial (n={len(preview)})", preview),
    ]
    for name, samples in rows:
        print(f"{name:72} {statistics.median(samples):8.2f} {p(samples, 95):8.2f}")
    share = statistics.median(console_share)
    ratio = statistics.median(provider_ms) / statistics.median(direct)
    print(f"provider_ms p50 / direct p50 = {ratio:.2f}x")
    print(
        f"target: console share p50 < 2 ms — {'meets' if share < 2 else 'misses'} ({share:.2f} ms)"
    )


if __name__ == "__main__":
    main()
