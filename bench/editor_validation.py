"""The as-you-type validation round trip of the editor, for the largest set the limits allow.

A 32-question set, every question a choice over 255 described options. One editor keystroke
posts one card (its 255 rows) plus the ids of the other 31 cards; the server validates and
renders the out-of-band partial. Measured in-process through Django's test client (middleware,
view, spec.py, template), so the figure is server time without the network. Printed beside it,
run in the same process: the bare `spec.validate` of that one question (the floor), the whole
editor page (cards of more than 40 rows closed until opened), opening one card, and a save
with one card opened and with all 32 opened.

Run:  .venv/bin/python bench/editor_validation.py [--rounds 200]
Aim:  validation round trip p50 <= 20 ms.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _console import bench_environment, migrate, start_django  # noqa: E402  (bench/ is the script's own folder)


def percentile(samples: list[float], p: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def timed(fn, rounds: int) -> list[float]:
    fn()  # warm up
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn()
        out.append((time.perf_counter() - start) * 1000)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--profile", action="store_true", help="profile the keystroke instead")
    args = parser.parse_args()

    workdir = tempfile.mkdtemp(prefix="bench-editor-")
    bench_environment(f"sqlite:///{workdir}/bench.sqlite3")
    start_django()
    from django.test import Client
    from django.test.utils import setup_test_environment
    from django.urls import reverse
    from django.utils.datastructures import MultiValueDict

    from questions import forms, services
    from questions.core import check, spec
    from tests import factories
    from tests.helpers import as_post, fields_of, opened

    setup_test_environment()
    migrate()
    user = factories.author("bench")
    document = factories.document(32, options=255)
    for question in document.values():
        question["criteria"] = {
            name: {
                "what": f"{entry} — what it means",
                "not_for": "anything else",
                "examples": ["one example", "another"],
            }
            for name, entry in question["criteria"].items()
        }
    question_set = factories.question_set("bench", owner=user, doc=document)
    version = services.open_draft(question_set)
    client = Client()
    client.force_login(user)
    edit_url = reverse("version-edit", args=["bench", version.number])
    page_html = client.get(edit_url).content.decode()
    pairs = fields_of(page_html)
    data = as_post(pairs)
    keys = data["q"]
    card = keys[5]
    data = opened(client, version, data, card)  # a card of 255 rows opens on a click
    card_fields = {k: v for k, v in data.items() if k.startswith(f"q-{card}-")}
    keystroke = {
        "q": keys,
        **{f"q-{k}-id": data[f"q-{k}-id"] for k in keys},
        **card_fields,
        "card": [card],
    }
    validate_url = reverse("version-validate", args=["bench", version.number])
    save_url = reverse("version-save", args=["bench", version.number])

    form = "application/x-www-form-urlencoded"  # what htmx and a plain <form> send
    keystroke_body = urlencode(keystroke, doseq=True)

    def keystroke_round_trip():
        response = client.post(
            validate_url, keystroke_body, content_type=form, headers={"HX-Request": "true"}
        )
        assert response.status_code == 200

    one_question = {
        data[f"q-{card}-id"][0]: forms.card_from_post(MultiValueDict(data), card).question()
    }

    def bare_validate():
        assert check.validate(one_question, limits=spec.DEFAULT_LIMITS).valid

    def editor_page():
        assert client.get(edit_url).status_code == 200

    def every_card_open():
        fields = data
        for key in keys:
            if f"q-{key}-stored" in fields:
                fields = opened(client, version, fields, key)
        return fields

    def saver(fields):
        def save():
            post = dict(fields)
            post["base_revision"] = [str(services.open_draft(question_set).revision)]
            body = urlencode(post, doseq=True)
            assert client.post(save_url, body, content_type=form).status_code == 302

        return save

    open_url = reverse("version-card-open", args=["bench", version.number])

    def open_card():
        response = client.get(open_url, {"card": card, "id": data[f"q-{card}-id"][0]})
        assert response.status_code == 200

    if args.profile:
        import cProfile
        import pstats

        keystroke_round_trip()
        cProfile.runctx("for _ in range(20): f()", {"f": keystroke_round_trip}, {}, "/tmp/prof")
        pstats.Stats("/tmp/prof").sort_stats("cumulative").print_stats(40)
        return
    fields = sum(len(v) for v in keystroke.values())
    few = max(5, args.rounds // 20)
    floor_samples = timed(bare_validate, args.rounds)  # first: every row is read against it
    floor = statistics.median(floor_samples)
    print(
        f"editor validation round trip — 32 questions × 255 options; keystroke posts "
        f"{fields} fields; {args.rounds} rounds"
    )
    print(f"{'what':48} {'n':>5} {'p50 ms':>9} {'p95 ms':>9} {'p50 / floor':>12}", flush=True)

    def row(name: str, samples: list[float]) -> float:
        """Print one row as soon as it is measured (a later step that fails loses none)."""
        p50 = statistics.median(samples)
        print(
            f"{name:48} {len(samples):5d} {p50:9.2f} {percentile(samples, 95):9.2f} "
            f"{p50 / floor:11.1f}x",
            flush=True,
        )
        return p50

    keystroke_p50 = row(
        "keystroke: validate one card (255 options)", timed(keystroke_round_trip, args.rounds)
    )
    row("floor: spec.validate of that question alone", floor_samples)
    row("editor page, 32 × 255 options", timed(editor_page, few))
    row("open one card (its 255 options)", timed(open_card, few))
    row("save, one card opened (31 closed)", timed(saver(data), few))
    # built last: 60,000 more live fields slow every garbage collection of the timings above
    every = every_card_open()
    row(
        f"save, all 32 cards opened ({sum(len(v) for v in every.values()):,} fields)",
        timed(saver(every), few),
    )
    verdict = "meets" if keystroke_p50 <= 20 else "misses"
    print(f"target: keystroke p50 <= 20 ms — {verdict}")


if __name__ == "__main__":
    main()
