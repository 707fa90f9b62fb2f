"""What bench/run_span.py and bench/promptfoo_span.py share: the work (one choice question of 8
described options, states of about 1.2 KB, loaded as a user loads them), a light stand-in
provider in a process of its own, and the CPU of a process and its descendants from /proc.

The stand-in: an asyncio HTTP/1.1 keep-alive server (h11 parses; httpx's own parser, through
httpcore) on 127.0.0.1 that answers each `POST /v1/systemone` exactly the latency after the
request has arrived, with the answer the project's stand-in (`questions.dev.standin`) works out
for the body — once per distinct body, then kept. The project's stand-in reads the words of
every state (3–3.6 ms of CPU a request on a two-core machine), which at K = 64 keeps a core
busy that the console would then compete for: a bench of the console's span would measure the
stand-in. A bench's untimed warm-up run lets it work out every answer once; a round's provider
then costs only its HTTP. It listens on one port per latency (the kept answers shared) and
answers two paths of its own: `GET /_bench/counts` (requests answered, answers worked out) and
`GET /_bench/bodies` (every distinct body it was sent, in the order first seen: the console's
own request bodies, byte for byte, for promptfoo's tests).

Run on its own: `python bench/_span.py --latency-ms 200 1000` prints {"ports": {"200": …}}.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: the work: one choice question of 8 described options, as a routing set has
QUESTIONS = {
    "route": {
        "type": "choice",
        "instructions": "Which team should take this ticket?",
        "criteria": {
            "billing": "charges, refunds, invoices and payment methods",
            "accounts": "sign-in, passwords, profiles and closing an account",
            "shipping": "deliveries, tracking, lost parcels and returns",
            "technical": "errors, crashes, slow pages and broken features",
            "sales": "prices, plans, quotes and upgrades",
            "security": "phishing, stolen accounts and suspicious activity",
            "legal": "privacy requests, contracts and complaints to a regulator",
            "other": "anything that none of the other teams takes",
        },
    }
}
PATH = "/v1/systemone"


def a_state(i: int) -> dict:
    """Sample state `i`: a ticket of about 1.2 KB, distinct from every other."""
    words = " ".join(f"word{(i * 7 + j) % 97}" for j in range(150))
    return {"ticket": i, "subject": f"ticket number {i}", "body": words, "tier": i % 3}


def make_set(states: int, prefix: str):
    """A new question set of QUESTIONS with `states` sample states, made as a user makes them
    (`question_set_create`, `version_create`, then `sample_states_import`, the bulk import the
    CLI and the upload use), and its author. Returns (set, version, author)."""
    from django.contrib.auth import get_user_model

    from questions import roles, services

    tag = uuid.uuid4().hex[:8]
    author = get_user_model().objects.create_user(f"bench-{tag}")
    services.member_set(
        team=services.team_default(),
        username=author.username,
        role=roles.AUTHOR,
        user=roles.OPERATOR,
    )
    qs = services.question_set_create(slug=f"{prefix}-{tag}", owner=author)
    version = services.version_create(question_set=qs, document=QUESTIONS, author=author)
    for start in range(0, states, 5000):
        items = [
            {"name": f"state {i:05d}", "state": a_state(i)}
            for i in range(start, min(states, start + 5000))
        ]
        services.sample_states_import(question_set=qs, items=items, author=author)
    return qs, version, author


# --- CPU from /proc ---------------------------------------------------------------------------


def _stat(pid: int) -> list[str] | None:
    """The fields of /proc/PID/stat after the command's name, None if it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def tree_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) of these processes and every descendant of theirs so far,
    the exited children they waited for included (Linux's /proc): a worker's CPU is its own
    and its helpers'. A process that has ended counts nothing."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := _stat(int(entry.name))):
            parents[int(entry.name)] = int(fields[1])
    tree, grew = set(pids), True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in tree} - tree
        tree |= more
        grew = bool(more)
    ticks = 0
    for pid in tree:
        if fields := _stat(pid):
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def load() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


# --- the stand-in -----------------------------------------------------------------------------


class _Provider:
    """The stand-in's state: the kept answers and the counts."""

    def __init__(self) -> None:
        from questions.dev import standin

        self.standin = standin
        self.kept: dict[tuple[bytes, str], tuple[int, bytes]] = {}
        self.bodies: list[str] = []
        self.served = 0
        self.worked = 0

    def answer(self, raw: bytes, encoding: str) -> tuple[int, bytes]:
        """(status, body) for a POSTed body, worked out by the project's stand-in the first
        time this body (and encoding) is seen."""
        key = (raw, encoding)
        if key not in self.kept:
            standin = self.standin
            try:
                body = standin.decode(raw, encoding or None)
                status, out = standin.ROUTES[PATH].respond(json.loads(body))
                self.bodies.append(body.decode())
            except standin.BodyRefused as refused:
                status, out = (
                    refused.status,
                    standin.native_error(refused.error_type, refused.message),
                )
            except ValueError as exc:
                status, out = standin.native_not_json(str(exc), 0)
            self.kept[key] = (status, json.dumps(out).encode())
            self.worked += 1
        return self.kept[key]


async def _connection(provider: _Provider, latency: float, reader, writer) -> None:
    """One keep-alive connection: each request read whole, answered after `latency`."""
    import h11

    conn = h11.Connection(h11.SERVER)
    request, parts = None, []
    try:
        while True:
            event = conn.next_event()
            if event is h11.NEED_DATA:
                conn.receive_data(await reader.read(65536))
            elif isinstance(event, h11.Request):
                request, parts = event, []
            elif isinstance(event, h11.Data):
                parts.append(event.data)
            elif isinstance(event, h11.EndOfMessage):
                arrived = time.monotonic()
                status, data = _route(provider, request, b"".join(parts))
                delay = latency if request.method == b"POST" else 0.0
                await asyncio.sleep(max(0.0, arrived + delay - time.monotonic()))
                headers = [
                    (b"Content-Type", b"application/json"),
                    (b"Content-Length", str(len(data)).encode()),
                ]
                writer.write(
                    conn.send(h11.Response(status_code=status, headers=headers))
                    + conn.send(h11.Data(data=data))
                    + conn.send(h11.EndOfMessage())
                )
                await writer.drain()
                if conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                    break
                conn.start_next_cycle()
            else:  # ConnectionClosed, or the client's half closed
                break
    except (h11.RemoteProtocolError, ConnectionError):
        pass
    finally:
        writer.close()


def _route(provider: _Provider, request, body: bytes) -> tuple[int, bytes]:
    standin = provider.standin
    target = request.target.decode().split("?", 1)[0].rstrip("/")
    headers = {name.decode().lower(): value.decode() for name, value in request.headers}
    if request.method == b"GET" and target == "/_bench/counts":
        counts = {"served": provider.served, "worked": provider.worked}
        return 200, json.dumps(counts).encode()
    if request.method == b"GET" and target == "/_bench/bodies":
        return 200, json.dumps(provider.bodies).encode()
    if request.method != b"POST" or target != PATH:
        return 404, b'{"detail": "Not Found"}'
    if not standin.key_accepted(headers.get("authorization")):
        error = standin.native_error("authentication_error", "The API key is not valid.")
        return 401, json.dumps(error).encode()
    provider.served += 1
    return provider.answer(body, headers.get("content-encoding", ""))


async def _serve(latencies_ms: list[float]) -> None:
    provider = _Provider()
    ports = {}
    for ms in latencies_ms:

        def handle(reader, writer, latency=ms / 1000):
            return _connection(provider, latency, reader, writer)

        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        ports[f"{ms:g}"] = server.sockets[0].getsockname()[1]
    print(json.dumps({"ports": ports}), flush=True)
    await asyncio.Event().wait()


class StandIn:
    """The light stand-in in a process of its own (`python bench/_span.py`), one port per
    latency; `url(ms)`, `counts()`, `bodies()`, `cpu()`, `stop()`."""

    def __init__(self, latencies_ms: list[float]):
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--latency-ms", *map(str, latencies_ms)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        line = self.process.stdout.readline()
        if not line:
            sys.exit("bench: the stand-in did not start (its error is above)")
        self.ports = json.loads(line)["ports"]

    def url(self, latency_ms: float) -> str:
        return f"http://127.0.0.1:{self.ports[f'{latency_ms:g}']}"

    def _get(self, path: str):
        import httpx

        port = next(iter(self.ports.values()))
        return httpx.get(f"http://127.0.0.1:{port}{path}", timeout=30, trust_env=False).json()

    def counts(self) -> dict[str, int]:
        """{"served": requests answered, "worked": answers worked out} so far."""
        return self._get("/_bench/counts")

    def bodies(self) -> list[str]:
        """Every distinct request body it was sent, in the order first seen."""
        return self._get("/_bench/bodies")

    def cpu(self) -> float:
        return tree_cpu([self.process.pid])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def main() -> None:
    parser = argparse.ArgumentParser(description="the benches' light stand-in provider")
    parser.add_argument("--latency-ms", type=float, nargs="+", default=[200])
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    with contextlib.suppress(KeyboardInterrupt):  # a Ctrl-C meant for the bench
        asyncio.run(_serve(args.latency_ms))


if __name__ == "__main__":
    main()
