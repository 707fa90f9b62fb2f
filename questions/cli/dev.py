"""`questions standin` and `questions demo`: the subcommands of the console's command line for a
machine of one's own — serve the local stand-in provider (`questions.dev.standin`), and load
the demo users and sets (`questions.dev.demo`)."""

from __future__ import annotations

from typing import Any

from django.conf import settings

from questions.cli.base import EXIT_FAILED, EXIT_OK, Console, Unusable
from questions.dev import demo


def add_parsers(sub: Any) -> None:
    """The `standin` and `demo` subcommands."""
    standin = sub.add_parser(
        "standin",
        help="serve the local stand-in provider",
        description="Serve the local stand-in on 127.0.0.1: the provider's wire "
        "(POST /v1/systemone, GET /v1/models), the llm wire (POST /v1/chat/completions) and the "
        "assistant runtime's POST /api/decisions over this console's approved exports (read "
        "from its database), all with the key stand-in-key. It answers by word overlap; it is "
        "not Jev.",
    )
    standin.add_argument("--port", type=int, default=8765)
    standin.add_argument(
        "--latency-ms", type=float, default=0, help="wait this long before every answer"
    )
    standin.set_defaults(handler=do_standin)

    demo_ = sub.add_parser(
        "demo",
        help="demo users author/reviewer (password demo) and demo sets",
        description="Create the demo users and sets that are missing. Refused unless "
        "DJANGO_DEBUG is on or --force is given.",
    )
    demo_.add_argument("--force", action="store_true")
    demo_.set_defaults(handler=do_demo)


def do_standin(cli: Console, *, port: int, latency_ms: float, **_: Any) -> int:
    from questions.dev import standin, standin_runtime

    try:
        server = standin_runtime.make_server(port, latency_ms)
    except OSError as exc:
        raise Unusable(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from exc
    host, bound = server.server_address[:2]
    cli.stdout.write(f"stand-in provider (not Jev) on http://{host}:{bound}/v1/systemone")
    cli.stdout.write(f"stand-in chat model (llm wire) on http://{host}:{bound}/v1/chat/completions")
    cli.stdout.write(
        f"stand-in runtime (the export page's code) on http://{host}:{bound}"
        f"{standin_runtime.PATH}: RUNTIME_URL=http://{host}:{bound} "
        f"RUNTIME_TOKEN={standin.KEY}"
    )
    cli.stdout.flush()
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return EXIT_OK


def do_demo(cli: Console, *, force: bool, **_: Any) -> int:
    if not (settings.DEBUG or force):
        cli.stderr.write(
            "Refused: the demo users have the password `demo`. Run it with "
            "DJANGO_DEBUG=1, or add --force if you mean it."
        )
        return EXIT_FAILED
    done = demo.demo_load()
    for line in done:
        cli.stdout.write(f"created {line}")
    if not done:
        cli.stdout.write("the demo is loaded already")
    cli.stdout.write(f"sign in as author or reviewer, password {demo.PASSWORD}")
    return EXIT_OK
