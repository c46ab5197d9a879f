"""mkdocs hooks (mkdocs.yml ``hooks:``): the pages are written for GitHub, whose Markdown starts a
list right after a paragraph line; Python-Markdown needs a blank line there, else the items run
into the paragraph. This puts one in, outside code fences; the files stay as they are."""

from __future__ import annotations

import re
from typing import Any

ITEM = re.compile(r"^(\s*)([-*+]|\d+\.)\s")


def on_page_markdown(markdown: str, **kwargs: Any) -> str:
    out, fence, prev = [], False, ""
    for line in markdown.split("\n"):
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
        elif (not fence and ITEM.match(line) and not ITEM.match(line).group(1)
              and prev.strip() and not ITEM.match(prev) and not prev.startswith((" ", "|"))):
            out.append("")
        out.append(line)
        prev = line
    return "\n".join(out)
