"""Every module imported and every file run in this process, kept even when the module later leaves
``sys.modules``.

Run provenance judges the code a run imported. ``sys.modules`` at the end of the run is not that:
a plugin can configure the run and then delete itself from it. An audit hook
(``sys.addaudithook``), installed when pytest loads this plugin, cannot be removed and sees:

- ``import`` events of ``import`` statements and ``__import__``: the module object is taken from
  ``sys.modules`` by the ``exec`` event of its own body (or the next ``import`` event, for an
  extension module) and kept;
- ``exec`` events: the code object's file, for every module body run, including modules that
  ``importlib.import_module`` loads (it raises no ``import`` event: pytest's ``-p`` and
  ``PYTEST_PLUGINS``, entry points) and files run through ``exec(compile(...))``;
- the second ``import`` event of an extension module, which names its file.

A name whose import failed before its body ran (no module was ever made) is dropped after a few
events: no code of it ran. Per audit event the hook does one or two comparisons otherwise.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from types import CodeType, ModuleType
from typing import Final

__all__ = ["ImportWatch", "WatchMark", "watch_imports"]

_PATIENCE: Final = 64
"""Events a name stays pending before it is taken for an import that failed before running."""


@dataclass(frozen=True)
class WatchMark:
    """Where one run's share of what the watcher saw starts."""

    modules: int
    files: int
    xdist_process: bool = False
    """The process's first run was an xdist worker: its ``__main__`` is execnet's bootstrap, which
    the controller started, for that run and for runs nested in it (pytester in-process runs)."""


class ImportWatch:
    """The audit hook: ``seen`` holds (name, module) of every import since it was installed,
    ``files`` every file whose code ran (absolute paths, in order, each once)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ModuleType]] = []
        self.files: list[str] = []
        self._known_files: set[str] = set()
        self._pending: dict[str, int] = {}
        self._marked = False
        self._xdist_process = False

    def __call__(self, event: str, args: tuple[object, ...]) -> None:
        if event == "exec":
            if self._pending:
                self._settle()
            code = args[0] if args else None
            if isinstance(code, CodeType):
                self._ran(code.co_filename)
        elif event == "import":
            if self._pending:
                self._settle()
            name, where = (*args, None, None)[:2]
            if isinstance(where, str):
                self._ran(where)
            elif isinstance(name, str):
                self._pending[name] = 0

    def _ran(self, where: str) -> None:
        if where.startswith("/") and where not in self._known_files:
            self._known_files.add(where)
            self.files.append(where)

    def _settle(self) -> None:
        modules = sys.modules
        for name, waited in list(self._pending.items()):
            module = modules.get(name)
            if isinstance(module, ModuleType):
                self.seen.append((name, module))
                del self._pending[name]
            elif waited >= _PATIENCE:
                del self._pending[name]
            else:
                self._pending[name] = waited + 1

    def mark(self, *, xdist_worker: bool = False) -> WatchMark:
        """Where a run's share starts: the beginning for the first run of the process (everything
        since the plugin loaded), the current end for later ones (pytester runs in one process).
        Whether the process is an xdist worker is the first run's ``xdist_worker``: a later run
        cannot make its process one."""
        self._settle()
        if not self._marked:
            self._marked = True
            self._xdist_process = xdist_worker
            return WatchMark(0, 0, xdist_worker)
        return WatchMark(len(self.seen), len(self.files), self._xdist_process)

    def since(self, mark: WatchMark) -> tuple[list[tuple[str, ModuleType]], list[str]]:
        """(name, module) of every import and every file run from ``mark`` on."""
        self._settle()
        return self.seen[mark.modules:], self.files[mark.files:]


_WATCH: ImportWatch | None = None


def watch_imports() -> ImportWatch:
    """The process's one watcher, installed on the first call (an audit hook stays for good)."""
    global _WATCH
    if _WATCH is None:
        _WATCH = ImportWatch()
        sys.addaudithook(_WATCH)
    return _WATCH
