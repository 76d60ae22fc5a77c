"""README stays a front page and every relative link in README and docs/ reaches a file."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def markdown_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def broken_links(path: Path, root: Path = ROOT) -> list[str]:
    """Relative link targets of ``path`` (outside code fences) that name no file or directory."""
    bad, fence = [], False
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        if fence:
            continue
        for m in LINK.finditer(line):
            target = m.group(1).split("#", 1)[0]
            if target and not re.match(r"[a-z]+:", target) and not (path.parent / target).exists():
                bad.append(f"{path.relative_to(root)}:{n}: {target}")
    return bad


def test_every_relative_link_reaches_a_file():
    bad = [b for p in markdown_files() for b in broken_links(p)]
    assert not bad, "\n".join(bad)


def test_a_broken_link_is_found(tmp_path):
    page = tmp_path / "page.md"
    page.write_text("[ok](page.md) [gone](missing.md#x) [web](https://example.org)\n```\n[code](nope.md)\n```\n")
    assert broken_links(page, tmp_path) == ["page.md:1: missing.md"]


def test_readme_is_a_front_page():
    """Results, references and the status table live in docs/; README is the page that points there."""
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    for doc in ("docs/design.md", "docs/results/", "docs/commands.md", "docs/devices.md"):
        assert any(doc in line for line in lines), doc


def test_readme_bench_excerpt_is_the_committed_output():
    """The bench output README shows is the committed file's, line for line (not retyped numbers)."""
    text = (ROOT / "README.md").read_text()
    excerpt = text.split("## What the bench prints", 1)[1].split("```\n", 2)[1].rstrip("\n").splitlines()
    committed = (ROOT / "experiments/results/bench_quick.txt").read_text().splitlines()
    assert excerpt and excerpt == [line for line in committed if not line.startswith("wrote ")]
