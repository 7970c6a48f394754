"""The project describes itself as it is: no tracked file outside tests/ cites a work session
or an issue number, which a reader of the repository cannot resolve (``git log`` holds the
history)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
HISTORY = re.compile(r"[Ss]ession [0-9]|[Ii]ssue [0-9]")


def tracked_text_files() -> list[Path]:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True
    ).stdout.decode()
    paths = [REPO_ROOT / name for name in listed.split("\0") if name]
    return [p for p in paths if p.relative_to(REPO_ROOT).parts[0] != "tests" and p.is_file()]


def history_lines(path: Path) -> list[str]:
    data = path.read_bytes()
    if b"\0" in data[:8192]:  # a binary file
        return []
    text = data.decode("utf-8", errors="replace")
    return [
        f"{path.relative_to(REPO_ROOT)}:{number}: {line.strip()[:120]}"
        for number, line in enumerate(text.splitlines(), start=1)
        if HISTORY.search(line)
    ]


def test_the_pattern_catches_what_it_is_for() -> None:
    assert HISTORY.search("as measured in session 12")
    assert HISTORY.search("see Issue 3")
    assert not HISTORY.search("a requests session; the issue at hand")


def test_no_tracked_file_outside_tests_names_a_session_or_an_issue_number() -> None:
    found = [line for path in tracked_text_files() for line in history_lines(path)]
    assert found == [], "describe things as they are; history lives in git log:\n" + "\n".join(
        found
    )
