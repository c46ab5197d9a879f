"""README.md and the manual in docs/ link only to what exists (issue 29): every relative link
points to an existing file, and every ``#anchor`` to a heading of its target, by GitHub's
heading slugs. Pure Python, no docs toolchain needed (scripts/build_docs.sh builds the site)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
INLINE_CODE = re.compile(r"(`+)(.+?)\1")
# [text](target) and ![alt](target); the target ends at the first space or ')'
LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def _prose(text: str) -> List[Tuple[int, str]]:
    """(line number, line) outside fenced code blocks."""
    out, fence = [], None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if m:
            if fence is None:
                fence = m.group(1)
            elif m.group(1) == fence:
                fence = None
            continue
        if fence is None:
            out.append((n, line))
    return out


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: the rendered text lower-cased, punctuation other than
    '-' and '_' dropped, each space a '-'."""
    text = INLINE_CODE.sub(lambda m: m.group(2), heading)
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)  # links keep their text
    text = re.sub(r"<[^>]+>", "", text)  # inline HTML
    text = text.replace("*", "").replace("~", "")
    text = text.lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> Set[str]:
    seen: Dict[str, int] = {}
    out = set()
    for _, line in _prose(path.read_text()):
        m = HEADING.match(line)
        if not m:
            continue
        slug = github_slug(m.group(2))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def links(path: Path) -> List[Tuple[int, str]]:
    out = []
    for n, line in _prose(path.read_text()):
        line = INLINE_CODE.sub("", line)
        out.extend((n, m.group(1)) for m in LINK.finditer(line))
    return out


def _external(target: str) -> bool:
    return re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I) is not None


def test_slugs_are_githubs():
    assert github_slug("API (pypaimon's names)") == "api-pypaimons-names"
    assert github_slug("Append tables, plan and CLI") == "append-tables-plan-and-cli"
    assert github_slug("paimon_rs and Spark (`paimon_rs.spark`)") == "paimon_rs-and-spark-paimon_rsspark"
    assert github_slug("§3 Sequence numbers — the rules") == "3-sequence-numbers--the-rules"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path):
    bad = []
    for n, target in links(page):
        if _external(target):
            continue
        file_part, _, anchor = target.partition("#")
        dest = page if not file_part else (page.parent / file_part).resolve()
        where = f"{page.relative_to(ROOT)}:{n}: {target}"
        if not dest.exists():
            bad.append(f"{where}: no such file")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            bad.append(f"{where}: no heading '#{anchor}' in {dest.relative_to(ROOT)}")
    assert not bad, "\n".join(bad)


def test_the_manual_links_from_the_readme_reach_every_page():
    reached = {(ROOT / t.partition("#")[0]).resolve() for _, t in links(ROOT / "README.md")
               if not _external(t) and t.startswith("docs/")}
    index = ROOT / "docs" / "index.md"
    reached |= {(index.parent / t.partition("#")[0]).resolve() for _, t in links(index)
                if not _external(t) and t.partition("#")[0]}
    missing = [p.name for p in PAGES[1:] if p.resolve() not in reached and p.name != "index.md"]
    assert not missing, f"docs pages linked from neither README.md nor docs/index.md: {missing}"


def _python_block(text: str, heading: str) -> str:
    """The first python block of the `## heading` section."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    section = text[start:] if end < 0 else text[start:end]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m, heading
    return m.group(1)


def test_install_page_repeats_the_readmes_quick_starts():
    readme = (ROOT / "README.md").read_text()
    install = (ROOT / "docs" / "install.md").read_text()
    for heading in ("Quick start", "Quick start with Spark"):
        assert _python_block(install, heading) == _python_block(readme, heading), heading
