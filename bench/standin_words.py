"""The word-reading stand-in on the demo: described options vs bare ids vs shuffled descriptions.

For every demo set (whatever `questions.dev.demo_sets.SETS` holds), every version and every labelled
sample state, the stand-in (`questions.dev.standin.respond`, the code its HTTP server runs) answers
three variants of the questions:

- described — the questions as written;
- bare ids — every choice option named only by its id (its description `null`);
- shuffled — the shuffle control's variants (`questions.controls`, K shuffles, seeded).

Every answer goes through the gateway's answer checks (`answers.check_response`), and the pass
rates and the shuffle verdict are the console's own (`metrics.passes`, `controls.control_report`).
It prints, per set and version, the choice questions' pass rates and verdicts, then the totals.
No database, no network: `python bench/standin_words.py [--shuffles K] [--seed S]`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _console import start_django

start_django()

from questions.core import answers, check, controls, metrics, spec  # noqa: E402
from questions.dev import demo_rules, demo_sets, standin  # noqa: E402


def bare(questions: dict[str, spec.Question]) -> dict[str, spec.Question]:
    """Every choice option named only by its id."""
    return {
        qid: dataclasses.replace(q, criteria=dict.fromkeys(q.criteria)) if q.type == "choice" else q
        for qid, q in questions.items()
    }


def ask(questions: dict[str, spec.Question], state) -> dict:
    status, body = standin.respond(
        {"state": state, "model": "m", "questions": {k: q.to_json() for k, q in questions.items()}}
    )
    assert status == 200, body
    return answers.check_response(questions, body, price_per_million=0).answers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shuffles", type=int, default=4)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    print(
        f"{datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M} UTC, load {os.getloadavg()[0]:.1f}"
    )
    print(f"shuffle control: {args.shuffles} shuffles, seed {args.seed}\n")
    totals = {"described": [0, 0], "bare ids": [0, 0], "shuffled": [0, 0]}
    every = {name: [0, 0] for name in totals}  # every question type
    verdicts = {"signal": 0, "no signal": 0, "nothing to judge": 0}
    for entry in demo_sets.SETS:
        labelled = [s for s in entry["states"] if s.get("expected")]
        for number, document in enumerate(entry["versions"], 1):
            questions = check.validate(
                document, lints=False, limits=spec.DEFAULT_LIMITS
            ).document.questions
            variants = {
                "described": [questions],
                "bare ids": [bare(questions)],
                "shuffled": [
                    controls.variant_questions(questions, controls.SHUFFLE, args.seed, v)
                    for v in range(1, args.shuffles + 1)
                ],
            }
            answered = []
            rates = {}
            for name, asked_list in variants.items():
                checked = passed = 0
                for variant, asked in enumerate(asked_list):
                    for state in labelled:
                        got = ask(asked, state["state"])
                        if name == "described":
                            answered.append(
                                controls.Answered(state["name"], 0, got, state["expected"])
                            )
                        elif name == "shuffled":
                            answered.append(
                                controls.Answered(
                                    state["name"], variant + 1, got, state["expected"]
                                )
                            )
                        for qid, q in questions.items():
                            expected = state["expected"].get(qid)
                            if expected is None or not metrics.expected_fits(q.type, expected):
                                continue
                            ok = metrics.passes(q.type, got[qid], expected)
                            every[name][0] += ok
                            every[name][1] += 1
                            if q.type == "choice":
                                checked += 1
                                passed += ok
                totals[name][0] += passed
                totals[name][1] += checked
                rates[name] = (passed, checked)
            report = controls.control_report(
                controls.SHUFFLE, {qid: q.type for qid, q in questions.items()}, answered
            )
            shown = " · ".join(f"{n} {p}/{c}" for n, (p, c) in rates.items())
            print(f"{entry['slug']} v{number} ({len(labelled)} labelled states): {shown}")
            for qid, q in report.items():
                if q.qtype != "choice":
                    continue
                if q.no_signal is None:
                    verdict = "nothing to judge"
                else:
                    verdict = "no signal" if q.no_signal else "signal"
                verdicts[verdict] += 1
                few = " (few answers)" if q.few_answers else ""
                real = "—" if q.real_pass_rate is None else f"{q.real_pass_rate:.0%}"
                floor = "—" if q.floor is None else f"{q.floor:.0%}"
                print(f"  {qid}: real {real}, shuffled floor {floor} → {verdict}{few}")
    print("\nchoice questions, every demo set and version:")
    for name, (passed, checked) in totals.items():
        rate = f"{passed / checked:.0%}" if checked else "—"
        print(f"  {name:10} {passed}/{checked} ({rate})")
    print("every labelled answer (choice, score, noul; shuffling moves choices only):")
    for name, (passed, checked) in every.items():
        rate = f"{passed / checked:.0%}" if checked else "—"
        print(f"  {name:10} {passed}/{checked} ({rate})")
    print("shuffle verdicts: " + ", ".join(f"{n} {c}" for n, c in verdicts.items()))
    tiers()


def tiers() -> None:
    """The demo's side-by-side set: its keyword rules (`custom`) against the stand-in's native
    and chat answers, every labelled answer, in process (no HTTP: the time is the answering
    code's own)."""
    answerers = {
        "custom (demo rules)": lambda state, q: demo_rules.answer(state, q, "m"),
        "stand-in (typesafe)": lambda state, q: standin.respond({"state": state, "questions": q})[
            1
        ],
        "stand-in (llm)": lambda state, q: standin.respond(
            {"state": state, "questions": q}, standin.CHAT_SALT
        )[1],
    }
    for entry in demo_sets.SETS:
        if not entry.get("side_by_side"):
            continue
        questions = check.validate(
            entry["versions"][-1], lints=False, limits=spec.DEFAULT_LIMITS
        ).document.questions
        wire = {k: q.to_json() for k, q in questions.items()}
        labelled = [s for s in entry["states"] if s.get("expected")]
        print(f"\n{entry['slug']} v{len(entry['versions'])}, {len(labelled)} labelled states:")
        for name, answerer in answerers.items():
            passed = checked = 0
            started = time.perf_counter()
            for state in labelled:
                got = answers.check_response(
                    questions, answerer(state["state"], wire), price_per_million=0
                ).answers
                for qid, expected in state["expected"].items():
                    checked += 1
                    passed += metrics.passes(questions[qid].type, got[qid], expected)
            per_state = (time.perf_counter() - started) * 1000 / max(1, len(labelled))
            print(
                f"  {name:20} {passed}/{checked} ({passed / checked:.0%}), "
                f"{per_state:.2f} ms a state"
            )


if __name__ == "__main__":
    main()
