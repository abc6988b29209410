"""Every README and guide example gives option values with `=`.

With a space, pytest also reads a path value as a test argument when it picks the rootdir,
so `--specgate-host-facts /elsewhere/f.json` silently took another project's settings.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from pytest_specgate.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
# pytest, pip and benchmark options that take no value (the specgate command's are read from its parser)
OTHER_FLAGS = {
    "--specgate-diagnostic", "--specgate-allow-dirty", "--quick", "--strict-markers",
    "--force-reinstall", "--no-deps",
}
_CODE = re.compile(r"```(?:bash|console|sh)?\n(.*?)```|`([^`\n]+)`", re.DOTALL)
_SPACED_VALUE = re.compile(r"(?<![\w-])(--[a-z][a-z-]*) +(?!-|\||\[|\.\.\.)(\S+)")


def _specgate_flags(parser: argparse.ArgumentParser) -> set[str]:
    flags: set[str] = set()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                flags |= _specgate_flags(child)
        elif action.nargs == 0:
            flags.update(option for option in action.option_strings if option.startswith("--"))
    return flags


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: path.name)
def test_examples_give_option_values_with_equals(document: Path) -> None:
    flags = _specgate_flags(build_parser()) | OTHER_FLAGS
    spaced = []
    for match in _CODE.finditer(document.read_text(encoding="utf-8")):
        code = match.group(1) or match.group(2)
        found = _SPACED_VALUE.findall(code)
        spaced += [f"{option} {value}" for option, value in found if option not in flags]
    assert spaced == [], f"{document.name}: use --option=value: {spaced}"
