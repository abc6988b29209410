"""MkDocs hook: the site's home page is the README, built from it at every build, never a copy.

The README links its manual pages as ``docs/<page>.md`` (right on GitHub, where it sits at the
repository root); on the site the home page sits beside those pages, so the links lose ``docs/``.
``mkdocs build --strict`` then fails on any link of the README the site cannot resolve.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"
HOME = "index.md"
_DOCS_LINK = re.compile(r"\]\(docs/")


def home_page(readme: str) -> str:
    """The README as the site's home page: its ``docs/`` links made relative to ``docs/``."""
    return _DOCS_LINK.sub("](", readme)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, HOME, content=home_page(README.read_text("utf-8"))))
    return files
