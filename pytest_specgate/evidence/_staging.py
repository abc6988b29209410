"""Staging folders that outlive no run: each run holds an ``flock`` on its own lock file.

Attachments are staged under ``<evidence dir>/.staging/<run id>/`` before the bundle exists. A run
killed by SIGKILL, SIGTERM or pytest-timeout's ``os._exit`` never reaches the code that removes
its folder, so every run, when it starts, removes the folders of runs no longer alive. Which
those are, a lock file tells: ``.staging/<run id>.lock`` is held under ``flock`` for the whole run
and the kernel drops the lock when the process dies however it dies, so a reused PID or a
clock cannot fool it. The lock file is locked before it takes its name (a temp name, locked,
then renamed) and before the folder exists, so a folder without a lock file, or with a lock
nobody holds, belongs to no live run.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

LOCK_SUFFIX = ".lock"
_CLAIMING_SUFFIX = ".claiming"
"""A lock file locked but not yet renamed to its final name."""
CLAIM_GRACE_S = 60.0
"""How old an unheld claiming file must be before a sweep takes it for abandoned."""


@dataclass
class StagingLease:
    """This run's staging folder and the descriptor whose ``flock`` says the run is alive."""

    folder: Path
    lock_path: Path
    descriptor: int | None

    def release(self) -> None:
        """Remove the folder, then the lock (so no sweeper sees a folder without a held lock while
        it is being removed), and ``.staging`` itself once no other run uses it."""
        shutil.rmtree(self.folder, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            self.lock_path.unlink()
        if self.descriptor is not None:
            os.close(self.descriptor)
            self.descriptor = None
        with contextlib.suppress(OSError):
            self.folder.parent.rmdir()


def _try_lock(descriptor: int) -> bool:
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def claim_staging(root: Path, run_id: str) -> StagingLease:
    """Create and lock ``root/<run id>.lock``, then create ``root/<run id>/``; OSError if either fails."""
    root.mkdir(parents=True, exist_ok=True)
    claiming = root / f"{run_id}.{secrets.token_hex(4)}{_CLAIMING_SUFFIX}"
    descriptor = os.open(claiming, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
    lease = StagingLease(root / run_id, root / f"{run_id}{LOCK_SUFFIX}", descriptor)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        os.replace(claiming, lease.lock_path)
        lease.folder.mkdir()
    except BaseException:
        claiming.unlink(missing_ok=True)
        lease.release()
        raise
    return lease


def sweep_stale_staging(root: Path) -> list[str]:
    """Remove what runs no longer alive left under ``root``; the names removed, sorted.

    A lock file nobody holds goes with its folder (locked by this sweep while it removes them);
    a folder without a lock file goes on its own. A live run's lock refuses the sweep's
    ``flock``, so its files stay. Nothing that cannot be removed stops the run.
    """
    try:
        entries = sorted(root.iterdir())
    except OSError:
        return []
    removed: list[str] = []
    for entry in entries:
        if entry.name.endswith((LOCK_SUFFIX, _CLAIMING_SUFFIX)):
            if _remove_if_unheld(entry, root / entry.name.removesuffix(LOCK_SUFFIX)):
                removed.append(entry.name)
        elif _is_orphan(entry):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed


def _is_orphan(entry: Path) -> bool:
    """A folder whose lock file is gone. Asked of the file system now, not of the listing: a
    run's lock file exists before its folder and goes only after it."""
    lock = entry.parent / f"{entry.name}{LOCK_SUFFIX}"
    return not entry.is_symlink() and entry.is_dir() and not os.path.lexists(lock)


def _remove_if_unheld(lock_path: Path, folder: Path) -> bool:
    try:
        descriptor = os.open(lock_path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        # A claiming file is locked a moment after it is created: only an old one is abandoned.
        claiming = lock_path.name.endswith(_CLAIMING_SUFFIX)
        if claiming and time.time() - os.fstat(descriptor).st_mtime < CLAIM_GRACE_S:
            return False
        if not _try_lock(descriptor):
            return False
        if not claiming:
            shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(FileNotFoundError):
            lock_path.unlink()
        return True
    finally:
        os.close(descriptor)
