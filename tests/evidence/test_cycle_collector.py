"""The judge's commands run with the cycle collector paused, and leave it as they found it.

What each command prints and writes is covered by its own tests (they run with the pause); these
check the pause itself: on while the command reads, restored after a result, a refusal or an
exception, and never switched on for a caller that had switched it off.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_specgate import cli
from pytest_specgate.evidence import cli_commands
from pytest_specgate.evidence._bundle import BundleError
from pytest_specgate.evidence._cycle_collector import cycle_collector_paused
from pytest_specgate.evidence._gate import GateInputError


@pytest.fixture(autouse=True)
def _collector_restored() -> Iterator[None]:
    collecting = gc.isenabled()
    yield
    if collecting:
        gc.enable()
    else:
        gc.disable()


def test_the_collector_is_off_in_the_block_and_on_again_after_it() -> None:
    gc.enable()
    with cycle_collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_on_again_after_the_block_raises() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), cycle_collector_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_the_caller_switched_off_stays_off() -> None:
    gc.disable()
    with cycle_collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


# Each command's first read, replaced by one that notes the collector's state and refuses.
_FIRST_READS = {
    "render": ("only_bundle", BundleError),
    "compare": ("only_bundle", BundleError),
    "merge": ("load_all_bundles", BundleError),
    "gate": ("pr_body_input", GateInputError),
}


def _argv(command: str, tmp_path: Path) -> list[str]:
    bundle = str(tmp_path / "bundle")
    return {
        "render": ["render", bundle],
        "compare": ["compare", bundle, bundle],
        "merge": ["merge", bundle, f"--out={tmp_path / 'merged'}"],
        "gate": ["gate", f"--pr-body={tmp_path / 'PR.md'}", f"--evidence={bundle}", f"--commit={'a' * 40}"],
    }[command]


@pytest.mark.parametrize("command", sorted(_FIRST_READS))
@pytest.mark.parametrize("refusal", [True, False], ids=["the command refuses", "an exception escapes"])
def test_each_judge_command_reads_with_the_collector_off_and_leaves_it_on(
    command: str, refusal: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, error = _FIRST_READS[command]
    seen: list[bool] = []

    def first_read(*args: object) -> object:
        seen.append(gc.isenabled())
        raise error("refused here") if refusal else RuntimeError("escaped")

    monkeypatch.setattr(cli_commands, name, first_read)
    gc.enable()
    if refusal:
        assert cli.main(_argv(command, tmp_path)) == 2
    else:
        with pytest.raises(RuntimeError, match="escaped"):
            cli.main(_argv(command, tmp_path))
    assert seen == [False]
    assert gc.isenabled()
