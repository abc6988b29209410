"""Every imported file resolves to its owner (repository, installed distribution, interpreter, the
venv's maker) or is foreign, and the import watcher keeps modules that later leave ``sys.modules``.

Honest layouts (a console script in ``bin/``, Debian's linked ``sitecustomize.py``) must resolve to
an owner; edits, unrecorded files, zips and file-less modules must not.
"""

from __future__ import annotations

import base64
import hashlib
import importlib
import sys
import types
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
from evidence_testkit import CLEAN_RUN_PROVENANCE

from pytest_specgate.evidence._import_watch import ImportWatch
from pytest_specgate.evidence._ownership import InstalledIndex, Locations, Owner, module_owner
from pytest_specgate.evidence._run_provenance import (
    foreign_modules,
    interpreter_identity,
    option_plugin_names,
    pythonpath_outside,
    run_modules,
    run_provenance_reasons,
    startup_files,
)
from pytest_specgate.evidence._venv_tools import VENV_TOOL_FILES

SCRIPT = b"#!/venv/bin/python\nfrom tool.cli import main\nmain()\n"


def _digest(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).decode().rstrip("=")


def _venv(tmp_path: Path) -> tuple[Path, Path]:
    """A venv-shaped prefix whose ``tool`` distribution installed a module and a console script."""
    prefix = tmp_path / "venv"
    site = prefix / "lib" / "python3.11" / "site-packages"
    (site / "tool").mkdir(parents=True)
    (site / "tool" / "cli.py").write_text("def main(): pass\n")
    (prefix / "bin").mkdir()
    (prefix / "bin" / "tool").write_bytes(SCRIPT)
    info = site / "tool-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: tool\nVersion: 1.0\n")
    (info / "RECORD").write_text(
        f"tool/cli.py,{_digest(b'def main(): pass' + bytes([10]))},17\n"
        f"../../../bin/tool,{_digest(SCRIPT)},{len(SCRIPT)}\n"
        "tool/__pycache__/cli.cpython-311.pyc,,\n"
        "tool-1.0.dist-info/RECORD,,\n")
    return prefix, site


def _locations(site: Path, *, repo: Path | None = None, stdlib: tuple[Path, ...] = ()) -> Locations:
    installed = InstalledIndex.of([metadata.PathDistribution(path) for path in site.glob("*.dist-info")])
    return Locations(repo=repo, stdlib=stdlib, site=(site,), prefixes=(site.parents[2],), installed=installed)


def test_a_console_script_listed_in_record_belongs_to_its_distribution(tmp_path: Path) -> None:
    prefix, site = _venv(tmp_path)
    where = _locations(site)
    assert where.owner(str(prefix / "bin" / "tool")) == Owner("distribution", "tool")
    assert where.owner(str(site / "tool" / "cli.py")) == Owner("distribution", "tool")
    main = types.SimpleNamespace(__file__=str(prefix / "bin" / "tool"))
    assert foreign_modules({"__main__": main, "__mp_main__": main}, where) == {}


def test_an_edited_console_script_or_module_is_foreign_and_names_its_distribution(tmp_path: Path) -> None:
    prefix, site = _venv(tmp_path)
    (prefix / "bin" / "tool").write_bytes(SCRIPT + b"import evil\n")
    (site / "tool" / "cli.py").write_text("def main(): return 'patched'\n")
    modules = {"__main__": types.SimpleNamespace(__file__=str(prefix / "bin" / "tool")),
               "tool.cli": types.SimpleNamespace(__file__=str(site / "tool" / "cli.py"))}
    found = foreign_modules(modules, _locations(site))
    assert found == {
        "__main__": {"path": "<prefix>/bin/tool", "cause": "edited", "distribution": "tool"},
        "tool.cli": {"path": "<site-packages>/tool/cli.py", "cause": "edited", "distribution": "tool"}}
    reasons = run_provenance_reasons({**CLEAN_RUN_PROVENANCE,
                                      "foreign_modules": {name: fact["path"] for name, fact in found.items()},
                                      "foreign_causes": {name: {"cause": fact["cause"],
                                                                "distribution": fact["distribution"]}
                                                         for name, fact in found.items()}})
    assert reasons == [
        "installed files that no longer hash as their distribution's RECORD says (edited after installing): "
        "__main__ (<prefix>/bin/tool, of tool), tool.cli (<site-packages>/tool/cli.py, of tool); "
        "reinstall: pip install --force-reinstall --no-deps tool"]


def test_a_file_record_lists_without_a_hash_cannot_be_vouched_for(tmp_path: Path) -> None:
    _, site = _venv(tmp_path)
    pyc = site / "tool" / "__pycache__" / "cli.cpython-311.pyc"
    pyc.parent.mkdir()
    pyc.write_bytes(b"\0")
    assert _locations(site).owner(str(pyc)) == Owner("foreign", "tool", "unhashed")


def test_the_standard_library_as_named_belongs_to_the_interpreter_links_included(tmp_path: Path) -> None:
    """Debian: /usr/lib/python3.X/sitecustomize.py links to /etc/python3.X/sitecustomize.py."""
    _, site = _venv(tmp_path)
    stdlib = tmp_path / "usr" / "lib" / "python3.11"
    etc = tmp_path / "etc" / "python3.11"
    stdlib.mkdir(parents=True)
    etc.mkdir(parents=True)
    (etc / "sitecustomize.py").write_text("import apport_python_hook\n")
    (stdlib / "sitecustomize.py").symlink_to(etc / "sitecustomize.py")
    (stdlib / "json.py").write_text("")
    where = _locations(site, stdlib=(stdlib,))
    modules = {"sitecustomize": types.SimpleNamespace(__file__=str(stdlib / "sitecustomize.py")),
               "json": types.SimpleNamespace(__file__=str(stdlib / "json.py"))}
    assert foreign_modules(modules, where) == {}
    [startup] = startup_files(modules, where, [str(site), str(stdlib)])
    assert (startup["path"], startup["owner"], startup["executes"]) == (
        "<stdlib>/sitecustomize.py", "interpreter", True)
    assert run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "startup_files": [startup]}) == []
    [linked] = interpreter_identity(modules, where)["linked"]
    assert linked == {"path": "<stdlib>/sitecustomize.py", "target": (etc / "sitecustomize.py").as_posix(),
                      "sha256": hashlib.sha256(b"import apport_python_hook\n").hexdigest()}
    # the file it links to, imported by its own name, is nobody's
    outside = {"sitecustomize": types.SimpleNamespace(__file__=str(etc / "sitecustomize.py"))}
    assert foreign_modules(outside, where)["sitecustomize"]["cause"] == "outside"


def test_a_site_directory_under_the_standard_library_is_not_the_interpreters(tmp_path: Path) -> None:
    stdlib = tmp_path / "lib" / "python3.11"
    (stdlib / "site-packages").mkdir(parents=True)
    (stdlib / "site-packages" / "planted.py").write_text("")
    where = Locations(repo=None, stdlib=(stdlib,), site=(), prefixes=(), installed=InstalledIndex({}))
    assert where.owner(str(stdlib / "site-packages" / "planted.py")).cause == "outside"


def test_a_module_in_a_zip_or_without_a_file_is_foreign(tmp_path: Path) -> None:
    archive = tmp_path / "hidden.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("hidden.py", "X = 1\n")
    where = Locations(repo=tmp_path, stdlib=(), site=(), prefixes=(), installed=InstalledIndex({}))
    zipped = types.SimpleNamespace(__file__=str(archive / "hidden.py"))
    made = types.ModuleType("made_at_run_time")
    exec("def patched_judge(*args):\n    return []\n", made.__dict__)
    assert module_owner("hidden", zipped, where) == Owner("foreign", cause="not-a-file")
    assert module_owner("made_at_run_time", made, where) == Owner("foreign", cause="no-file")
    assert module_owner("__main__", types.ModuleType("__main__"), where) == Owner("foreign", cause="no-file")
    (tmp_path / "maker.py").write_text("")
    exec(compile("def helper():\n    pass\n", str(tmp_path / "maker.py"), "exec"), made.__dict__)
    assert module_owner("made_at_run_time", made, where) == Owner("foreign", cause="no-file")
    compiled = types.ModuleType("compiled_from_a_file")
    exec(compile("def helper():\n    pass\n", str(tmp_path / "maker.py"), "exec"), compiled.__dict__)
    assert module_owner("compiled_from_a_file", compiled, where) == Owner("repository")
    # no Python code of its own: a namespace package, a module an extension or a package made at
    # run time holding only classes and values (typing.io, cryptography's _openssl)
    assert module_owner("_openssl", types.ModuleType("_openssl"), where) is None
    assert module_owner("typing.io", types.ModuleType("typing.io"), where) is None
    namespace = types.ModuleType("ns")
    namespace.__spec__ = types.SimpleNamespace(origin=None, loader=__import__("importlib").machinery
                                               .NamespaceLoader("ns", [], None))  # type: ignore[assignment]
    assert module_owner("ns", namespace, where) is None
    assert module_owner("sys", sys, where) == Owner("interpreter")
    frozen = types.ModuleType("payload")
    frozen.__spec__ = types.SimpleNamespace(origin="frozen", loader=None)  # type: ignore[assignment]
    assert module_owner("payload", frozen, where) == Owner("foreign", cause="frozen")
    assert module_owner("codecs", frozen, where) == Owner("interpreter")


def test_a_repository_file_is_the_repositorys_and_a_venv_inside_it_is_still_checked(tmp_path: Path) -> None:
    repo = tmp_path
    prefix, site = _venv(tmp_path)
    (repo / "helpers.py").write_text("")
    (site / "unlisted.py").write_text("")
    where = _locations(site, repo=repo)
    assert where.owner(str(repo / "helpers.py")) == Owner("repository")
    assert where.owner(str(site / "unlisted.py")) == Owner("foreign", cause="unrecorded")
    assert where.owner(str(prefix / "bin" / "tool")) == Owner("distribution", "tool")


def test_the_import_watcher_keeps_a_module_that_removed_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "vanishing_plugin.py").write_text(
        "import sys\n\ndef pytest_configure(config):\n    del sys.modules[__name__]\n")
    (tmp_path / "loaded_by_importlib.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    watch = ImportWatch()
    sys.addaudithook(watch)  # stays for the process; this instance is dropped with the test
    mark = watch.mark()
    __import__("vanishing_plugin").pytest_configure(None)
    importlib.import_module("loaded_by_importlib")  # raises no import event, only exec
    del sys.modules["loaded_by_importlib"]
    assert "vanishing_plugin" not in sys.modules
    watched, files = watch.since(mark)
    assert dict(watched)["vanishing_plugin"].__file__ == str(tmp_path / "vanishing_plugin.py")
    assert files[-2:] == [str(tmp_path / "vanishing_plugin.py"), str(tmp_path / "loaded_by_importlib.py")]
    modules = run_modules(sys.modules, watched, files, [], [])
    where = Locations(repo=None, stdlib=(), site=(), prefixes=(), installed=InstalledIndex({}))
    mine = {name: module for name, module in modules.items() if name.startswith(("vanishing", "loaded_by"))}
    assert foreign_modules(mine, where) == {
        "vanishing_plugin (removed)": {"path": (tmp_path / "vanishing_plugin.py").as_posix(),
                                       "cause": "outside", "distribution": None},
        "loaded_by_importlib (executed)": {"path": (tmp_path / "loaded_by_importlib.py").as_posix(),
                                           "cause": "outside", "distribution": None}}
    # a failed import leaves nothing behind (no code of it ran)
    with pytest.raises(ModuleNotFoundError):
        __import__("no_such_module_anywhere")
    assert "no_such_module_anywhere" not in dict(watch.since(mark)[0])
    assert watch.mark().modules == len(watch.seen)  # later runs start from here


def test_run_modules_adds_replaced_modules_registered_plugins_and_p_names_found_on_sys_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "gone_plugin.py").write_text("")
    (tmp_path / "ran.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    first, second, registered = (types.ModuleType(name) for name in ("json", "json", "unlisted"))
    modules = run_modules({"json": second, "missing": None}, [("json", first), ("json", second)],
                          [str(tmp_path / "ran.py")], [registered, object()], ["gone_plugin", "json"])
    assert modules["json"] is second and modules["json (replaced)"] is first
    assert modules["unlisted (removed)"] is registered and "missing" not in modules
    assert modules["ran (executed)"].__file__ == str(tmp_path / "ran.py")  # type: ignore[attr-defined]
    gone = modules["gone_plugin (not imported now)"]
    assert gone.__file__ == str(tmp_path / "gone_plugin.py")  # type: ignore[attr-defined]
    # a dotted -p name ran its package's __init__ too: both are found without importing them
    (tmp_path / "gone_pkg").mkdir()
    (tmp_path / "gone_pkg" / "__init__.py").write_text("raise RuntimeError('imported again')\n")
    (tmp_path / "gone_pkg" / "plugin.py").write_text("")
    dotted = run_modules({}, [], [], [], ["gone_pkg.plugin", "gone_pkg.absent"])
    assert {name: getattr(module, "__file__", None) for name, module in dotted.items()} == {
        "gone_pkg (not imported now)": str(tmp_path / "gone_pkg" / "__init__.py"),
        "gone_pkg.plugin (not imported now)": str(tmp_path / "gone_pkg" / "plugin.py")}
    bootstrap = types.ModuleType("__main__")
    worker = run_modules({"__main__": bootstrap, "__mp_main__": bootstrap}, [], [], [], [], worker=True)
    assert "__main__" not in worker and "__mp_main__" not in worker
    alone = run_modules({"__main__": bootstrap, "__mp_main__": bootstrap}, [], [], [], [])
    assert alone["__main__"] is bootstrap and alone["__mp_main__"] is bootstrap  # python -c stays foreign
    other = types.ModuleType("__mp_main__")
    assert run_modules({"__main__": bootstrap, "__mp_main__": other}, [], [], [], [],
                       worker=True) == {"__mp_main__": other}


def test_a_run_nested_in_an_xdist_worker_is_on_an_xdist_worker_and_a_later_run_cannot_claim_one() -> None:
    worker_process = ImportWatch()
    assert worker_process.mark(xdist_worker=True).xdist_process
    assert worker_process.mark().xdist_process  # pytester's in-process run inside the worker
    plain_process = ImportWatch()
    assert not plain_process.mark().xdist_process
    assert not plain_process.mark(xdist_worker=True).xdist_process


def test_plugin_names_come_from_p_options_addopts_and_pytest_plugins() -> None:
    environ = {"PYTEST_ADDOPTS": "-p  from_addopts -q", "PYTEST_PLUGINS": "one, two"}
    assert option_plugin_names(["-p", "spaced", "-pjoined", "-p", "no:cacheprovider", "tests"], environ) == [
        "one", "two", "spaced", "joined", "from_addopts"]


def test_pythonpath_entries_outside_the_repository_and_installation_are_judged(tmp_path: Path) -> None:
    _, site = _venv(tmp_path / "install")
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    where = _locations(site, repo=repo)
    environ = {"PYTHONPATH": f"{repo / 'src'}:{tmp_path / 'elsewhere'}:{site}"}
    outside = pythonpath_outside(environ, where)
    assert outside == [(tmp_path / "elsewhere").as_posix()]
    assert run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "pythonpath_outside": outside}) == [
        f"PYTHONPATH entries outside the repository and the Python installation: {outside[0]}; "
        "unset PYTHONPATH, or install what it provides"]


def test_each_cause_gets_its_own_line_with_what_to_do() -> None:
    foreign = {"a": "/x/a.py", "b": "/x/b.zip/b.py", "c": "<no file>", "d": "<site-packages>/d.py"}
    kinds = {"a": "outside", "b": "not-a-file", "c": "no-file", "d": "unrecorded"}
    causes = {name: {"cause": cause, "distribution": None} for name, cause in kinds.items()}
    reasons = run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "foreign_modules": foreign,
                                      "foreign_causes": causes})
    assert reasons == [
        "modules imported from outside the repository and every installed distribution: a (/x/a.py); "
        "install them as a distribution, or commit them to the repository",
        "modules in site-packages that no installed distribution's RECORD lists: d (<site-packages>/d.py); "
        "reinstall the distribution they belong to, or delete them",
        "modules imported from something other than a regular file (a zip archive, say): b (/x/b.zip/b.py); "
        "install them as a distribution, or commit them to the repository",
        "modules with no file (made at run time, as python -c does): c (<no file>); "
        "run pytest through its console script or python -m pytest"]


def test_a_file_is_found_in_any_distributions_record_whatever_its_name(tmp_path: Path) -> None:
    """RECORDs are searched most likely owner first, but an owner whose name says nothing
    (PyYAML owns yaml/, setuptools owns distutils-precedence.pth) is still found."""
    site = tmp_path / "site-packages"
    owners = {f"dist{number}": f"pkg{number}/mod.py" for number in range(8)}
    owners["unrelated"] = "yaml/__init__.py"
    for name, relative in owners.items():
        (site / relative).parent.mkdir(parents=True, exist_ok=True)
        (site / relative).write_bytes(b"")
        info = site / f"{name}-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        padding = "".join(f"{name}/data/{index}.txt,,\n" for index in range(50 if name == "unrelated" else 1))
        (info / "RECORD").write_text(f"{relative},{_digest(b'')},0\n{padding}")
    where = _locations(site)
    assert where.owner(str(site / "yaml" / "__init__.py")) == Owner("distribution", "unrelated")
    assert where.owner(str(site / "pkg3" / "mod.py")) == Owner("distribution", "dist3")


VENV_TOOL_PTH = b"import _virtualenv"
"""What virtualenv and uv write into ``_virtualenv.pth``, byte for byte."""


def _venv_tool_site(tmp_path: Path, module: bytes, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Locations]:
    """A venv whose maker wrote ``_virtualenv.py`` (``module``, made a known release's content) and
    its ``.pth``."""
    known = VENV_TOOL_FILES["_virtualenv.py"]
    monkeypatch.setitem(known, hashlib.sha256(module).hexdigest(), "a test's tool")
    _, site = _venv(tmp_path)
    (site / "_virtualenv.pth").write_bytes(VENV_TOOL_PTH)
    (site / "_virtualenv.py").write_bytes(module)
    return site, _locations(site)


def test_the_pth_a_venv_tool_writes_is_known_by_its_real_content() -> None:
    assert set(VENV_TOOL_FILES["_virtualenv.pth"]) == {hashlib.sha256(VENV_TOOL_PTH).hexdigest()}


def test_the_files_a_venv_tool_writes_belong_to_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site, where = _venv_tool_site(tmp_path, b"def patch(): pass\n", monkeypatch)
    assert where.owner(str(site / "_virtualenv.py")) == Owner("environment")
    assert where.owner(str(site / "_virtualenv.pth")) == Owner("environment")
    assert [record.data for record in where.installed._records] == [None]  # no RECORD read for them
    files = startup_files({}, where, [str(site)])
    assert [(fact["path"], fact["owner"], fact["executes"]) for fact in files] == [
        ("<site-packages>/_virtualenv.pth", "environment", True)]
    assert run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "startup_files": files}) == []


@pytest.mark.parametrize("place", ["edited", "renamed", "nested", "pth-that-runs-more"])
def test_a_venv_tools_file_edited_renamed_or_moved_is_foreign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, place: str
) -> None:
    module = b"def patch(): pass\n"
    site, where = _venv_tool_site(tmp_path, module, monkeypatch)
    target = {"edited": site / "_virtualenv.py", "renamed": site / "sitecustomize.py",
              "nested": site / "tool" / "_virtualenv.py",
              "pth-that-runs-more": site / "_virtualenv.pth"}[place]
    target.write_bytes(VENV_TOOL_PTH + b"\nimport tool.cli" if place == "pth-that-runs-more" else
                       module + (b"import os\n" if place == "edited" else b""))
    assert where.owner(str(target)) == Owner("foreign", cause="unrecorded")


@pytest.mark.parametrize(("path", "sha256"), [
    ("<site-packages>/_virtualenv.pth", "0" * 64),
    ("<repo>/_virtualenv.pth", hashlib.sha256(VENV_TOOL_PTH).hexdigest()),
    ("<site-packages>/evil.pth", hashlib.sha256(VENV_TOOL_PTH).hexdigest()),
], ids=["unknown-content", "in-the-repository", "another-name"])
def test_the_judge_checks_a_recorded_environment_claim_itself(path: str, sha256: str) -> None:
    claimed = {"path": path, "sha256": sha256, "distribution": None, "owner": "environment", "executes": True}
    reasons = run_provenance_reasons({**CLEAN_RUN_PROVENANCE, "startup_files": [claimed]})
    assert reasons[0] == (f"start-up files that run code and belong to no installed distribution nor the "
                          f"interpreter: {path}; remove them, or install what they belong to")
    remake = ("the venv's _virtualenv files hold a content no known virtualenv or uv release wrote: "
              "make the venv again with python -m venv or uv 0.13 or later, which write none")
    assert reasons[1:] == ([remake] if path.endswith("/_virtualenv.pth") else [])


def _module_object(name: str, defined_in: str | None, monkeypatch: pytest.MonkeyPatch) -> types.ModuleType:
    """What PyTorch puts in ``sys.modules`` as ``torch.classes``: an instance of a ``ModuleType``
    subclass whose ``__file__`` is relative, its class defined in the module ``name``."""
    defining = types.ModuleType(name)
    if defined_in is not None:
        defining.__file__ = defined_in
    monkeypatch.setitem(sys.modules, name, defining)
    classes = type("_Classes", (types.ModuleType,), {"__module__": name, "__file__": "_classes.py"})
    return classes("tool.classes")


def test_a_module_object_with_a_relative_file_is_its_classs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, site = _venv(tmp_path)
    where = _locations(site)
    honest = _module_object("tool.cli", str(site / "tool" / "cli.py"), monkeypatch)
    assert module_owner("tool.classes", honest, where) == Owner("distribution", "tool")
    (tmp_path / "elsewhere.py").write_text("")
    outside = _module_object("elsewhere", str(tmp_path / "elsewhere.py"), monkeypatch)
    assert module_owner("tool.classes", outside, where) == Owner("foreign", cause="outside")
    nowhere = _module_object("made_at_run_time", None, monkeypatch)
    assert module_owner("tool.classes", nowhere, where) == Owner("foreign", cause="no-file")
    exec("def patched_judge(*args):\n    return []\n", honest.__dict__)
    assert module_owner("tool.classes", honest, where) == Owner("foreign", cause="no-file")
    plain = types.ModuleType("plain")
    plain.__file__ = "_classes.py"
    assert module_owner("plain", plain, where) == Owner("foreign", cause="not-a-file")
