"""Running the README's first command: its argv, its bundle."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def readme_first_command() -> list[str]:
    """The ``pytest ...`` part of the first bash block of README.md, split into arguments."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)\n```", readme, re.DOTALL)
    assert block is not None, "README.md has no ```bash block"
    commands = [part.strip() for part in block.group(1).split("&&")]
    pytest_commands = [command for command in commands if command.startswith("pytest ")]
    assert pytest_commands, f"README.md's first command runs no pytest: {block.group(1)!r}"
    return shlex.split(pytest_commands[0])


def with_evidence_dir(argv: list[str], directory: Path) -> list[str]:
    """The same command writing its bundle to ``directory`` instead of the README's ``out``."""
    option = "--specgate-evidence="
    found = [at for at, argument in enumerate(argv) if argument.startswith(option)]
    assert found, f"the README command writes no evidence (no {option}DIR): {argv}"
    at = found[0]
    return [*argv[:at], f"{option}{directory}", *argv[at + 1:]]


@dataclass(frozen=True)
class BundleRun:
    argv: list[str]
    returncode: int
    output: str
    bundle: Path
