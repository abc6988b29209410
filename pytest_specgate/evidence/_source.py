"""Source binding: the files a run imported must be the commit's files, byte for byte.

``git status`` alone can be talked out of a change (``--skip-worktree``, ``--assume-unchanged``,
an ignored ``conftest.py``, an evidence folder excluded from the check, a ``--rootdir`` at a clean
clone while the tests come from elsewhere). So the files the run actually imported are taken by
their real paths, each bound to the git repository that holds it, and compared with the recorded
commit by git blob hash: a file outside that repository, or missing from its HEAD, or hashing
differently, is changed.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BUNDLE_DIR_NAME",
    "IMPORTED_FILES_KEY",
    "SourceBinding",
    "bind_to_head",
    "git_top",
    "imported_source_files",
    "run_git",
    "tree_changes",
]

GIT_TIMEOUT_S = 30.0
IMPORTED_FILES_KEY = "specgate_imported_files"
"""``workeroutput`` key: the real paths of the project files an xdist worker imported."""
BUNDLE_DIR_NAME = re.compile(r"^\d{8}T\d{6}Z-[0-9a-f]{6}$|^\.staging$")
"""What the evidence writer creates inside an evidence folder: a run's bundle or the staging area."""


@dataclass(frozen=True)
class SourceBinding:
    """Imported files that are not HEAD's (repo-relative, or relative to the repo for outsiders)."""

    changed_files: tuple[str, ...]
    problem: str | None = None


def run_git(arguments: Sequence[str], cwd: Path, stdin: str | None = None) -> str:
    """``git ARGUMENTS`` in ``cwd``; a failure raises RuntimeError with git's own message."""
    completed = subprocess.run(["git", *arguments], cwd=cwd, capture_output=True, text=True,
                               input=stdin, timeout=GIT_TIMEOUT_S, check=False)
    if completed.returncode != 0:
        raise RuntimeError(completed.stderr.strip() or f"git {' '.join(arguments)} failed")
    return completed.stdout


def git_top(path: Path) -> Path | None:
    """The work tree holding ``path`` (a ``.git`` folder or file above it), without running git."""
    for directory in (path, *path.parents):
        if (directory / ".git").exists():
            return directory
    return None


def _is_within(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == root or root in path.parents for root in roots)


def imported_source_files(modules: Mapping[str, object], collected: Iterable[Path],
                          rootdir: Path) -> set[Path]:
    """Real paths of the project's files this process ran: collected test files and every imported
    module living under the rootdir or the work tree of the rootdir or of a collected file. ``modules``
    is what the run imported: a module later removed from ``sys.modules`` still counts (the import
    watcher's ``run_modules``).

    Third-party packages (site-packages, the standard library) live elsewhere and are left out.
    """
    files = {path.resolve() for path in collected}
    roots = {rootdir.resolve()}
    for anchor in (rootdir.resolve(), *files):
        top = git_top(anchor)
        roots.add(top if top is not None else anchor.parent)
    installed = _interpreter_dirs()
    installed_prefixes = tuple(f"{directory}{os.sep}" for directory in installed)
    for module in list(modules.values()):
        where = getattr(module, "__file__", None)
        if not isinstance(where, str) or not where.endswith(".py") or where.startswith(installed_prefixes):
            continue
        path = Path(where).resolve()
        if _is_within(path, roots) and not _is_within(path, installed):
            files.add(path)
    return {path for path in files if path.is_file()}


def _interpreter_dirs() -> set[Path]:
    """Where the standard library and installed packages live (a virtualenv inside the repo too)."""
    import site
    import sysconfig

    found = {sysconfig.get_paths().get(key) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    found.update(site.getsitepackages())
    found.add(site.getusersitepackages())
    return {Path(path).resolve() for path in found if path}


def _flagged_entries(listing: str) -> set[str]:
    """Paths ``git ls-files -v`` tags skip-worktree (``S``) or assume-unchanged (lower case)."""
    flagged = set()
    for entry in listing.split("\0"):
        if len(entry) > 2 and (entry[0] == "S" or entry[0].islower()):
            flagged.add(entry[2:])
    return flagged


def bind_to_head(files: Iterable[Path], top: Path) -> SourceBinding:
    """Compare ``files`` with HEAD of the work tree ``top`` by git blob hash (three git calls).

    Skip-worktree and assume-unchanged entries are hashed too, imported or not: git would
    otherwise report them clean whatever they hold.
    """
    top = top.resolve()
    changed: set[str] = set()
    inside: dict[str, Path] = {}
    for path in files:
        if git_top(path) == top:
            inside[path.relative_to(top).as_posix()] = path
        else:
            changed.add(os.path.relpath(path, top))
    try:
        head = _tree_blobs(run_git(["ls-tree", "-r", "-z", "--full-tree", "HEAD"], top))
        for flagged in _flagged_entries(run_git(["ls-files", "-v", "-z"], top)):
            if (top / flagged).is_file():
                inside.setdefault(flagged, top / flagged)
        names = sorted(inside)
        hashed = run_git(["hash-object", "--stdin-paths"], top, "".join(f"{n}\n" for n in names)).split()
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as error:
        return SourceBinding(tuple(sorted(changed | set(inside))),
                             problem=f"cannot compare imported files with HEAD: {error}")
    changed |= {name for name, blob in zip(names, hashed, strict=True) if head.get(name) != blob}
    return SourceBinding(tuple(sorted(changed)))


def _tree_blobs(listing: str) -> dict[str, str]:
    """``path -> blob sha`` from ``git ls-tree -r -z`` (``<mode> blob <sha>\\t<path>``)."""
    blobs = {}
    for entry in listing.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[1] == "blob":
            blobs[path] = fields[2]
    return blobs


def tree_changes(porcelain: str, top: Path, evidence_dir: Path | None) -> list[str]:
    """Entries of ``git status --porcelain -z --untracked-files=all`` that count as changes.

    Only what the evidence writer itself creates is left out: untracked files inside a run
    bundle or the staging area of the evidence folder. Tracked changes there still count, so an
    evidence folder at the repository root (``--specgate-evidence=.``) hides nothing.
    """
    changes = []
    entries = iter(porcelain.split("\0"))
    for entry in entries:
        if len(entry) < 4:
            continue
        status, path = entry[:2], entry[3:]
        if status[0] in "RC":
            next(entries, None)  # the rename's source path
        if status == "??" and _is_bundle_output(top / path, evidence_dir):
            continue
        changes.append(path)
    return changes


def _is_bundle_output(path: Path, evidence_dir: Path | None) -> bool:
    if evidence_dir is None:
        return False
    if path.is_symlink() and path.resolve() == evidence_dir.resolve():
        return True  # an untracked link to the evidence folder is how the user spelled it
    try:
        relative = path.resolve().relative_to(evidence_dir.resolve())
    except ValueError:
        return False
    return bool(relative.parts) and BUNDLE_DIR_NAME.match(relative.parts[0]) is not None
