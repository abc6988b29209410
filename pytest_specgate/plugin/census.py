"""The census: every test of every AC in a full collection of the project's configured testpaths.

A run can leave part of an AC out without deselecting anything: a file path or node id on the
command line, ``--ignore``/``--ignore-glob``, a conftest's ``collect_ignore``, ``addopts`` in
the ini or ``$PYTEST_ADDOPTS``. pytest then never collects those tests, so ``pytest_deselected``
never hears of them and the AC looks whole. The census collects the project a second time, in
process and once per run, the way ``pytest --collect-only`` would with no arguments: the same
rootdir, ini file and import mode, the ini's ``testpaths`` (the rootdir without them), its
``python_files``/``norecursedirs``, but none of the command line's paths, node ids, ``-k``,
``-m``, ``--deselect``, ``--ignore*``, no ``addopts`` and no ``$PYTEST_ADDOPTS``. A conftest's
``collect_ignore``/``collect_ignore_glob`` and its ``pytest_ignore_collect`` hook are skipped
too: they are the pull request's own claim about which of its tests count.

Files the run itself collected whole (every file it collected but those named by a node id) are
not collected again: their tests come from the run's own ``pytest_itemcollected`` (before any
deselection), and the census collects only what the run left out, plus building one pytest
configuration (``benchmarks/census.py`` measures it).
"""

from __future__ import annotations

import fnmatch
import glob
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Final

import pytest

from pytest_specgate.contracts.census import Census
from pytest_specgate.contracts.markers import MARKER_DOCS
from pytest_specgate.plugin.pytest_adapter import project_inifile, separate_config

__all__ = ["RunCollection", "census_arguments", "census_of_tree", "take_census"]


class RunCollection:
    """What the run's own collection found, item by item, before any deselection."""

    def __init__(self) -> None:
        self.files: set[Path] = set()
        self.carriers: dict[str, str] = {}

    def add(self, item: pytest.Item) -> None:
        self.files.add(item.path)
        marker = item.get_closest_marker("ac")
        if marker is not None and marker.args and isinstance(marker.args[0], str):
            self.carriers[item.nodeid] = marker.args[0]

    def whole_files(self, config: pytest.Config) -> set[Path]:
        """The files collected whole: those a node id on the command line named were collected in part."""
        named = {(config.invocation_params.dir / arg.split("::", 1)[0]).resolve()
                 for arg in config.args if "::" in arg}
        return {path for path in self.files if path.resolve() not in named}

_SELF_PLUGINS: Final = ("specgate", "pytest_specgate.plugin")
"""Names this plugin is loaded under: the census run must not write evidence or sign anything."""
_QUIET_PLUGINS: Final = ("cacheprovider", "terminal", "faulthandler", "unraisableexception",
                         "threadexception", "pastebin", "junitxml")
"""Built-in plugins that only report, cache or install process-wide handlers: not for a census."""


def census_arguments(
    config: pytest.Config, spec_paths: Sequence[str] | None = None
) -> tuple[list[str], list[str]]:
    """The census run's command line and the paths it collects (rootdir-relative).

    ``spec_paths`` (the project's ``[tool.specgate] spec_paths``), else the ini's ``testpaths``,
    are globbed from the rootdir as pytest does when run there with no arguments; none (or none
    that exist) means the rootdir itself.
    """
    root = config.rootpath
    paths: list[str] = []
    for pattern in config.getini("testpaths") if spec_paths is None else spec_paths:
        paths += sorted(glob.iglob(str(root / pattern), recursive=True))
    paths = paths or [str(root)]
    shown = [Path(os.path.relpath(path, root)).as_posix() for path in paths]
    args = [*paths, f"--rootdir={root}", "--capture=no", "--assert=plain",
            f"--import-mode={config.option.importmode}"]
    if config.inipath is not None:
        args.append(f"--config-file={config.inipath}")
    for name in (*_SELF_PLUGINS, *_QUIET_PLUGINS):
        args += ["-p", f"no:{name}"]
    return args, shown


class _Counter:
    """The census run's own plugin: registers the markers and this plugin's hooks (a conftest
    may implement them), overrides the ignore rules, counts."""

    def __init__(self, hookspecs: type | None, known: set[Path], carriers: dict[str, str]) -> None:
        self.carriers = carriers
        self.errors: list[str] = []
        self._hookspecs = hookspecs
        self._known = known

    def pytest_addhooks(self, pluginmanager: pytest.PytestPluginManager) -> None:
        if self._hookspecs is not None:
            pluginmanager.add_hookspecs(self._hookspecs)

    def pytest_configure(self, config: pytest.Config) -> None:
        for doc in MARKER_DOCS:
            config.addinivalue_line("markers", doc)

    @pytest.hookimpl(tryfirst=True)
    def pytest_ignore_collect(self, collection_path: Path, config: pytest.Config) -> bool:
        """pytest's own rules minus ``--ignore*`` and ``collect_ignore*``; being first with a
        non-None answer, no conftest's ``pytest_ignore_collect`` is asked either."""
        if collection_path.name == "__pycache__" or collection_path in self._known:
            return True
        if not collection_path.is_dir():
            return False
        if any((collection_path / marker).is_file() for marker in ("pyvenv.cfg", "conda-meta/history")):
            return True
        return any(_dir_matches(pattern, collection_path) for pattern in config.getini("norecursedirs"))

    def pytest_itemcollected(self, item: pytest.Item) -> None:
        marker = item.get_closest_marker("ac")
        if marker is not None and marker.args and isinstance(marker.args[0], str):
            self.carriers[item.nodeid] = marker.args[0]

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors.append(report.nodeid or ".")


def _dir_matches(pattern: str, path: Path) -> bool:
    """``norecursedirs`` matching as pytest's ``fnmatch_ex``: a bare pattern matches the name."""
    if os.sep not in pattern and "/" not in pattern:
        return fnmatch.fnmatch(path.name, pattern)
    return fnmatch.fnmatch(str(path), pattern if os.path.isabs(pattern) else f"*{os.sep}{pattern}")


def take_census(config: pytest.Config, hookspecs: type | None = None,
                run: RunCollection | None = None, spec_paths: Sequence[str] | None = None) -> Census:
    """Collect the project's configured testpaths in a configuration of their own (see the
    module's docstring); any failure is the census's ``problem``, never an exception.

    ``hookspecs``: the plugin's own hook specifications, which a conftest may implement;
    ``run``: what the run collected (None, as on an xdist controller: collect everything).
    """
    args, shown = census_arguments(config, spec_paths)
    known = set() if run is None else run.whole_files(config)
    counter = _Counter(hookspecs, known, {} if run is None else dict(run.carriers))
    # Warnings of a second collection (a test class with __init__, a module already imported)
    # were the run's own to report, once.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _collect(args, shown, counter)


def census_of_tree(root: Path, spec_paths: Sequence[str], hookspecs: type | None = None) -> Census:
    """The census of a checked-out tree (the trusted commit in a temporary worktree, for the gate):
    ``spec_paths`` globbed from ``root`` (none that exist: ``root`` itself), collected with the
    configuration file pytest would take there (:func:`project_inifile`) and pytest's default
    import mode, under the same rules as :func:`take_census`.
    Run it in a process of its own: collection imports the tree's modules."""
    paths: list[str] = []
    for pattern in spec_paths:
        paths += sorted(glob.iglob(str(root / pattern), recursive=True))
    paths = paths or [str(root)]
    shown = [Path(os.path.relpath(path, root)).as_posix() for path in paths]
    args = [*paths, f"--rootdir={root}", "--capture=no", "--assert=plain"]
    inifile = project_inifile(root)
    if inifile is not None:
        args.append(f"--config-file={inifile}")
    for name in (*_SELF_PLUGINS, *_QUIET_PLUGINS):
        args += ["-p", f"no:{name}"]
    counter = _Counter(hookspecs, set(), {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return _collect(args, shown, counter)


def _collect(args: list[str], shown: list[str], counter: _Counter) -> Census:
    try:
        with separate_config(args, counter, "specgate-census") as census_config:
            session = pytest.Session.from_config(census_config)
            census_config.hook.pytest_sessionstart(session=session)
            session.perform_collect()
    except (Exception, SystemExit, pytest.exit.Exception) as error:  # a conftest can raise anything
        message = " ".join(str(error).split()) or type(error).__name__
        return Census(tuple(shown), counter.carriers, tuple(counter.errors),
                      problem=f"{type(error).__name__}: {message}")
    return Census(tuple(shown), dict(counter.carriers), tuple(counter.errors))
