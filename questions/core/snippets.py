"""Code that calls an approved set (pure Python): a ready call, in curl, Python (httpx) or
TypeScript (`fetch`), of the runtime's `POST /api/decisions` (seed 000) with the `questions` map
exactly as the export document holds it and a placeholder state, reading the runtime's address
and token from `RUNTIME_URL` and `RUNTIME_TOKEN` (as the console's own `runtime` backend does);
and one that asks the provider directly through the official SDK (`typesafe-sdk`, which reads
`TYPESAFE_API_KEY`), pinned to the model that answered the run the version was approved on
(`pinned_model`). Each prints the answers. `local_environment` is what points all of them at a
local stand-in serving both the runtime's path and the provider's.

The runtime's three (curl, Python, TypeScript) then report the decision — the state and the
answers production got, with the version and label — to the console's `POST
/api/sets/<slug>/states` when `CONSOLE_URL` and `CONSOLE_INGEST_TOKEN` are set: Python and
TypeScript sample it first as the console does (1 state in the set's `keep_one_in`, by the
state's hash: `ingest.sampled_in`), so only what the console keeps is sent; each sends it apart
from the decision (a thread, a promise not awaited before the answers print, a background
curl), with a timeout of `REPORT_TIMEOUT_SECONDS`, and drops it on any error: a report never
slows or fails the application's call.

The questions are embedded as the export's own JSON text (`export_text`'s form, author's order),
never rebuilt: the curl body and the TypeScript body send those very bytes; Python parses them
into dicts, which keep their order and values. One function, `snippet`, serves the command line
(`questions snippet`) and the label's export page.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Mapping
from typing import Any

#: what `snippet` writes, in the order the page shows them
LANGUAGES = ("curl", "python", "typescript", "sdk")
TITLES = {
    "curl": "curl",
    "python": "Python (httpx)",
    "typescript": "TypeScript (fetch)",
    "sdk": "Provider SDK (Python)",
}
#: what the export page shows in each language's box (a highlighter's name, a file name)
FILE_NAMES = {
    "curl": "decide.sh",
    "python": "decide.py",
    "typescript": "decide.ts",
    "sdk": "decide_direct.py",
}

#: the state a snippet sends until the application puts its own there
PLACEHOLDER_STATE = {"example": "Replace with the state your application decides about."}

#: how long a snippet waits for the runtime: longer than the runtime waits for its provider
#: (seed 000: DECISIONS__TIMEOUT_SECONDS, default 10), so the runtime's own 504 arrives first
CLIENT_TIMEOUT_SECONDS = 30

RUNTIME_ENV = ("RUNTIME_URL", "RUNTIME_TOKEN")
#: where a snippet reports its decisions to (the console) and with which ingest token
REPORT_ENV = ("CONSOLE_URL", "CONSOLE_INGEST_TOKEN")
#: how long a report may take before it is dropped: far below the decision's own timeout
REPORT_TIMEOUT_SECONDS = 2
#: what the SDK reads: the provider's key and, when set, its address
SDK_ENV = ("TYPESAFE_API_KEY", "TYPESAFE_BASE_URL")


class UnknownLanguage(ValueError):
    """A language `snippet` does not write."""

    def __init__(self, language: str):
        super().__init__(f"Unknown language {language!r}; one of {', '.join(LANGUAGES)}.")


def questions_text(questions: Mapping[str, Any], indent: int = 0) -> str:
    """The questions map as the export document writes it (two-space indent, author's order,
    UTF-8 as is), its lines after the first indented by `indent` more spaces."""
    text = json.dumps(questions, ensure_ascii=False, indent=2)
    return text.replace("\n", "\n" + " " * indent) if indent else text


def local_environment(base_url: str, key: str) -> str:
    """The shell lines that point every snippet at one local address serving the runtime's
    `POST /api/decisions` and the provider's wire (the console's stand-in), with its key."""
    url, token = shlex.quote(base_url.rstrip("/")), shlex.quote(key)
    return (
        f"export {RUNTIME_ENV[0]}={url} {RUNTIME_ENV[1]}={token}\n"
        f"export {SDK_ENV[0]}={token} {SDK_ENV[1]}={url}  # the provider SDK tab\n"
    )


def snippet(
    language: str, export: Mapping[str, Any], label: str | None = None, keep_one_in: int = 1
) -> str:
    """The code, in `language` (one of LANGUAGES), that asks the questions of `export` (an
    export document, `exports.export_document`; `label` the label it was found by) about a
    placeholder state and prints the answers — and, for the runtime's, reports the decision to
    the console, sampled 1 in `keep_one_in` (the set's rate). `UnknownLanguage` for any other
    language."""
    writer = _WRITERS.get(language)
    if writer is None:
        raise UnknownLanguage(language)
    return writer(export, label, keep_one_in)


def _about(export: Mapping[str, Any], label: str | None) -> str:
    which = f"label {label}, " if label else ""
    return (
        f"{export['question_set']} ({which}version {export['version']}, "
        f"sha256 {export['sha256'][:12]}…)"
    )


def _reported(export: Mapping[str, Any], label: str | None) -> dict[str, Any]:
    """What a report names beside the state and the answers: the version and label asked (a
    label only when the export was found by one)."""
    return {"version": export["version"]} | ({"label": label} if label else {})


def _report_comment(prefix: str, keep_one_in: int, sampled: bool) -> str:
    sampling = (
        f"Sampled here as the console samples: 1 state in {keep_one_in}, by the state's hash."
        if sampled
        else f"The console keeps 1 state in {keep_one_in}, by the state's hash."
    )
    lines = [
        "Report the decision to the console — the state and the answers production got — so it",
        "shows how this version does on live traffic. Off unless CONSOLE_URL and",
        "CONSOLE_INGEST_TOKEN (an ingest token for this set) are set.",
        sampling,
        f"Sent apart from the decision, with a {REPORT_TIMEOUT_SECONDS}-second timeout, and "
        "dropped on any error:",
        "a report never slows or fails the decision.",
    ]
    return "".join(f"{prefix} {line}\n" for line in lines)


def _curl(export: Mapping[str, Any], label: str | None = None, keep_one_in: int = 1) -> str:
    body = json.dumps(
        {"state": PLACEHOLDER_STATE, "questions": export["questions"]}, ensure_ascii=False, indent=2
    )
    reported = json.dumps(_reported(export, label), ensure_ascii=False)
    states = f"/api/sets/{export['question_set']}/states"
    return (
        f"# Ask the approved questions of {_about(export, label)}\n"
        "# through the runtime's POST /api/decisions and print its answer. Reads RUNTIME_URL and\n"
        "# RUNTIME_TOKEN from the environment; replace the state with your application's.\n"
        "body=$(cat <<'JSON'\n"
        f"{body}\n"
        "JSON\n"
        ")\n"
        "response=$(printf '%s' \"$body\" | "
        f"curl -sS --fail-with-body --max-time {CLIENT_TIMEOUT_SECONDS} \\\n"
        '  -H "Authorization: Bearer $RUNTIME_TOKEN" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        '  --data-binary @- "${RUNTIME_URL%/}/api/decisions") || {\n'
        '  status=$?; printf \'%s\\n\' "$response"; exit "$status"\n'
        "}\n"
        "printf '%s\\n' \"$response\"\n"
        "\n"
        + _report_comment("#", keep_one_in, sampled=False)
        + "# Needs jq to put the report together.\n"
        'if [ -n "$CONSOLE_URL" ] && [ -n "$CONSOLE_INGEST_TOKEN" ]; then\n'
        "  if command -v jq >/dev/null; then\n"
        '    jq -cn --argjson body "$body" --argjson response "$response" \\\n'
        "      '{state: $body.state, answers: $response.answers, at: (now | todate)}\n"
        f"       + {reported}' \\\n"
        f"    | curl -sS --max-time {REPORT_TIMEOUT_SECONDS} -o /dev/null \\\n"
        '      -H "Authorization: Bearer $CONSOLE_INGEST_TOKEN" \\\n'
        '      -H "Content-Type: application/json" \\\n'
        f'      --data-binary @- "${{CONSOLE_URL%/}}{states}" &\n'
        "  else\n"
        '    echo "Not reported to the console: it needs jq." >&2\n'
        "  fi\n"
        "fi\n"
    )


def _python_literal(text: str) -> str:
    """A Python string literal whose value is `text`: a raw triple-quoted one (readable, and
    JSON text can hold no three quotes in a row), else its repr."""
    if '"""' in text or text.endswith("\\"):
        return repr(text)
    return f'r"""{text}"""'


def _python(export: Mapping[str, Any], label: str | None = None, keep_one_in: int = 1) -> str:
    reported = _reported(export, label)
    return (
        f'"""Ask the approved questions of {_about(export, label)}\n'
        "through the runtime's POST /api/decisions and print the answers. Reads RUNTIME_URL and\n"
        'RUNTIME_TOKEN from the environment; needs httpx (pip install httpx)."""\n'
        "\n"
        "import hashlib\n"
        "import json\n"
        "import os\n"
        "import sys\n"
        "import threading\n"
        "from datetime import datetime, timezone\n"
        "\n"
        "import httpx\n"
        "\n"
        "# The questions map exactly as exported.\n"
        f"QUESTIONS = json.loads({_python_literal(questions_text(export['questions']))})\n"
        "\n"
        "# Replace with the state your application decides about (any JSON).\n"
        f"STATE = {PLACEHOLDER_STATE!r}\n"
        "\n"
        'url = os.environ.get("RUNTIME_URL", "").rstrip("/")\n'
        'token = os.environ.get("RUNTIME_TOKEN", "")\n'
        "if not (url and token):\n"
        '    sys.exit("Set RUNTIME_URL and RUNTIME_TOKEN.")\n'
        "response = httpx.post(\n"
        '    f"{url}/api/decisions",\n'
        '    json={"state": STATE, "questions": QUESTIONS},\n'
        '    headers={"Authorization": f"Bearer {token}"},\n'
        f"    timeout={CLIENT_TIMEOUT_SECONDS},\n"
        ")\n"
        "if response.is_error:\n"
        '    sys.exit(f"{response.status_code}: {response.text}")\n'
        'answers = response.json()["answers"]\n'
        "print(json.dumps(answers, indent=2, ensure_ascii=False))\n"
        "\n" + _report_comment("#", keep_one_in, sampled=True) + f"KEEP_ONE_IN = {keep_one_in}\n"
        f"REPORTED = {reported!r}\n"
        "\n"
        "\n"
        "def report(state, answers):\n"
        '    """Send the decision to the console from a thread of its own (None: not sent)."""\n'
        '    console = os.environ.get("CONSOLE_URL", "").rstrip("/")\n'
        '    ingest_token = os.environ.get("CONSOLE_INGEST_TOKEN", "")\n'
        "    if not (console and ingest_token):\n"
        "        return None\n"
        "    canonical = json.dumps(\n"
        '        state, sort_keys=True, separators=(",", ":"), ensure_ascii=False\n'
        "    ).encode()\n"
        "    if int(hashlib.sha256(canonical).hexdigest()[:16], 16) % KEEP_ONE_IN:\n"
        "        return None  # the console would not keep it\n"
        "    record = {\n"
        '        "state": state,\n'
        '        "answers": answers,\n'
        '        "at": datetime.now(timezone.utc).isoformat(),\n'
        "        **REPORTED,\n"
        "    }\n"
        "\n"
        "    def send():\n"
        "        try:\n"
        "            httpx.post(\n"
        f'                f"{{console}}/api/sets/{export["question_set"]}/states",\n'
        "                json=record,\n"
        '                headers={"Authorization": f"Bearer {ingest_token}"},\n'
        f"                timeout={REPORT_TIMEOUT_SECONDS},\n"
        "            )\n"
        "        except httpx.HTTPError:\n"
        "            pass  # a report that cannot be sent is dropped; the decision stands\n"
        "\n"
        "    thread = threading.Thread(target=send, daemon=True)\n"
        "    thread.start()\n"
        "    return thread\n"
        "\n"
        "\n"
        "reporting = report(STATE, answers)\n"
        "if reporting is not None:  # a script that ends at once would cut it short\n"
        f"    reporting.join({REPORT_TIMEOUT_SECONDS})\n"
    )


def _template_literal(text: str) -> str:
    """A JavaScript template literal whose value is `text`."""
    escaped = text.replace("\\", "\\\\").replace("`", "\\`").replace("${", "\\${")
    return f"`{escaped}`"


def _typescript(export: Mapping[str, Any], label: str | None = None, keep_one_in: int = 1) -> str:
    state = json.dumps(PLACEHOLDER_STATE, ensure_ascii=False)
    reported = json.dumps(_reported(export, label), ensure_ascii=False)
    return (
        f"// Ask the approved questions of {_about(export, label)}\n"
        "// through the runtime's POST /api/decisions and print the answers. Reads RUNTIME_URL\n"
        "// and RUNTIME_TOKEN from the environment. An ES module with no type annotations to\n"
        "// strip: it runs under tsx, Deno, Bun, or Node 18+ (fetch built in) as decide.mjs.\n"
        'import { createHash } from "node:crypto";\n'
        'import process from "node:process";\n'
        "\n"
        "// The questions map exactly as exported, sent as this text: an object literal would put\n"
        "// integer-like keys first and read __proto__ as the prototype.\n"
        f"const QUESTIONS = {_template_literal(questions_text(export['questions']))};\n"
        "\n"
        "// Replace with the state your application decides about (any JSON).\n"
        f"const state = {state};\n"
        "\n"
        'const url = (process.env.RUNTIME_URL ?? "").replace(/\\/+$/, "");\n'
        'const token = process.env.RUNTIME_TOKEN ?? "";\n'
        "if (!url || !token) {\n"
        '  console.error("Set RUNTIME_URL and RUNTIME_TOKEN.");\n'
        "  process.exit(2);\n"
        "}\n"
        "const response = await fetch(`${url}/api/decisions`, {\n"
        '  method: "POST",\n'
        '  headers: { Authorization: `Bearer ${token}`, "Content-Type": "application/json" },\n'
        '  body: `{"state":${JSON.stringify(state)},"questions":${QUESTIONS}}`,\n'
        f"  signal: AbortSignal.timeout({CLIENT_TIMEOUT_SECONDS * 1000}),\n"
        "});\n"
        "const text = await response.text();\n"
        "if (!response.ok) {\n"
        "  console.error(`${response.status}: ${text}`);\n"
        "  process.exit(1);\n"
        "}\n"
        "const answers = JSON.parse(text).answers;\n"
        "\n"
        + _report_comment("//", keep_one_in, sampled=True)
        + f"const KEEP_ONE_IN = {keep_one_in}n;\n"
        f"const REPORTED = {reported};\n"
        "\n"
        "// The state's canonical JSON (keys sorted, no spaces), as the console hashes it.\n"
        "const canonical = (value) =>\n"
        "  Array.isArray(value)\n"
        '    ? `[${value.map(canonical).join(",")}]`\n'
        '    : value !== null && typeof value === "object"\n'
        "      ? `{${Object.keys(value)\n"
        "          .sort()\n"
        "          .map((key) => `${JSON.stringify(key)}:${canonical(value[key])}`)\n"
        '          .join(",")}}`\n'
        "      : JSON.stringify(value);\n"
        "\n"
        "async function report(state, answers) {\n"
        '  const consoleUrl = (process.env.CONSOLE_URL ?? "").replace(/\\/+$/, "");\n'
        '  const ingestToken = process.env.CONSOLE_INGEST_TOKEN ?? "";\n'
        "  if (!consoleUrl || !ingestToken) return;\n"
        '  const hash = createHash("sha256").update(canonical(state)).digest("hex");\n'
        "  if (BigInt(`0x${hash.slice(0, 16)}`) % KEEP_ONE_IN !== 0n) return; // not kept\n"
        "  try {\n"
        f"    await fetch(`${{consoleUrl}}/api/sets/{export['question_set']}/states`, {{\n"
        '      method: "POST",\n'
        "      headers: {\n"
        "        Authorization: `Bearer ${ingestToken}`,\n"
        '        "Content-Type": "application/json",\n'
        "      },\n"
        "      body: JSON.stringify({\n"
        "        state, answers, at: new Date().toISOString(), ...REPORTED,\n"
        "      }),\n"
        f"      signal: AbortSignal.timeout({REPORT_TIMEOUT_SECONDS * 1000}),\n"
        "    });\n"
        "  } catch {\n"
        "    // a report that cannot be sent is dropped; the decision stands\n"
        "  }\n"
        "}\n"
        "\n"
        "const reporting = report(state, answers); // not awaited before the answers print\n"
        "console.log(JSON.stringify(answers, null, 2));\n"
        "await reporting; // a script that ends at once would cut it short\n"
    )


def pinned_model(export: Mapping[str, Any]) -> tuple[str | None, str]:
    """The model the SDK snippet asks, and a comment saying why: the concrete model that
    answered the run the version was approved on (the export's `answered_by`), when one did;
    else, when several did or none is known, the model frozen with the approval (`model`)."""
    answered = export.get("answered_by")
    if isinstance(answered, str) and answered:
        return (
            answered,
            "the model that answered the run this version was approved on (answered_by)",
        )
    frozen = export.get("model") or None
    if isinstance(answered, list) and answered:
        names = ", ".join(json.dumps(name, ensure_ascii=False) for name in answered)
        why = f"several models answered the run this version was approved on ({names})"
    else:
        why = "no model is on record as answering the run this version was approved on"
    return frozen, f"{why}: the model frozen with the approval (model)"


def _sdk(export: Mapping[str, Any], label: str | None = None, keep_one_in: int = 1) -> str:
    model, why = pinned_model(export)
    return (
        f'"""Ask the approved questions of {_about(export, label)}\n'
        "of TypeSafe directly, through the official SDK (pip install typesafe-sdk), and print the\n"
        "answers. The SDK reads TYPESAFE_API_KEY (and TYPESAFE_BASE_URL, when set) from the\n"
        'environment: the provider\'s key, which the runtime otherwise holds for you."""\n'
        "\n"
        "import json\n"
        "import sys\n"
        "\n"
        "from typesafe_sdk import TypeSafeClient, TypeSafeError\n"
        "\n"
        "# The questions map exactly as exported; the SDK sends dictionaries as they are.\n"
        f"QUESTIONS = json.loads({_python_literal(questions_text(export['questions']))})\n"
        "\n"
        "# Replace with the state your application decides about.\n"
        f"STATE = {PLACEHOLDER_STATE!r}\n"
        "\n"
        f"# {why}\n"
        f"MODEL = {model!r}\n"
        "\n"
        "try:\n"
        "    with TypeSafeClient(model=MODEL) as client:\n"
        "        response = client.system_one(state=STATE, questions=QUESTIONS)\n"
        "except TypeSafeError as exc:  # the API's refusal names its status\n"
        "    sys.exit(str(exc))\n"
        'answers = {name: a.model_dump(mode="json") for name, a in response.answers.items()}\n'
        "print(json.dumps(answers, indent=2, ensure_ascii=False))\n"
    )


_WRITERS = {"curl": _curl, "python": _python, "typescript": _typescript, "sdk": _sdk}


def snippets(
    export: Mapping[str, Any], label: str | None = None, keep_one_in: int = 1
) -> list[dict[str, str]]:
    """Every language's snippet of `export`, as the export page shows them: language, title,
    file name, code (reporting its decisions sampled 1 in `keep_one_in`)."""
    return [
        {
            "language": language,
            "title": TITLES[language],
            "file_name": FILE_NAMES[language],
            "code": _WRITERS[language](export, label, keep_one_in),
        }
        for language in LANGUAGES
    ]
