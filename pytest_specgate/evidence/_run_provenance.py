"""Run provenance: what shaped a run from outside the repository, recorded and judged.

Source binding covers the files the run imported from the repository. Everything else that can
change what a run does lives elsewhere: pytest plugins from other distributions, ``-p`` through
``$PYTEST_ADDOPTS``/``$PYTEST_PLUGINS``, ``sitecustomize``/``usercustomize`` and ``.pth`` files
that run at start-up, ``PYTHONPATH`` entries, conftests above the rootdir, an edited file in
site-packages. The record names them; a module imported from neither the repository, the
standard library nor a file an installed distribution's ``RECORD`` lists disqualifies, and so
does an installed ``pytest_specgate`` file that no longer hashes as its ``RECORD`` says.

Paths are written relative to what they are found in (``<repo>/``, ``<site-packages>/``,
``<stdlib>/``, ``<prefix>/``) so a record names no user's home; anything else is redacted.
"""

from __future__ import annotations

import base64
import hashlib
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from types import ModuleType
from typing import Final

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.markers import BUILTIN_BACKEND_NAMES

__all__ = [
    "ENVIRONMENT_VARIABLES",
    "SPECGATE_DISTRIBUTION",
    "Locations",
    "collect_run_provenance",
    "foreign_modules",
    "installed_files",
    "run_provenance_reasons",
    "unenrolled_backends",
    "used_backends",
]

ENVIRONMENT_VARIABLES: Final = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "PYTHONSTARTUP")
"""Environment variables that make pytest or Python load more than the repository says."""
SPECGATE_DISTRIBUTION: Final = "pytest-specgate"
STARTUP_MODULES: Final = ("sitecustomize", "usercustomize")
_SHOWN: Final = 20
"""How many names one reason lists before it says how many more there are."""


@dataclass(frozen=True)
class Locations:
    """Where a file may legitimately come from: the repository, the standard library, the
    interpreter's site directories; ``owned`` maps a site-relative path to its distribution."""

    repo: Path | None
    stdlib: tuple[Path, ...]
    site: tuple[Path, ...]
    prefixes: tuple[Path, ...]
    owned: Mapping[str, str]

    def label(self, path: Path) -> str:
        """``path`` relative to the first place that holds it, else the path itself."""
        for name, roots in (("<repo>", (self.repo,) if self.repo else ()), ("<site-packages>", self.site),
                            ("<stdlib>", self.stdlib), ("<prefix>", self.prefixes)):
            for root in roots:
                if _within(path, root):
                    return f"{name}/{path.relative_to(root).as_posix()}"
        return path.as_posix()

    def owner(self, path: Path) -> str | None:
        """The distribution whose RECORD lists ``path`` (a file in a site directory), else None."""
        for root in self.site:
            if _within(path, root):
                return self.owned.get(path.relative_to(root).as_posix())
        return None

    def vetted(self, path: Path) -> bool:
        """In the repository, in the standard library (not site-packages), or an installed file."""
        if self.repo is not None and _within(path, self.repo):
            return True
        if any(_within(path, root) for root in self.site):
            return self.owner(path) is not None
        return any(_within(path, root) for root in self.stdlib)


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def installed_files(distributions: Iterable[metadata.Distribution]) -> dict[str, str]:
    """Site-relative path -> distribution name of every file the distributions' RECORDs list.

    RECORD is read as text (not ``Distribution.files``): 40,000 files in 50 ms instead of
    seconds, which keeps this cheap enough to run on every evidence run.
    """
    owned: dict[str, str] = {}
    for dist in distributions:
        text = dist.read_text("RECORD")
        if not text:
            continue
        name = _dist_name(dist)
        for line in text.splitlines():
            entry = line.split(",", 1)[0]
            if entry:
                owned[os.path.normpath(entry).replace(os.sep, "/")] = name
    return owned


def _dist_name(dist: metadata.Distribution) -> str:
    """The distribution's name from its folder (``name-1.0.dist-info``), or from its metadata."""
    folder = getattr(dist, "_path", None)
    if isinstance(folder, Path) and folder.suffix in (".dist-info", ".egg-info"):
        return folder.stem.split("-", 1)[0].replace("_", "-").lower()
    return str(dist.metadata["Name"]).lower()


def interpreter_locations(repo: Path | None) -> Locations:
    """This interpreter's locations, with every installed distribution's files."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    site_dirs = {*site.getsitepackages(), site.getusersitepackages(), paths["purelib"], paths["platlib"]}
    stdlib = {paths["stdlib"], paths["platstdlib"]}
    return Locations(
        repo=repo,
        stdlib=tuple(sorted({Path(p).resolve() for p in stdlib if p})),
        site=tuple(sorted({Path(p).resolve() for p in site_dirs if p})),
        prefixes=tuple(sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()})),
        owned=installed_files(metadata.distributions()),
    )


def _module_file(module: ModuleType | None) -> Path | None:
    where = getattr(module, "__file__", None)
    return Path(where).resolve() if isinstance(where, str) else None


def foreign_modules(modules: Mapping[str, ModuleType | None], locations: Locations) -> dict[str, str]:
    """Module name -> labelled path of every imported module whose file is neither the
    repository's, the standard library's nor listed in an installed distribution's RECORD."""
    found = {}
    for name, module in sorted(modules.items()):
        path = _module_file(module)
        if path is not None and path.is_file() and not locations.vetted(path):
            found[name] = locations.label(path)
    return found


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _file_fact(path: Path, locations: Locations) -> dict[str, JsonValue]:
    return {"path": locations.label(path), "sha256": _sha256(path), "distribution": locations.owner(path)}


def startup_files(modules: Mapping[str, ModuleType | None],
                  locations: Locations) -> list[dict[str, JsonValue]]:
    """``sitecustomize``/``usercustomize`` as imported, and every ``.pth`` file in a site directory,
    each with its sha256 and owning distribution (None: no installed distribution's)."""
    found = [path for name in STARTUP_MODULES if (path := _module_file(modules.get(name))) is not None]
    for root in locations.site:
        try:
            found += sorted(root.glob("*.pth"))
        except OSError:
            continue
    return [{**_file_fact(path, locations), "executes": _executes(path)} for path in found]


def _executes(path: Path) -> bool:
    """Whether a ``.pth`` runs code at start-up (a line starting with ``import``); a module does."""
    if path.suffix != ".pth":
        return True
    try:
        lines = path.read_text("utf-8", errors="replace").splitlines()
    except OSError:
        return True
    return any(line.startswith(("import ", "import\t")) for line in lines)


def outside_sys_path(entries: Sequence[str], locations: Locations) -> list[str]:
    """``sys.path`` entries in neither the repository nor the interpreter's own prefixes."""
    outside = []
    for entry in entries:
        path = Path(entry or ".").resolve()
        inside = (locations.repo is not None and _within(path, locations.repo)) or any(
            _within(path, root) for root in (*locations.prefixes, *locations.site, *locations.stdlib))
        if not inside:
            outside.append(locations.label(path))
    return list(dict.fromkeys(outside))


def conftests_above(rootdir: Path, conftests: Iterable[Path],
                    locations: Locations) -> list[dict[str, JsonValue]]:
    """Conftests the run loaded from above its rootdir (pytest walks up to the confcutdir)."""
    root = rootdir.resolve()
    above = sorted({resolved for path in conftests if not _within(resolved := path.resolve(), root)})
    return [_file_fact(path, locations) for path in above]


def specgate_files(dist: metadata.Distribution | None, package_dir: Path,
                   locations: Locations) -> dict[str, JsonValue]:
    """The imported ``pytest_specgate`` checked against its distribution's RECORD.

    ``install`` is ``distribution`` when RECORD lists the imported package's files (each must
    hash as listed: ``mismatched`` names those that do not), ``repository`` when the package
    lives in the repository (an editable install: RECORD has no entries for the sources, which
    source binding covers instead), else ``elsewhere`` (its modules are then foreign).
    """
    version = None if dist is None else dist.version
    recorded = _record_hashes(dist)
    ours = {name: digest for name, digest in recorded.items() if name.startswith("pytest_specgate/")}
    site_root = next((root for root in locations.site if _within(package_dir, root)), None)
    if ours and site_root is not None:
        mismatched = sorted(name for name, digest in ours.items()
                            if digest and _record_digest(site_root / name) != digest)
        return {"distribution": SPECGATE_DISTRIBUTION, "version": version, "install": "distribution",
                "location": locations.label(package_dir), "mismatched": mismatched}
    in_repo = locations.repo is not None and _within(package_dir, locations.repo)
    return {"distribution": SPECGATE_DISTRIBUTION, "version": version,
            "install": "repository" if in_repo else "elsewhere",
            "location": locations.label(package_dir), "mismatched": []}


def _record_hashes(dist: metadata.Distribution | None) -> dict[str, str]:
    """RECORD path -> ``sha256=...`` digest (empty for files RECORD lists without one)."""
    text = None if dist is None else dist.read_text("RECORD")
    hashes = {}
    for line in (text or "").splitlines():
        fields = line.split(",")
        if len(fields) >= 2:
            hashes[fields[0]] = fields[1]
    return hashes


def _record_digest(path: Path) -> str | None:
    """A file's digest as RECORD writes it: ``sha256=`` + urlsafe base64 without padding."""
    try:
        digest = hashlib.sha256(path.read_bytes()).digest()
    except OSError:
        return None
    return "sha256=" + base64.urlsafe_b64encode(digest).decode().rstrip("=")


def plugin_facts(distinfo: Iterable[tuple[object, object]]) -> list[dict[str, JsonValue]]:
    """Loaded pytest plugins from ``pluginmanager.list_plugin_distinfo()``: module and distribution."""
    facts = []
    for plugin, dist in distinfo:
        facts.append({
            "plugin": str(getattr(plugin, "__name__", type(plugin).__name__)),
            "distribution": str(getattr(dist, "project_name", None) or getattr(dist, "name", "?")),
            "version": str(getattr(dist, "version", "?")),
        })
    return sorted(facts, key=lambda fact: (str(fact["distribution"]), str(fact["plugin"])))


def collect_run_provenance(
    *,
    rootdir: Path,
    repo: Path | None,
    distinfo: Iterable[tuple[object, object]],
    conftests: Iterable[Path],
    backends: Mapping[str, str | None],
    environ: Mapping[str, str],
    modules: Mapping[str, ModuleType | None],
    sys_path: Sequence[str],
    redact: Callable[[str], str],
    locations: Locations | None = None,
) -> dict[str, JsonValue]:
    """The record's ``run_provenance``: every fact of the module's docstring, redacted.

    ``backends``: name -> providing distribution of every engine backend installed through the
    entry-point group (the built-ins are this package's own).
    """
    where = locations or interpreter_locations(repo)
    package_dir = Path(__file__).resolve().parents[1]
    try:
        dist: metadata.Distribution | None = metadata.distribution(SPECGATE_DISTRIBUTION)
    except metadata.PackageNotFoundError:
        dist = None
    document: dict[str, JsonValue] = {
        "plugins": plugin_facts(distinfo),
        "environment": {name: environ.get(name) for name in ENVIRONMENT_VARIABLES},
        "startup_files": startup_files(modules, where),
        "sys_path_outside": outside_sys_path(sys_path, where),
        "conftests_above_rootdir": conftests_above(rootdir, conftests, where),
        "foreign_modules": foreign_modules(modules, where),
        "specgate": specgate_files(dist, package_dir, where),
        "backends": dict(backends),
    }
    return {key: _redacted(value, redact) for key, value in document.items()}


def _redacted(value: JsonValue, redact: Callable[[str], str]) -> JsonValue:
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [_redacted(item, redact) for item in value]
    if isinstance(value, Mapping):
        return {redact(key): _redacted(item, redact) for key, item in value.items()}
    return value


def _listed(names: Sequence[str]) -> str:
    shown = ", ".join(names[:_SHOWN])
    return shown + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def run_provenance_reasons(provenance: JsonValue) -> list[str]:
    """Why a recorded ``run_provenance`` keeps the evidence from qualifying (pure; the judge's)."""
    if not isinstance(provenance, Mapping):
        return ["run provenance unknown: the record does not say what shaped the run from outside "
                "the repository"]
    reasons = []
    foreign = provenance.get("foreign_modules")
    if isinstance(foreign, Mapping) and foreign:
        named = [f"{name} ({path})" for name, path in foreign.items()]
        reasons.append("modules imported from outside the repository and every installed distribution: "
                       + _listed(named))
    specgate = provenance.get("specgate")
    if isinstance(specgate, Mapping):
        mismatched = [str(name) for name in specgate.get("mismatched") or []]
        if mismatched:
            reasons.append("installed pytest_specgate files differ from its distribution's RECORD: "
                           + _listed(mismatched))
    startup = provenance.get("startup_files")
    unowned = [str(entry.get("path")) for entry in (startup if isinstance(startup, list) else [])
               if isinstance(entry, Mapping) and entry.get("distribution") is None and entry.get("executes")]
    if unowned:
        reasons.append("start-up files that run code and belong to no installed distribution: "
                       + _listed(unowned))
    return reasons


def unenrolled_backends(backends: Iterable[tuple[str, str | None]],
                        enrolled: Mapping[str, str]) -> list[str]:
    """Why each non-built-in engine backend a record used may not qualify.

    ``backends``: (backend name, distribution providing it) as recorded; ``enrolled``: backend
    name -> distribution name from the trusted configuration (the base branch's
    ``[tool.specgate.backends]``). A backend qualifies only when enrolled by both.
    """
    reasons = []
    for name, distribution in sorted(set(backends), key=lambda pair: (pair[0], pair[1] or "")):
        wanted = enrolled.get(name)
        if wanted is None:
            reasons.append(f"engine backend {name!r} ({distribution or 'unknown distribution'}) is not "
                           "enrolled in the trusted [tool.specgate.backends]")
        elif distribution is None or _canonical(distribution) != _canonical(wanted):
            reasons.append(f"engine backend {name!r} comes from {distribution or 'an unknown distribution'}, "
                           f"but the trusted configuration enrols it from {wanted}")
    return reasons


def used_backends(record: Mapping[str, JsonValue]) -> list[tuple[str, str | None]]:
    """(backend, recorded distribution) of every non-built-in engine a record's tests used;
    the input of :func:`unenrolled_backends`."""
    provenance = record.get("run_provenance")
    installed = provenance.get("backends") if isinstance(provenance, Mapping) else None
    sources = installed if isinstance(installed, Mapping) else {}
    used: dict[str, str | None] = {}
    tests = record.get("tests")
    for test in tests if isinstance(tests, list) else []:
        engines = test.get("engines") if isinstance(test, Mapping) else None
        for engine in engines if isinstance(engines, list) else []:
            backend = engine.get("backend") if isinstance(engine, Mapping) else None
            if isinstance(backend, str) and backend not in BUILTIN_BACKEND_NAMES:
                source = sources.get(backend)
                used[backend] = source if isinstance(source, str) else None
    return sorted(used.items(), key=lambda pair: pair[0])


def _canonical(name: str) -> str:
    return name.replace("_", "-").replace(".", "-").lower()
