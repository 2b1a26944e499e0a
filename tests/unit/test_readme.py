"""The README is a landing page: short, its picture and its links into the docs there."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_is_one_page_whose_links_and_picture_exist():
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 200, "the README is a landing page: the rest belongs in docs/"
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", text)
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert "docs/screenshot.png" in local and any(t.startswith("docs/") and t.endswith(".md") for t in local)
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README links to files that do not exist: {missing}"


def test_readme_cites_no_internal_issue_numbers():
    """A reader has no access to the project's issue tracker: the README says what changed, not
    which issue changed it."""
    text = (ROOT / "README.md").read_text()
    cited = re.findall(r"[^.\n]*\bissues? #?\d+[^.\n]*", text, flags=re.I)
    assert not cited, f"the README cites internal issue numbers; say what changed instead: {cited}"
