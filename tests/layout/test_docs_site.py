"""The manual as a MkDocs site: the home page is the README (built from it, never copied), every
page it links exists and is in the navigation, every ``specgate`` command is documented, and
``mkdocs build --strict`` passes."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_specgate.cli import build_parser

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
README = REPO / "README.md"
_LINK = re.compile(r"\]\((?P<target>[^)#\s]+)(?:#[^)]*)?\)")


def _hooks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("specgate_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_home_page_is_the_readme_with_its_links_made_relative_to_docs() -> None:
    readme = README.read_text("utf-8")
    home = _hooks().home_page(readme)
    assert "](docs/" in readme and "](docs/" not in home
    assert home.splitlines()[0] == readme.splitlines()[0] and home.count("\n") == readme.count("\n")
    assert not (DOCS / "index.md").exists(), "docs/index.md would be a second copy of the README"
    nav = (REPO / "mkdocs.yml").read_text("utf-8")
    for match in _LINK.finditer(home):
        target = match.group("target")
        if "://" in target:
            continue
        assert (DOCS / target).is_file(), f"README links {target}, which docs/ does not have"
        if target.endswith(".md"):
            assert f": {target}" in nav, f"{target} is not in mkdocs.yml nav"


def test_the_readme_stays_a_front_page() -> None:
    assert len(README.read_text("utf-8").splitlines()) <= 300


def test_every_specgate_command_is_documented() -> None:
    manual = "\n".join(path.read_text("utf-8") for path in sorted(DOCS.glob("*.md")))
    subparsers = next(
        action for action in build_parser()._actions if action.dest == "command"
    )
    commands = sorted(subparsers.choices)  # type: ignore[arg-type]
    assert "compare" in commands
    missing = [name for name in commands if f"`specgate {name}" not in manual]
    assert missing == [], f"specgate commands the manual does not document: {missing}"


def test_mkdocs_build_strict_passes(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs", reason="the docs extra: pip install -e '.[docs]'")
    built = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=REPO, capture_output=True, text=True, timeout=120, check=False,
    )
    assert built.returncode == 0, built.stderr[-3000:]
    home = (tmp_path / "site" / "index.html").read_text("utf-8")
    assert 'href="spec-authors/"' in home and "docs/spec-authors.md" not in home
