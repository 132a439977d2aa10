"""The repository speaks of the product, not of the work that made it: no git-tracked file labels
text with the internal work rounds it was written in (a numbered work session or round, a round
named by its topic, a session named by when it ran). Figures carry a date instead.

Legitimate words stay: a recording session, a process leading its own session, ``round(x, 2)``,
``--rounds 2``, round-trip. The patterns are assembled from pieces so this file does not match them.
"""

from __future__ import annotations

import re
import subprocess

from ros_test_tools import REPO_ROOT

_S = "sess" + "ion"
_R = "rou" + "nd"

WORK_ROUND_WORDING = [
    # a numbered work session or round: "<session> 11", "<Session> #3", "<round> 2", "<sessions> 9-11"
    re.compile(rf"\b{_S}s?\s*#?\d+\b", re.IGNORECASE),
    re.compile(rf"\b{_R}\s*#?\d+\b", re.IGNORECASE),
    # a round of work named by what it did or when: "the task <round>", "the previous <round>"
    re.compile(rf"\b(task|work|episode|training|previous|next|last|earlier|this|that) {_R}\b", re.IGNORECASE),
    # a work session named by when: "since the last <session>", "in the next <session>"
    re.compile(rf"\b(next|previous|last|earlier|later) {_S}\b", re.IGNORECASE),
    re.compile(rf"\bsince (the )?(first|last|previous|this) {_S}\b", re.IGNORECASE),
    re.compile(rf"\b{_S}'s (main|commits|deadline|branch|changes)\b", re.IGNORECASE),
]


def tracked_text_files() -> list:
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO_ROOT, capture_output=True, check=True).stdout
    paths = [REPO_ROOT / name for name in listed.decode().split("\0") if name]
    return [path for path in paths if path.is_file() and not path.is_symlink()]


def wording_hits(text: str) -> list[tuple[int, str]]:
    """(line number, matched text) of every work-round label in ``text``."""
    hits = []
    for number, line in enumerate(text.splitlines(), 1):
        hits += [(number, match.group(0)) for pattern in WORK_ROUND_WORDING for match in pattern.finditer(line)]
    return hits


def test_no_tracked_file_labels_work_rounds():
    files = tracked_text_files()
    assert len(files) > 200
    found = []
    for path in files:
        data = path.read_bytes()
        if b"\0" in data:
            continue  # binary (images, weights)
        text = data.decode("utf-8", errors="replace")
        found += [f"{path.relative_to(REPO_ROOT)}:{line}: {hit!r}" for line, hit in wording_hits(text)]
    assert found == [], "label it by date or by what it is:\n" + "\n".join(found)


def test_work_round_labels_are_found():
    bad = [f"| {_S} 9, 2026-12-01 19:56 | 7.0 |", f"since {_S} 11 it reaches", f"{_S.title()} 10 made it faster",
           f"the task {_R}'s episodes", f"{_R} 3 of the fine-tune", f"re-measured in the next {_S}",
           f"all of this {_S}'s commits"]
    assert [bool(wording_hits(line)) for line in bad] == [True] * len(bad)


def test_legitimate_words_pass():
    good = [f"a recording {_S} of the operator", f"a process leading its own {_S}", "value = round(x, 2)",
            f"--{_R}s 2", f"a {_R}-trip over DDS", f"the {_S} file for replay", f"this {_S}'s domain",
            f"{_R}ed to 3 decimals"]
    assert [wording_hits(line) for line in good] == [[]] * len(good)


# Docs written alongside this layout by other work; linked from the README before they land.
LINKED_AHEAD = {"docs/gpu_and_distributed.md", "docs/data_engine.md"}
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def test_readme_and_docs_links_resolve():
    pages = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text()):
            if "://" in target or target.startswith("mailto:"):
                continue
            resolved = (page.parent / target).resolve()
            if not resolved.exists() and str(resolved.relative_to(REPO_ROOT)) not in LINKED_AHEAD:
                broken.append(f"{page.relative_to(REPO_ROOT)}: {target}")
    assert broken == []
