"""Code that calls an approved set (pure Python): a ready call, in curl, Python (httpx) or
TypeScript (`fetch`), of the runtime's `POST /api/decisions` (seed 000) with the `questions` map
exactly as the export document holds it and a placeholder state, reading the runtime's address
and token from `RUNTIME_URL` and `RUNTIME_TOKEN` (as the console's own `runtime` backend does);
and one that asks the provider directly through the official SDK (`typesafe-sdk`, which reads
`TYPESAFE_API_KEY`), pinned to the model that answered the run the version was approved on
(`pinned_model`). Each prints the answers. `local_environment` is what points all of them at a
local stand-in serving both the runtime's path and the provider's.

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


def snippet(language: str, export: Mapping[str, Any], label: str | None = None) -> str:
    """The code, in `language` (one of LANGUAGES), that asks the questions of `export` (an
    export document, `exports.export_document`; `label` the label it was found by) about a
    placeholder state and prints the answers. `UnknownLanguage` for any other language."""
    writer = _WRITERS.get(language)
    if writer is None:
        raise UnknownLanguage(language)
    return writer(export, label)


def _about(export: Mapping[str, Any], label: str | None) -> str:
    which = f"label {label}, " if label else ""
    return (
        f"{export['question_set']} ({which}version {export['version']}, "
        f"sha256 {export['sha256'][:12]}…)"
    )


def _curl(export: Mapping[str, Any], label: str | None = None) -> str:
    body = json.dumps(
        {"state": PLACEHOLDER_STATE, "questions": export["questions"]}, ensure_ascii=False, indent=2
    )
    return (
        f"# Ask the approved questions of {_about(export, label)}\n"
        "# through the runtime's POST /api/decisions and print its answer. Reads RUNTIME_URL and\n"
        "# RUNTIME_TOKEN from the environment; replace the state with your application's.\n"
        f"curl -sS --fail-with-body --max-time {CLIENT_TIMEOUT_SECONDS} \\\n"
        '  -H "Authorization: Bearer $RUNTIME_TOKEN" \\\n'
        '  -H "Content-Type: application/json" \\\n'
        "  --data-binary @- \"${RUNTIME_URL%/}/api/decisions\" <<'JSON'\n"
        f"{body}\n"
        "JSON\n"
    )


def _python_literal(text: str) -> str:
    """A Python string literal whose value is `text`: a raw triple-quoted one (readable, and
    JSON text can hold no three quotes in a row), else its repr."""
    if '"""' in text or text.endswith("\\"):
        return repr(text)
    return f'r"""{text}"""'


def _python(export: Mapping[str, Any], label: str | None = None) -> str:
    return (
        f'"""Ask the approved questions of {_about(export, label)}\n'
        "through the runtime's POST /api/decisions and print the answers. Reads RUNTIME_URL and\n"
        'RUNTIME_TOKEN from the environment; needs httpx (pip install httpx)."""\n'
        "\n"
        "import json\n"
        "import os\n"
        "import sys\n"
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
        'print(json.dumps(response.json()["answers"], indent=2, ensure_ascii=False))\n'
    )


def _template_literal(text: str) -> str:
    """A JavaScript template literal whose value is `text`."""
    escaped = text.replace("\\", "\\\\").replace("`", "\\`").replace("${", "\\${")
    return f"`{escaped}`"


def _typescript(export: Mapping[str, Any], label: str | None = None) -> str:
    state = json.dumps(PLACEHOLDER_STATE, ensure_ascii=False)
    return (
        f"// Ask the approved questions of {_about(export, label)}\n"
        "// through the runtime's POST /api/decisions and print the answers. Reads RUNTIME_URL\n"
        "// and RUNTIME_TOKEN from the environment. An ES module with no type annotations to\n"
        "// strip: it runs under tsx, Deno, Bun, or Node 18+ (fetch built in) as decide.mjs.\n"
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
        "console.log(JSON.stringify(JSON.parse(text).answers, null, 2));\n"
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


def _sdk(export: Mapping[str, Any], label: str | None = None) -> str:
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


def snippets(export: Mapping[str, Any], label: str | None = None) -> list[dict[str, str]]:
    """Every language's snippet of `export`, as the export page shows them: language, title,
    file name, code."""
    return [
        {
            "language": language,
            "title": TITLES[language],
            "file_name": FILE_NAMES[language],
            "code": _WRITERS[language](export, label),
        }
        for language in LANGUAGES
    ]
