"""What the repository tracks: no file over 1 MB and no build artifact (a wheel, an sdist, compiled
Python, an egg's metadata). Such a file once made up 56 % of the git pack and was used nowhere;
what is built is built from the lock, never committed."""

from __future__ import annotations

import subprocess
from pathlib import Path, PurePosixPath

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 1_000_000
ARTIFACT_SUFFIXES = (".whl", ".tar.gz", ".pyc", ".pyo")
ARTIFACT_PARTS = ("__pycache__",)


def problems(files: dict[str, int]) -> list[str]:
    """What is wrong with tracked files (path → size in bytes), a line each."""
    found = []
    for path, size in sorted(files.items()):
        parts = PurePosixPath(path).parts
        if path.endswith(ARTIFACT_SUFFIXES) or any(
            p in ARTIFACT_PARTS or p.endswith(".egg-info") for p in parts
        ):
            found.append(f"{path}: a build artifact")
        elif size > MAX_BYTES:
            found.append(f"{path}: {size:,} bytes, over {MAX_BYTES:,}")
    return found


def tracked_files() -> dict[str, int]:
    """Every path in git's index with the size of its blob."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-s", "-z"], cwd=ROOT, capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout: {exc}")
    entries = [e.decode() for e in listed.split(b"\0") if e]
    blobs = [(e.split(" ")[1], e.split("\t", 1)[1]) for e in entries]  # "mode sha stage\tpath"
    sizes = subprocess.run(
        ["git", "cat-file", "--batch-check=%(objectsize)"],
        cwd=ROOT,
        input="".join(f"{sha}\n" for sha, _ in blobs).encode(),
        capture_output=True,
        check=True,
    ).stdout.split()
    return {path: int(size) for (_, path), size in zip(blobs, sizes, strict=True)}


def test_no_tracked_file_is_large_or_built():
    files = tracked_files()
    assert "manage.py" in files and "uv.lock" in files  # the listing is the repository's
    assert not problems(files)


def test_the_rule_names_what_it_refuses():
    assert problems(
        {
            "py_spy-0.4.1-py2.py3-none-manylinux_2_5_x86_64.whl": 2_900_000,
            "dist/decision_console-0.1.0.tar.gz": 10,
            "questions/__pycache__/spec.cpython-311.pyc": 10,
            "decision_console.egg-info/PKG-INFO": 10,
            "docs/img/huge.png": MAX_BYTES + 1,
            "docs/img/editor.png": MAX_BYTES,
            "questions/core/spec.py": 10,
        }
    ) == [
        "decision_console.egg-info/PKG-INFO: a build artifact",
        "dist/decision_console-0.1.0.tar.gz: a build artifact",
        "docs/img/huge.png: 1,000,001 bytes, over 1,000,000",
        "py_spy-0.4.1-py2.py3-none-manylinux_2_5_x86_64.whl: a build artifact",
        "questions/__pycache__/spec.cpython-311.pyc: a build artifact",
    ]
