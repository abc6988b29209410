"""The spec author's guide: its worked example runs in the README's first command, the page
shows the example file verbatim, and its reference lists every public name."""

from __future__ import annotations

import re

from readme_run import REPO, BundleRun

import pytest_specgate
from pytest_specgate.evidence import load_bundle, read_records

EXAMPLE = "acceptance/examples/test_speedup_canary.py"
GUIDE = REPO / "docs" / "spec-authors.md"


def test_the_worked_example_passes_and_measures_everything_it_promises(readme_bundle: BundleRun) -> None:
    record = dict(read_records(load_bundle(readme_bundle.bundle))["AC-100"].document)
    assert record["outcome"] == "passed", record["tests"]
    figures = {row["name"]: row for row in record["measurements"]}
    assert (figures["median_speedup"]["at_least"], figures["acceptance_rate"]["at_least"]) == (1.4, 0.30)
    assert figures["sustained_last_window_speedup"]["at_least"] == 1.2
    assert figures["greedy_outputs_differing_from_baseline"]["value"] == 0
    assert {row["name"] for row in record["attachments"]} == {"canary.png", "canary.json"}
    assert record["qualifying"] is False


def test_the_guide_shows_the_example_file_verbatim() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    shown = re.search(rf"<!-- spec-authors-example: {re.escape(EXAMPLE)} -->\n```python\n(.*?)```", guide,
                      re.DOTALL)
    assert shown is not None, f"{GUIDE} has no example block for {EXAMPLE}"
    assert shown.group(1) == (REPO / EXAMPLE).read_text(encoding="utf-8")


def test_the_guide_reference_lists_every_public_name() -> None:
    guide = GUIDE.read_text(encoding="utf-8")
    reference = guide[guide.index("## Reference"):]
    listed = set(re.findall(r"^\| ([^|]+) \|", reference, re.MULTILINE))
    names = {name.strip(" `") for row in listed for name in row.split(",")} - {"name"}
    assert names == set(pytest_specgate.__all__) - {"__version__"}


def test_the_readme_links_the_guide() -> None:
    assert "(docs/spec-authors.md)" in (REPO / "README.md").read_text(encoding="utf-8")
