"""Every relative link in the README and the guide leads to a file that exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def test_every_relative_link_resolves() -> None:
    pages = [ROOT / "README.md", ROOT / "bench" / "README.md", ROOT / "tests" / "README.md"]
    pages += sorted((ROOT / "docs").rglob("*.md"))
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue  # a URL or an anchor on the same page
            path = (page.parent / target.split("#", 1)[0]).resolve()
            if not path.exists():
                broken.append(f"{page.relative_to(ROOT)}: {target}")
    assert broken == [], broken
