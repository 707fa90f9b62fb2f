"""`python manage.py questions validate FILE [--json]`: verdicts, lines and exit status."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import write
from tests.providers import run_cli as run

EXAMPLES = Path(__file__).resolve().parent / "examples"
ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["runtime-request.json", "typesafe-request.json"])
def test_valid_examples_exit_0(name):
    code, out, _ = run("validate", str(EXAMPLES / name))
    assert code == 0
    assert out.splitlines()[-1].startswith("valid: ")


def test_every_error_and_warning_on_its_own_line_naming_question_and_limit(tmp_path):
    doc = {
        "intent": {"type": "choice", "criteria": {f"o{i}": f"opt {i}" for i in range(256)}},
        "energy": {"type": "score", "criteria": ["only one"]},
        "start": {"type": "noul", "instructions": "Is it late and dark?"},
    }
    code, out, _ = run("validate", write(tmp_path, doc))
    assert code == 1
    lines = out.splitlines()
    assert (
        "error: questions.intent.criteria: choice `intent` has 256 options; at most 255 "
        "[too_many_options]" in lines
    )
    assert (
        "error: questions.energy.criteria: score `energy` has 1 level; at least 2 levels "
        "[too_few_levels]" in lines
    )
    assert any(
        line.startswith("warning: questions.start.instructions: noul `start`") for line in lines
    )
    assert lines[-1].startswith("invalid: 2 errors, ")


def test_json_output(tmp_path):
    doc = {"q": {"type": "choice", "criteria": {"a": "first"}}}
    code, out, _ = run("validate", write(tmp_path, doc), "--json")
    assert code == 1
    result = json.loads(out)
    assert result["valid"] is False
    assert result["sha256"] is None
    assert result["status"] == 422
    assert "choice `q` has 1 option" in result["detail"]
    assert result["errors"] == [
        {
            "path": "questions.q.criteria",
            "code": "too_few_options",
            "message": "choice `q` has 1 option; at least 2 options",
            "question": "q",
            "limit": 2,
            "actual": 1,
            "loc": ["questions", "q", "criteria"],
        }
    ]


def test_json_output_of_a_valid_document_with_warnings(tmp_path):
    doc = {"q": {"type": "choice", "criteria": {"a": None, "b": None}}}
    code, out, _ = run("validate", write(tmp_path, doc), "--json")
    assert code == 0
    result = json.loads(out)
    assert result["valid"] is True
    assert result["errors"] == []
    assert {w["code"] for w in result["warnings"]} == {
        "undescribed_option",
        "no_escape_option",
        "missing_instructions",
    }
    assert len(result["sha256"]) == 64
    assert set(result) == {"valid", "errors", "warnings", "accepted", "sha256"}
    assert result["accepted"] == []  # no version named: nothing is accepted


def test_the_hash_is_the_canonical_questions_hash_in_every_form(tmp_path):
    body = json.loads((EXAMPLES / "runtime-request.json").read_text())
    hashes = set()
    for value in (body, body["questions"], {"state": None, "model": "m", **body}):
        _, out, _ = run("validate", write(tmp_path, value), "--json")
        hashes.add(json.loads(out)["sha256"])
    assert len(hashes) == 1


@pytest.mark.parametrize("text", ["", "{", "not json", "NaN", '{"a": 1,}'])
def test_not_json_exits_2(tmp_path, text):
    code, out, err = run("validate", write(tmp_path, text))
    assert code == 2
    assert "is not JSON" in err
    assert out == ""


def test_unreadable_file_exits_2(tmp_path):
    code, _, err = run("validate", str(tmp_path / "missing.json"))
    assert code == 2
    assert "cannot read" in err
    code, out, _ = run("validate", str(tmp_path), "--json")
    assert code == 2
    printed = json.loads(out)
    assert list(printed) == [
        "valid",
        "errors",
        "warnings",
        "accepted",
        "sha256",
        "status",
        "detail",
    ]
    assert printed["valid"] is False and printed["status"] == 400


def test_reads_standard_input():
    code, out, _ = run("validate", "-", stdin='{"q": {"type": "noul", "instructions": "Late?"}}')
    assert code == 0
    assert "valid: bare document, 1 question" in out


def test_invalid_utf8_exits_2(tmp_path):
    path = tmp_path / "doc.json"
    path.write_bytes(b'{"q": "\xff"}')
    assert run("validate", str(path))[0] == 2


@pytest.mark.slow
def test_exit_status_from_a_real_process(tmp_path):
    bad = write(tmp_path, {"q": {"type": "score", "criteria": []}})
    env_python = sys.executable
    for args, expected in (
        (["validate", str(EXAMPLES / "runtime-request.json")], 0),
        (["validate", bad], 1),
        (["validate", str(tmp_path / "missing.json")], 2),
        (["validate"], 2),
    ):
        proc = subprocess.run(
            [env_python, "manage.py", "questions", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PATH": "/usr/bin:/bin",
                "DJANGO_SECRET_KEY": "x",
                "DATABASE_URL": "sqlite:///:memory:",
            },
        )
        assert proc.returncode == expected, (args, proc.stdout, proc.stderr)


@pytest.mark.slow
def test_strict_exits_1_on_a_warning_from_a_real_process(tmp_path):
    """`--strict` is what a CI gates on: the exit status of the process itself."""

    def noul(name: str, instructions: str) -> str:
        criteria = {"true": "It holds", "false": "It does not"}
        doc = {"q": {"type": "noul", "instructions": instructions, "criteria": criteria}}
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        return str(path)

    warned = noul("warned", "Is the invoice over 1k?")
    clean = noul("clean", "Does the customer ask for their money back?")
    said = {}
    for args, expected in (
        (["validate", warned], 0),
        (["validate", warned, "--strict"], 1),
        (["validate", clean, "--strict"], 0),
    ):
        proc = subprocess.run(
            [sys.executable, "manage.py", "questions", *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
            env={
                "PATH": "/usr/bin:/bin",
                "DJANGO_SECRET_KEY": "x",
                "DATABASE_URL": "sqlite:///:memory:",
            },
        )
        assert proc.returncode == expected, (args, proc.stdout, proc.stderr)
        said[tuple(args[1:])] = proc.stdout.splitlines()[-1]
    assert said[(warned, "--strict")].startswith("strict: ")
    assert "--strict allows no open warning" in said[(warned, "--strict")]
    assert said[(clean, "--strict")].startswith("valid: ")


def test_json_output_carries_the_semantic_lints_and_reads_the_state_files(tmp_path):
    doc = {
        "q": {
            "type": "noul",
            "instructions": "How many items does `basket` hold?",
            "criteria": {"true": "A full basket", "false": "An empty basket"},
        }
    }
    _, out, _ = run("validate", write(tmp_path, doc), "--json")
    codes = [w["code"] for w in json.loads(out)["warnings"]]
    assert codes == ["counting"]  # no sample state: the state-path lint does not run
    state = write(tmp_path, {"cart": {"items": []}}, "state.json")
    code, out, _ = run("validate", write(tmp_path, doc), "--json", "--state-file", state)
    assert code == 0
    warnings = json.loads(out)["warnings"]
    assert [w["code"] for w in warnings] == ["counting", "unknown_state_path"]
    assert warnings[1]["actual"] == "basket"
    assert warnings[1]["loc"] == ["questions", "q", "instructions"]
    # a body's own state is a sample state
    body = {"state": {"basket": [1]}, "questions": doc}
    _, out, _ = run("validate", write(tmp_path, body), "--json")
    assert [w["code"] for w in json.loads(out)["warnings"]] == ["counting"]
    _, text, _ = run("validate", write(tmp_path, doc), "--state-file", state)
    assert "warning: questions.q.instructions: `basket` is in none of the sample states" in text


def test_validate_json_accepts_structured_descriptions_and_refuses_nothing_to_judge(tmp_path):
    structured = {
        "state": None,
        "questions": {
            "team": {
                "type": "choice",
                "instructions": ["Route the ticket.", {"read": "`state.ticket`"}],
                "criteria": {"billing": ["Payments", "invoices"], "other": {"say": "none"}},
            },
            "rate": {"type": "score", "instructions": "Rate it.", "criteria": ["low", None]},
        },
    }
    code, out, _ = run("validate", write(tmp_path, structured), "--json")
    verdict = json.loads(out)
    assert (code, verdict["valid"]) == (0, True)
    wires = {w["code"]: w["path"] for w in verdict["warnings"] if "provider" in w["code"]}
    assert wires == {
        "state_refused_by_provider": "state",
        "null_level_refused_by_provider": "questions.rate.criteria.1",
    }
    code, out, _ = run(
        "validate", write(tmp_path, {"n": {"type": "noul", "criteria": None}}), "--json"
    )
    verdict = json.loads(out)
    assert (code, verdict["valid"]) == (1, False)
    assert [e["code"] for e in verdict["errors"]] == ["nothing_to_judge"]
