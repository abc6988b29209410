"""Run provenance: what shaped a run from outside the repository, recorded and judged.

Source binding covers the files the run imported from the repository. Everything else that can
change what a run does lives elsewhere: pytest plugins from other distributions, ``-p`` through
``$PYTEST_ADDOPTS``/``$PYTEST_PLUGINS``, ``sitecustomize``/``usercustomize`` and ``.pth`` files
that run at start-up, ``PYTHONPATH`` entries, conftests above the rootdir, an edited file in
site-packages, a plugin that deletes itself from ``sys.modules``. The record names them and the
judge weighs them: every module the run imported (``sys.modules``, what the import watcher saw,
registered and ``-p`` plugins) must resolve to an owner (``_ownership``: the repository, an
installed distribution whose RECORD hash matches, the interpreter), a ``PYTHONPATH`` entry must
lie inside the repository or the installation, and a start-up file that runs code must have an
owner. Each reason names the module, where it came from and what to do.

Paths are written relative to what they are found in (``<repo>/``, ``<site-packages>/``,
``<stdlib>/``, ``<prefix>/``) so a record names no user's home; anything else is redacted.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from importlib import machinery, metadata
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import Final

from pytest_specgate.contracts.jsonvalue import JsonValue
from pytest_specgate.contracts.markers import BUILTIN_BACKEND_NAMES
from pytest_specgate.evidence._ownership import InstalledIndex, Locations, module_owner
from pytest_specgate.evidence._venv_tools import VENV_TOOL_FILES

__all__ = [
    "ENVIRONMENT_VARIABLES",
    "SPECGATE_DISTRIBUTION",
    "Locations",
    "collect_run_provenance",
    "foreign_modules",
    "interpreter_locations",
    "option_plugin_names",
    "run_modules",
    "run_provenance_reasons",
    "unenrolled_backends",
    "used_backends",
    "with_worker_foreign",
]

ENVIRONMENT_VARIABLES: Final = ("PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTHONPATH", "PYTHONSTARTUP")
"""Environment variables that make pytest or Python load more than the repository says."""
SPECGATE_DISTRIBUTION: Final = "pytest-specgate"
STARTUP_MODULES: Final = ("sitecustomize", "usercustomize")
_SHOWN: Final = 20
"""How many names one reason lists before it says how many more there are."""


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


def interpreter_locations(repo: Path | None) -> Locations:
    """This interpreter's locations, with every installed distribution's files."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    site_dirs = {*site.getsitepackages(), site.getusersitepackages(), paths["purelib"], paths["platlib"]}
    # The base interpreter's: in a venv, platstdlib would name the venv's lib/pythonX.Y.
    base = sysconfig.get_paths(vars={"base": sys.base_prefix, "platbase": sys.base_exec_prefix})
    stdlib = {base["stdlib"], base["platstdlib"]}
    installed = InstalledIndex.of(metadata.distributions())
    # A folder holding installed distributions is a site directory wherever it comes from
    # (a .pth path line, PYTHONPATH): its files must be its distributions'.
    site_dirs |= installed.sites()
    return Locations(
        repo=repo,
        stdlib=tuple(sorted({Path(os.path.abspath(p)) for p in stdlib if p})),
        site=tuple(sorted({Path(p).resolve() for p in site_dirs if p})),
        prefixes=tuple(sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()})),
        installed=installed,
    )


def run_modules(modules: Mapping[str, object], watched: Iterable[tuple[str, object]], files: Iterable[str],
                plugins: Iterable[object], plugin_names: Iterable[str], *, worker: bool = False
                ) -> dict[str, object]:
    """Everything the run imported, keyed by module name: ``sys.modules``; what the import watcher
    saw that is no longer there (``NAME (removed)``, or ``NAME (replaced)`` when another module
    took its name); plugin modules pytest registered; each file whose code ran that no module
    above names (``STEM (executed)``: a module deleted after ``importlib.import_module`` loaded it,
    a file run through ``exec``); and ``-p``/``PYTEST_PLUGINS`` names found nowhere else, with the
    packages above a dotted one (looked up on ``sys.path`` without importing them again).

    On an xdist worker ``__main__`` is execnet's bootstrap, which the controller started: left out,
    under ``__mp_main__`` too (``multiprocessing`` names ``__main__`` so when imported).
    """
    found: dict[str, object] = {name: module for name, module in modules.items() if module is not None}
    known = {id(module) for module in found.values()}
    extra = [*watched, *((str(getattr(plugin, "__name__", "?")), plugin) for plugin in plugins
                         if isinstance(plugin, ModuleType))]
    for name, module in extra:
        if id(module) in known:
            continue
        known.add(id(module))
        found.setdefault(f"{name} (replaced)" if name in found else f"{name} (removed)", module)
    covered = {os.path.abspath(where) for module in found.values()
               if isinstance(where := getattr(module, "__file__", None), str)}
    for where in files:
        if where not in covered:
            covered.add(where)
            found[_free_key(found, f"{Path(where).stem} (executed)")] = SimpleNamespace(__file__=where)
    for name in plugin_names:
        for part, origin in _found_on_path(name):
            if part not in found and os.path.abspath(origin) not in covered:
                covered.add(os.path.abspath(origin))
                found[f"{part} (not imported now)"] = SimpleNamespace(__file__=origin)
    bootstrap = found.get("__main__")
    if worker and bootstrap is not None and getattr(bootstrap, "__file__", None) is None:
        for name in ("__main__", "__mp_main__"):
            if found.get(name) is bootstrap:
                del found[name]
    return found


def _found_on_path(name: str) -> Iterator[tuple[str, str]]:
    """(module, file) of ``name`` and of each package above it (whose ``__init__`` importing it
    runs), as ``sys.path`` holds them now: found without running any of them."""
    parts = name.split(".")
    path: list[str] | None = None
    for depth in range(1, len(parts) + 1):
        module = ".".join(parts[:depth])
        spec = machinery.PathFinder.find_spec(module, path)
        if spec is None:
            return
        if isinstance(spec.origin, str):
            yield module, spec.origin
        if spec.submodule_search_locations is None:
            return
        path = list(spec.submodule_search_locations)


def _free_key(found: Mapping[str, object], key: str) -> str:
    count = 2
    candidate = key
    while candidate in found:
        candidate, count = f"{key} #{count}", count + 1
    return candidate


def option_plugin_names(args: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """Module names that ``-p`` (in ``args``: the ini file's ``addopts`` and the command line; and in
    ``$PYTEST_ADDOPTS``) and ``$PYTEST_PLUGINS`` load."""
    words = [*args, *shlex.split(environ.get("PYTEST_ADDOPTS", ""))]
    names = [name.strip() for name in environ.get("PYTEST_PLUGINS", "").split(",") if name.strip()]
    for index, word in enumerate(words):
        if word == "-p" and index + 1 < len(words):
            names.append(words[index + 1])
        elif word.startswith("-p") and len(word) > 2:
            names.append(word[2:])
    return [name for name in dict.fromkeys(names) if not name.startswith("no:")]


def foreign_modules(modules: Mapping[str, object], locations: Locations) -> dict[str, dict[str, JsonValue]]:
    """Module name -> where it came from, why it is foreign (``_ownership.FOREIGN_CAUSES``) and the
    distribution concerned, for every module whose code is neither the repository's, an installed
    distribution's (hashing as its RECORD says) nor the interpreter's."""
    found: dict[str, dict[str, JsonValue]] = {}
    for name, module in sorted(modules.items()):
        owner = module_owner(name.partition(" ")[0], module, locations)
        if owner is not None and owner.foreign:
            found[name] = {"path": _where(module, locations), "cause": owner.cause,
                           "distribution": owner.distribution}
    return found


def _where(module: object, locations: Locations) -> str:
    where = getattr(module, "__file__", None)
    return locations.label(Path(os.path.abspath(where))) if isinstance(where, str) else "<no file>"


def interpreter_identity(modules: Mapping[str, object], locations: Locations) -> dict[str, JsonValue]:
    """The interpreter a run used: version, executable, standard library, and each of its files
    that links out of the standard library (Debian's ``sitecustomize.py`` -> ``/etc``) with the
    sha256 of what it holds: these are the interpreter's, and the record says what they were."""
    linked: list[dict[str, JsonValue]] = []
    for module in modules.values():
        where = getattr(module, "__file__", None)
        if not isinstance(where, str) or not os.path.islink(where) or not locations.in_stdlib(Path(where)):
            continue
        real = Path(where).resolve()
        if not any(_within(real, root) for root in locations.stdlib):
            linked.append({"path": locations.label(Path(os.path.abspath(where))), "target": real.as_posix(),
                           "sha256": _sha256(real)})
    return {
        "implementation": sys.implementation.name,
        "version": ".".join(str(part) for part in sys.version_info[:3]),
        "executable": locations.label(Path(sys.executable)),
        "stdlib": [root.as_posix() for root in locations.stdlib],
        "linked": sorted(linked, key=lambda fact: str(fact["path"])),
    }


def _sha256(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


def _file_fact(path: Path, locations: Locations) -> dict[str, JsonValue]:
    """A file's label, sha256 and owner: ``distribution`` names the installed distribution whose
    RECORD lists it with this content, ``owner`` says whose it is (None: foreign)."""
    owner = locations.owner(str(path))
    return {"path": locations.label(Path(os.path.abspath(path))), "sha256": _sha256(path),
            "distribution": owner.distribution if owner.kind == "distribution" else None,
            "owner": None if owner.foreign else owner.kind}


def startup_files(modules: Mapping[str, object], locations: Locations,
                  sys_path: Sequence[str]) -> list[dict[str, JsonValue]]:
    """``sitecustomize``/``usercustomize`` as imported, else as found on ``sys_path`` (they run
    before the import watcher, so one that deletes itself from ``sys.modules`` is found on disk),
    and every ``.pth`` file in a site directory, each with its sha256 and owner, and whether it
    runs code."""
    found = []
    for name in STARTUP_MODULES:
        where = getattr(modules.get(name), "__file__", None)
        if not isinstance(where, str):
            spec = machinery.PathFinder.find_spec(name, list(sys_path))
            where = None if spec is None else spec.origin
        if isinstance(where, str):
            found.append(Path(where))
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


def _inside(path: Path, locations: Locations) -> bool:
    """In the repository or the interpreter's own prefixes, site or standard library."""
    return (locations.repo is not None and _within(path, locations.repo)) or any(
        _within(path, root) for root in (*locations.prefixes, *locations.site, *locations.stdlib))


def outside_sys_path(entries: Sequence[str], locations: Locations) -> list[str]:
    """``sys.path`` entries in neither the repository nor the interpreter's own prefixes."""
    outside = [locations.label(path) for entry in entries
               if not _inside(path := Path(entry or ".").resolve(), locations)]
    return list(dict.fromkeys(outside))


def pythonpath_outside(environ: Mapping[str, str], locations: Locations) -> list[str]:
    """``$PYTHONPATH`` entries outside the repository and the interpreter's own folders."""
    entries = [entry for entry in environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    return outside_sys_path(entries, locations)


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
    lives in the repository (the project under test is pytest-specgate: source binding covers
    its files), ``editable`` when it is an editable install of a checkout elsewhere, else
    ``elsewhere``; ``location`` is then the folder it is imported from.
    """
    version = None if dist is None else dist.version
    recorded = _record_hashes(dist)
    ours = {name: digest for name, digest in recorded.items() if name.startswith("pytest_specgate/")}
    site_root = next((root for root in locations.site if _within(package_dir, root)), None)
    if ours and site_root is not None:
        mismatched = sorted(name for name, digest in ours.items()
                            if locations.matches_record(str(site_root / name), digest) is False)
        return {"distribution": SPECGATE_DISTRIBUTION, "version": version, "install": "distribution",
                "location": locations.label(package_dir), "mismatched": mismatched}
    if locations.repo is not None and _within(package_dir, locations.repo):
        return {"distribution": SPECGATE_DISTRIBUTION, "version": version, "install": "repository",
                "location": locations.label(package_dir), "mismatched": []}
    return {"distribution": SPECGATE_DISTRIBUTION, "version": version,
            "install": "editable" if _editable(dist) else "elsewhere",
            "location": locations.label(package_dir.parent), "mismatched": []}


def _editable(dist: metadata.Distribution | None) -> bool:
    """Whether pip installed ``dist`` editable (PEP 610 ``direct_url.json``: ``dir_info.editable``)."""
    text = None if dist is None else dist.read_text("direct_url.json")
    try:
        info = json.loads(text or "{}").get("dir_info", {})
    except (ValueError, AttributeError):
        return False
    return isinstance(info, dict) and info.get("editable") is True


def _record_hashes(dist: metadata.Distribution | None) -> dict[str, str]:
    """RECORD path -> ``sha256=...`` digest (empty for files RECORD lists without one)."""
    text = None if dist is None else dist.read_text("RECORD")
    hashes = {}
    for line in (text or "").splitlines():
        fields = line.split(",")
        if len(fields) >= 2:
            hashes[fields[0]] = fields[1]
    return hashes


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
    modules: Mapping[str, object],
    sys_path: Sequence[str],
    redact: Callable[[str], str],
    locations: Locations | None = None,
) -> dict[str, JsonValue]:
    """The record's ``run_provenance``: every fact of the module's docstring, redacted.

    ``modules``: everything the run imported (:func:`run_modules`). ``backends``: name ->
    providing distribution of every engine backend installed through the entry-point group (the
    built-ins are this package's own).
    """
    where = locations or interpreter_locations(repo)
    package_dir = Path(__file__).resolve().parents[1]
    # The one with a RECORD: an editable install's checkout also holds an egg-info, found first
    # when the checkout is on sys.path.
    found = list(metadata.distributions(name=SPECGATE_DISTRIBUTION))
    dist = next((each for each in found if each.read_text("RECORD")), found[0] if found else None)
    foreign = foreign_modules(modules, where)
    document: dict[str, JsonValue] = {
        "plugins": plugin_facts(distinfo),
        "environment": {name: environ.get(name) for name in ENVIRONMENT_VARIABLES},
        "startup_files": startup_files(modules, where, sys_path),
        "sys_path_outside": outside_sys_path(sys_path, where),
        "pythonpath_outside": pythonpath_outside(environ, where),
        "conftests_above_rootdir": conftests_above(rootdir, conftests, where),
        "foreign_modules": {name: fact["path"] for name, fact in foreign.items()},
        "foreign_causes": {name: _cause(fact) for name, fact in foreign.items()},
        "interpreter": interpreter_identity(modules, where),
        "specgate": specgate_files(dist, package_dir, where),
        "backends": dict(backends),
    }
    return {key: _redacted(value, redact) for key, value in document.items()}


def _cause(fact: Mapping[str, JsonValue]) -> JsonValue:
    return {"cause": fact.get("cause"), "distribution": fact.get("distribution")}


def with_worker_foreign(provenance: Mapping[str, JsonValue],
                        worker_foreign: Mapping[str, Mapping[str, JsonValue]],
                        redact: Callable[[str], str]) -> dict[str, JsonValue]:
    """``provenance`` with the foreign modules xdist workers found (``foreign_modules``' facts)."""
    own, causes = provenance.get("foreign_modules"), provenance.get("foreign_causes")
    paths: dict[str, JsonValue] = {redact(name): redact(str(fact.get("path")))
                                   for name, fact in worker_foreign.items()}
    why = {redact(name): _cause(fact) for name, fact in worker_foreign.items()}
    paths.update(own if isinstance(own, Mapping) else {})
    why.update(causes if isinstance(causes, Mapping) else {})
    return {**provenance, "foreign_modules": dict(sorted(paths.items())),
            "foreign_causes": dict(sorted(why.items()))}


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


_FOREIGN_REASONS: Final = {
    "outside": ("modules imported from outside the repository and every installed distribution",
                "install them as a distribution, or commit them to the repository"),
    "unrecorded": ("modules in site-packages that no installed distribution's RECORD lists",
                   "reinstall the distribution they belong to, or delete them"),
    "edited": ("installed files that no longer hash as their distribution's RECORD says (edited after "
               "installing)", "reinstall: pip install --force-reinstall --no-deps {distributions}"),
    "unhashed": ("installed files whose distribution's RECORD gives no hash to check them by",
                 "reinstall with pip: pip install --force-reinstall --no-deps {distributions}"),
    "not-a-file": ("modules imported from something other than a regular file (a zip archive, say)",
                   "install them as a distribution, or commit them to the repository"),
    "no-file": ("modules with no file (made at run time, as python -c does)",
                "run pytest through its console script or python -m pytest"),
    "frozen": ("frozen modules outside the standard library",
               "run pytest with a plain Python interpreter"),
}


def _foreign_reasons(foreign: Mapping[str, JsonValue], causes: Mapping[str, JsonValue],
                     skip: Callable[[str], bool]) -> list[str]:
    """One line per cause: what, which modules (where from), and the fix."""
    grouped: dict[str, list[tuple[str, str, str | None]]] = {}
    for name, path in foreign.items():
        if skip(name):
            continue
        fact = causes.get(name)
        cause = fact.get("cause") if isinstance(fact, Mapping) else None
        distribution = fact.get("distribution") if isinstance(fact, Mapping) else None
        key = cause if isinstance(cause, str) and cause in _FOREIGN_REASONS else "outside"
        grouped.setdefault(key, []).append((name, str(path), distribution if isinstance(distribution, str)
                                            else None))
    reasons = []
    for cause, (what, fix) in _FOREIGN_REASONS.items():
        entries = grouped.get(cause)
        if not entries:
            continue
        named = [f"{name} ({path}{f', of {dist}' if dist else ''})" for name, path, dist in entries]
        distributions = " ".join(sorted({dist for _, _, dist in entries if dist}))
        reasons.append(f"{what}: {_listed(named)}; {fix.format(distributions=distributions)}")
    return reasons


def _specgate_reason(specgate: Mapping[str, JsonValue]) -> str | None:
    """The one line for pytest-specgate itself imported from a checkout outside the project."""
    where = specgate.get("location")
    if specgate.get("install") == "editable":
        return (f"pytest-specgate is installed editable from {where}; qualifying runs need a built "
                "install (pip install pytest-specgate, or a wheel built from that checkout)")
    if specgate.get("install") == "elsewhere":
        return (f"pytest-specgate is imported from {where}, not from an installed distribution; "
                "qualifying runs need a built install (pip install pytest-specgate)")
    return None


def _is_specgate(name: str) -> bool:
    return name.partition(" ")[0].partition(".")[0] == "pytest_specgate"


def run_provenance_reasons(provenance: JsonValue) -> list[str]:
    """Why a recorded ``run_provenance`` keeps the evidence from qualifying (pure; the judge's)."""
    if not isinstance(provenance, Mapping):
        return ["run provenance unknown: the record does not say what shaped the run from outside "
                "the repository"]
    reasons = []
    specgate, foreign = provenance.get("specgate"), provenance.get("foreign_modules")
    foreign = foreign if isinstance(foreign, Mapping) else {}
    specgate_line = _specgate_reason(specgate) if isinstance(specgate, Mapping) else None
    if specgate_line is not None and any(_is_specgate(name) for name in foreign):
        reasons.append(specgate_line)
    else:
        specgate_line = None
    causes = provenance.get("foreign_causes")
    skip = _is_specgate if specgate_line is not None else (lambda name: False)
    reasons += _foreign_reasons(foreign, causes if isinstance(causes, Mapping) else {}, skip)
    if isinstance(specgate, Mapping):
        mismatched = [str(name) for name in specgate.get("mismatched") or []]
        if mismatched:
            reasons.append("installed pytest_specgate files differ from its distribution's RECORD: "
                           + _listed(mismatched))
    outside = provenance.get("pythonpath_outside")
    if isinstance(outside, list) and outside:
        reasons.append("PYTHONPATH entries outside the repository and the Python installation: "
                       + _listed([str(entry) for entry in outside])
                       + "; unset PYTHONPATH, or install what it provides")
    startup = provenance.get("startup_files")
    unowned = [str(entry.get("path")) for entry in (startup if isinstance(startup, list) else [])
               if isinstance(entry, Mapping) and entry.get("executes") and not _startup_file_owned(entry)]
    if unowned:
        reasons.append("start-up files that run code and belong to no installed distribution nor the "
                       "interpreter: " + _listed(unowned) + "; remove them, or install what they belong to")
    if any(path.rpartition("/")[2] in VENV_TOOL_FILES for path in unowned):
        reasons.append("the venv's _virtualenv files hold a content no known virtualenv or uv release wrote: "
                       "make the venv again with python -m venv or uv 0.13 or later, which write none")
    return reasons


def _startup_file_owned(entry: Mapping[str, JsonValue]) -> bool:
    """Whether a recorded start-up file has an owner; a venv tool's file only with a content such a
    tool wrote (the judge checks the recorded digest itself), directly in a site directory."""
    owner = entry.get("owner", "distribution" if entry.get("distribution") else None)
    if owner != "environment":
        return owner is not None
    site, _, name = str(entry.get("path")).rpartition("/")
    return site == "<site-packages>" and entry.get("sha256") in VENV_TOOL_FILES.get(name, {})


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
