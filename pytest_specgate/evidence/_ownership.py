"""Who owns a file a run imported: the repository, an installed distribution, the interpreter, or
the tool that made the virtual environment.

Every imported file resolves to one owner or is foreign. A repository file is bound by its git
blob hash elsewhere (source binding). An installed distribution owns a file its ``RECORD`` lists
while the file still hashes as listed, so an edit after installing makes it foreign; RECORD lines
are relative to the site directory, so ``../../../bin/pytest`` is the console script, and the
``__main__`` run from it is that distribution's. The interpreter owns its standard library as
named there, links included: Debian links ``/usr/lib/python3.X/sitecustomize.py`` to a file
under ``/etc``. The environment owns the ``_virtualenv`` files virtualenv and uv write into a
venv's site directory while they hold a content a released tool wrote (``_venv_tools``).

RECORDs are read lazily, as bytes, and searched for the files a run imported (not parsed
into ``Distribution.files``, an object per line: 60,000 lines in a vLLM environment take most of
a second to parse); only imported files are hashed.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import os
import re
import sys
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import machinery, metadata
from pathlib import Path
from types import FunctionType, ModuleType
from typing import Final, Literal

from pytest_specgate.evidence._venv_tools import venv_tool_file

__all__ = ["FOREIGN_CAUSES", "InstalledIndex", "Locations", "Owner", "module_owner"]

FOREIGN_CAUSES: Final = ("outside", "unrecorded", "edited", "unhashed", "not-a-file", "no-file", "frozen")
"""Why a module is foreign: from outside every known place, in a site directory that no RECORD
lists, edited after installing, listed without a hash, not a regular file (a zip member), no file
at all (``python -c``, ``exec``), frozen into an interpreter that is not a plain CPython's."""
_PACKAGE_DIRS: Final = frozenset({"site-packages", "dist-packages"})


@dataclass(frozen=True)
class Owner:
    """One file's owner: ``kind`` and, for a distribution's file, its name; ``cause`` (one of
    ``FOREIGN_CAUSES``) says why a foreign one is foreign."""

    kind: Literal["repository", "distribution", "interpreter", "environment", "foreign"]
    distribution: str | None = None
    cause: str | None = None

    @property
    def foreign(self) -> bool:
        return self.kind == "foreign"


_INTERPRETER: Final = Owner("interpreter")
_ENVIRONMENT: Final = Owner("environment")


@dataclass(eq=False)
class _Record:
    """One distribution's RECORD, read (as bytes) only when a lookup first needs it."""

    distribution: str
    sites: tuple[str, ...]
    path: str
    key: str
    data: bytes | None = None
    _tops: frozenset[str] | None = None

    def tops(self) -> frozenset[str]:
        """The top-level names ``top_level.txt`` lists (empty where the build wrote none)."""
        if self._tops is None:
            try:
                with open(os.path.join(os.path.dirname(self.path), "top_level.txt")) as handle:
                    self._tops = frozenset(handle.read().split())
            except OSError:
                self._tops = frozenset()
        return self._tops

    def size(self) -> int:
        try:
            return os.path.getsize(self.path)
        except OSError:
            return 0

    def entry(self, relative: str) -> str | None:
        """RECORD's ``hash,size`` text for ``relative`` when this RECORD lists it."""
        if self.data is None:
            try:
                with open(self.path, "rb") as handle:
                    self.data = b"\n" + handle.read()
            except OSError:
                self.data = b""
        start = self.data.find(b"\n" + relative.encode() + b",")
        if start < 0:
            return None
        end = self.data.find(b"\n", start + 1)
        line = self.data[start + 1:end if end >= 0 else len(self.data)].decode(errors="replace").rstrip("\r")
        return line[len(relative) + 1:]


def _dist_name(dist: metadata.Distribution, folder: Path) -> str:
    """The distribution's name from its folder (``name-1.0.dist-info``), or from its metadata."""
    if folder.suffix in (".dist-info", ".egg-info"):
        return folder.stem.split("-", 1)[0].replace("_", "-").lower()
    return str(dist.metadata["Name"]).lower()


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "", name).lower()


class InstalledIndex:
    """Which installed distribution's RECORD lists a file, and with what hash.

    RECORD lines are relative to the distribution's site directory. A lookup reads RECORDs
    lazily and searches them as bytes, most likely owner first: the distribution that owned
    another file of the same top-level package, those whose name matches it, those already
    read, those whose ``top_level.txt`` lists it, then the rest, smallest first. A run reads the
    RECORDs of the distributions it imported from, not of everything installed (an unowned file,
    which disqualifies anyway, reads them all).
    """

    def __init__(self, records: Iterable[_Record]) -> None:
        self._records = list(records)
        self._by_top: dict[str, _Record] = {}
        self._sites: set[str] | None = None
        self._by_size: list[_Record] | None = None

    def __len__(self) -> int:
        return len(self._records)

    def sites(self) -> set[str]:
        """Every folder holding a distribution with a RECORD (as found on ``sys.path``)."""
        if self._sites is None:
            self._sites = {site for record in self._records for site in record.sites}
        return self._sites

    @classmethod
    def of(cls, distributions: Iterable[metadata.Distribution]) -> InstalledIndex:
        """Every distribution with a RECORD (one without owns nothing)."""
        records = []
        real: dict[str, str] = {}
        for dist in distributions:
            folder = getattr(dist, "_path", None)
            record = os.path.join(str(folder), "RECORD")
            if not isinstance(folder, Path) or not os.path.isfile(record):
                continue
            site = os.path.dirname(os.path.abspath(folder))
            if site not in real:
                real[site] = os.path.realpath(site)
            name = _dist_name(dist, folder)
            records.append(_Record(name, tuple(dict.fromkeys((site, real[site]))), record, _key(name)))
        return cls(records)

    def line(self, path: str) -> tuple[str, str] | None:
        """(distribution, ``hash,size``) of ``path`` as named, else of its real path, or None."""
        found = self._line(path)
        if found is None and (real := os.path.realpath(path)) != path:
            found = self._line(real)
        return found

    def _line(self, path: str) -> tuple[str, str] | None:
        relative = {site: path[len(site) + 1:] if path.startswith(f"{site}/")
                    else os.path.relpath(path, site).replace(os.sep, "/") for site in self.sites()}
        top = _top_level(path, relative)
        tried: set[int] = set()
        for record in self._ranked(top):
            if id(record) in tried:
                continue
            tried.add(id(record))
            for site in record.sites:
                found = record.entry(relative[site])
                if found is not None:
                    self._by_top[_key(top)] = record
                    return record.distribution, found
        return None

    def _ranked(self, top: str) -> Iterator[_Record]:
        """Records most likely to list a file of the top-level package ``top`` first (lazily: a
        later tier reads more files)."""
        key = _key(top)
        first = self._by_top.get(key)
        if first is not None:
            yield first
        yield from (record for record in self._records
                    if key and record.key and (record.key in key or key in record.key))
        yield from (record for record in self._records if record.data is not None)
        yield from (record for record in self._records if top in record.tops())
        if self._by_size is None:
            self._by_size = sorted(self._records, key=_Record.size)
        yield from self._by_size


def _top_level(path: str, relative: Mapping[str, str]) -> str:
    """The first folder (or module) of ``path`` inside a site directory, else its own name."""
    inside = next((rel for rel in relative.values() if not rel.startswith("..")), None)
    name = inside.split("/", 1)[0] if inside is not None else os.path.basename(path)
    return name.split(".", 1)[0]


def _hash_matches(path: str, recorded: str) -> bool | None:
    """Whether ``path`` hashes as RECORD's ``algorithm=urlsafe-base64`` says; None: no hash given."""
    algorithm, _, expected = recorded.partition(",")[0].partition("=")
    if not expected or algorithm not in hashlib.algorithms_guaranteed:
        return None
    try:
        with open(path, "rb") as handle:
            digest = hashlib.file_digest(handle, algorithm).digest()
    except OSError:
        return False
    return base64.urlsafe_b64encode(digest).decode().rstrip("=") == expected


def _under(path: str, roots: Iterable[str]) -> bool:
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


@dataclass(frozen=True)
class Locations:
    """Where files may come from: the repository, the standard library, the site directories and
    the interpreter's prefixes (all resolved), and every installed distribution's files."""

    repo: Path | None
    stdlib: tuple[Path, ...]
    site: tuple[Path, ...]
    prefixes: tuple[Path, ...]
    installed: InstalledIndex

    def label(self, path: Path) -> str:
        """``path`` relative to the first place that holds it, else the path itself."""
        for name, roots in (("<repo>", (self.repo,) if self.repo else ()), ("<site-packages>", self.site),
                            ("<stdlib>", self.stdlib), ("<prefix>", self.prefixes)):
            for root in roots:
                if _under(str(path), (str(root),)):
                    return f"{name}/{path.relative_to(root).as_posix()}"
        return path.as_posix()

    def owner(self, where: str) -> Owner:
        """Who owns the file ``where`` (a module's ``__file__``, a start-up file). Only files in a
        site directory or the prefixes (console scripts) are looked up in RECORDs; the real path
        is worked out only for a file that is neither there nor in the standard library."""
        path = os.path.abspath(where)
        in_site = _under(path, self._site_roots)
        if not in_site and self._in_stdlib(path):
            return _INTERPRETER
        if not os.path.isfile(path):
            return Owner("foreign", cause="not-a-file")
        if in_site:
            return self._environment(path) or self._installed(path) or Owner("foreign", cause="unrecorded")
        real = os.path.realpath(path)
        if real != path and _under(real, self._site_roots):
            return self._installed(path) or Owner("foreign", cause="unrecorded")
        if _under(path, self._prefix_roots) and (owned := self._installed(path)):
            return owned
        if self.repo is not None and _under(real, (str(self.repo),)):
            return Owner("repository")
        return Owner("foreign", cause="outside")

    def matches_record(self, path: str, recorded: str) -> bool | None:
        """Whether ``path`` hashes as RECORD's ``recorded`` (``sha256=...[,size]``) says; None when
        RECORD gives no hash. Each file is hashed once per run however often it is asked about."""
        key = (path, recorded.partition(",")[0])
        if key not in self._hashed:
            self._hashed[key] = _hash_matches(path, recorded)
        return self._hashed[key]

    @functools.cached_property
    def _hashed(self) -> dict[tuple[str, str], bool | None]:
        return {}

    @functools.cached_property
    def _site_roots(self) -> tuple[str, ...]:
        return tuple({*map(str, self.site), *self.installed.sites()})

    @functools.cached_property
    def _prefix_roots(self) -> tuple[str, ...]:
        return tuple(map(str, self.prefixes))

    def _installed(self, path: str) -> Owner | None:
        listed = self.installed.line(path)
        if listed is None:
            return None
        distribution, recorded = listed
        matches = self.matches_record(path, recorded)
        if matches:
            return Owner("distribution", distribution)
        return Owner("foreign", distribution, "unhashed" if matches is None else "edited")

    def _environment(self, path: str) -> Owner | None:
        """Asked before the RECORDs: a file no RECORD lists makes the index read every RECORD of
        the environment (most of a second in a large one), and a venv tool's files are in every
        run of such a venv; only a file named as one is hashed."""
        return _ENVIRONMENT if venv_tool_file(path, self._site_roots) is not None else None

    def _in_stdlib(self, path: str) -> bool:
        """Under the standard library as named (links allowed: the interpreter's own files), but
        not in a site directory beneath it."""
        for root in map(str, self.stdlib):
            if _under(path, (root,)):
                return not _PACKAGE_DIRS.intersection(path[len(root):].split("/"))
        return False

    def in_stdlib(self, path: Path) -> bool:
        """Whether ``path`` (not resolved) is the interpreter's own."""
        return self._in_stdlib(os.path.abspath(path))


def module_owner(name: str, module: object, locations: Locations) -> Owner | None:
    """Who owns the code of an imported module; None for one with no code of its own: a namespace
    package, or a module made at run time that holds no Python function (``typing.io``, what an
    extension module registers, like cryptography's ``_openssl``), whose maker is judged instead.

    A module made at run time that holds functions is judged by the files they were compiled
    from, and is foreign when one was compiled from no file (``exec`` of a string); ``__main__``
    without a file is ``python -c``.
    """
    where = getattr(module, "__file__", None)
    if isinstance(where, str):
        if isinstance(module, ModuleType) and type(module) is not ModuleType and not os.path.isabs(where):
            return _module_object_owner(module, locations)
        return locations.owner(where)
    spec = getattr(module, "__spec__", None)
    origin = getattr(spec, "origin", None)
    if origin == "built-in" or name in sys.builtin_module_names:
        return _INTERPRETER
    if origin == "frozen":
        stdlib = name.partition(".")[0] in sys.stdlib_module_names
        return _INTERPRETER if stdlib else Owner("foreign", cause="frozen")
    if spec is not None and isinstance(spec.loader, machinery.NamespaceLoader):
        return None
    if name in ("__main__", "__mp_main__"):
        return Owner("foreign", cause="no-file")
    return _functions_owner(module, locations)


def _functions_owner(module: object, locations: Locations) -> Owner | None:
    """The owner of the files a module's functions were compiled from (the first foreign one if
    any); foreign when one was compiled from no file; None when it holds no function."""
    compiled_from = {value.__code__.co_filename for value in getattr(module, "__dict__", {}).values()
                     if isinstance(value, FunctionType)}
    if not compiled_from:
        return None
    if not all(source.startswith("/") for source in compiled_from):
        return Owner("foreign", cause="no-file")
    owners = [locations.owner(source) for source in sorted(compiled_from)]
    return next((owner for owner in owners if owner.foreign), owners[0])


def _module_object_owner(module: ModuleType, locations: Locations) -> Owner:
    """A module object of a ``ModuleType`` subclass that names a relative ``__file__``: PyTorch
    puts one in ``sys.modules`` as ``torch.classes`` (``__file__ = "_classes.py"``). Its code is
    its class's, so it is judged by the file that class was defined in, and by the files of any
    function it holds; foreign when that class comes from no file."""
    defined_in = getattr(sys.modules.get(type(module).__module__), "__file__", None)
    if not isinstance(defined_in, str) or not os.path.isabs(defined_in):
        return Owner("foreign", cause="no-file")
    owner = locations.owner(defined_in)
    held = _functions_owner(module, locations)
    return next((found for found in (owner, held) if found is not None and found.foreign), owner)
