"""Every relative link in the user docs and the studies points at a file that exists.

Checked: README.md, docs/*.md, models/*.md, studies/*.md and tools/**/*.md. A link is a markdown
``[text](target)``; web links (``scheme:``), in-page anchors (``#x``) and links inside fenced code blocks
are skipped; a target's ``#anchor`` is dropped before the file is looked up, relative to the linking file.
"""

import re
from pathlib import Path

REPO = next(p for p in Path(__file__).resolve().parents if (p / "pyproject.toml").is_file())
LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"```.*?```", re.S)


def doc_files() -> list[Path]:
    """The markdown files whose links are checked."""
    return [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), *sorted((REPO / "models").glob("*.md")),
            *sorted((REPO / "studies").glob("*.md")), *sorted((REPO / "tools").glob("**/*.md"))]


def broken_links(path: Path) -> list[str]:
    """The relative link targets in ``path`` that name no existing file or folder."""
    broken = []
    for target in LINK.findall(FENCE.sub("", path.read_text(encoding="utf-8"))):
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue
        file = target.split("#", 1)[0]
        if file and not (path.parent / file).exists():
            broken.append(target)
    return broken


def test_the_checker_finds_a_broken_link(tmp_path):
    page = tmp_path / "page.md"
    (tmp_path / "there.md").write_text("x")
    page.write_text("[a](there.md) [b](missing.md#part) [c](https://example.org) [d](#top)\n"
                    "```\n[e](also-missing.md)\n```\n")
    assert broken_links(page) == ["missing.md#part"]


def test_every_relative_link_in_the_docs_resolves():
    files = doc_files()
    assert REPO / "studies" / "README.md" in files
    broken = {str(f.relative_to(REPO)): b for f in files if (b := broken_links(f))}
    assert not broken, broken
