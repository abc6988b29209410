"""The one module that touches pytest's internals: ``_pytest`` imports and the private or
undocumented members of pytest's objects. A pytest release that changes one of them breaks
this module alone, and the ``pytest-oldest`` / ``pytest-newest`` tox environments (run by
CI) exercise it on the oldest pytest the package supports and on the newest.

- ``separate_config``: a second, configured pytest configuration in this process (the
  census collects the project with it); pytest's public API has no way to build one short
  of ``pytest.main``, which runs a whole session and reports no exception to its caller.
- ``project_inifile``: the configuration file pytest itself would take for a tree (which file
  names it looks for, in which order, and whether one holds a pytest section).
- ``output_uncaptured`` and ``resume_file_line``: writing past output capture and handing
  the terminal's current file line back to pytest's reporter (progress lines of long steps).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import pytest

from pytest_specgate.contracts.census import PYTEST_CONFIG_NAMES

__all__ = ["output_uncaptured", "project_inifile", "resume_file_line", "separate_config"]


@contextlib.contextmanager
def separate_config(args: Sequence[str], plugin: object, name: str) -> Iterator[pytest.Config]:
    """A pytest configuration of its own for ``args`` (no ``addopts``, no ``$PYTEST_ADDOPTS``)
    with ``plugin`` registered as ``name``, configured and unconfigured on leaving, whatever
    the body or the configuration raised."""
    from _pytest.config import get_config

    config = None
    try:
        config = get_config(list(args), plugins=[plugin])
        config.pluginmanager.register(plugin, name)
        config.parse(list(args), addopts=False)
        config._do_configure()
        yield config
    finally:
        if config is not None:
            config._ensure_unconfigure()


def project_inifile(root: Path) -> Path | None:
    """The file in ``root`` that ``pytest`` run there with no arguments takes its configuration
    from, looking no higher: the first of ``PYTEST_CONFIG_NAMES`` that pytest reads a pytest section
    from (a ``pyproject.toml`` without one does not hide a ``tox.ini`` with one)."""
    from _pytest.config.findpaths import load_config_dict_from_file

    return next((path for name in PYTEST_CONFIG_NAMES
                 if (path := root / name).is_file() and load_config_dict_from_file(path) is not None), None)


def output_uncaptured(config: pytest.Config) -> AbstractContextManager[object]:
    """Output capture (global and a fixture's) suspended, as ``capsys.disabled()`` does."""
    capture: Any = config.pluginmanager.get_plugin("capturemanager")
    if capture is None:
        return nullcontext()
    disabled: AbstractContextManager[object] = capture.global_and_fixture_disabled()
    return disabled


def resume_file_line(reporter: Any, path: Path) -> None:
    """Tell pytest's terminal reporter that the current line is ``path``'s again, so the next
    result letter lands after the prefix just written instead of on a new line."""
    reporter.currentfspath = path
