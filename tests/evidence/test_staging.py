"""No staging folder outlives its run: a failed write removes its own, the next run removes those of
runs that died (SIGKILL, SIGTERM, a killed xdist worker, pytest-timeout), a live run's is kept,
and a full disk ends with the evidence folder as it was before the run."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_specgate.evidence._staging import (
    CLAIM_GRACE_S,
    LOCK_SUFFIX,
    claim_staging,
    sweep_stale_staging,
)

ATTACHING_SPEC = """
import os, signal, time
import pytest

@pytest.mark.ac("AC-1", spec="SPEC-028", title="attaches, then STOP")
def test_attach(evidence):
    evidence.attach("server.log", "ready\\n")
    evidence.note("filler", "y" * int(os.environ.get("NOTE_BYTES", "0")))
    stop = os.environ.get("STOP", "")
    if stop == "sigkill":
        os.kill(os.getpid(), signal.SIGKILL)
    elif stop == "sigterm":
        os.kill(os.getpid(), signal.SIGTERM)
    elif stop == "worker-kill" and os.environ.get("PYTEST_XDIST_WORKER"):
        os.kill(os.getpid(), signal.SIGKILL)
    elif stop == "timeout":
        time.sleep(60)
"""
STOPS = {
    "sigkill": (),
    "sigterm": (),
    "worker-kill": ("-n", "1"),
    "timeout": ("--timeout=2", "--timeout-method=thread"),
}
LEFT_BEHIND = {"sigkill", "timeout"}
"""Stops that skip every cleanup; on SIGTERM the plugin tears down as on Ctrl-C, and after a
worker's kill the controller lives on: both remove their own staging folder at the end."""
RUN_TIMEOUT_S = 120


def _tree(folder: Path) -> dict[str, bytes | None]:
    """Every path under ``folder`` with its bytes (None for a folder): what "as before" compares."""
    if not folder.exists():
        return {}
    return {
        path.relative_to(folder).as_posix(): None if path.is_dir() else path.read_bytes()
        for path in sorted(folder.rglob("*"))
    }


def _dead_run(root: Path, run_id: str, *, with_lock: bool = True) -> None:
    """What a killed run leaves: its folder with a staged file, and its lock file nobody holds."""
    (root / run_id).mkdir(parents=True)
    (root / run_id / "0123abcd").write_bytes(b"staged")
    if with_lock:
        (root / f"{run_id}{LOCK_SUFFIX}").write_bytes(b"")


def test_a_sweep_removes_what_dead_runs_left_and_keeps_a_live_run(tmp_path: Path) -> None:
    root = tmp_path / ".staging"
    live = claim_staging(root, "live")
    _dead_run(root, "killed")
    _dead_run(root, "from-before-locks", with_lock=False)
    young = root / f"claimer.0001{'.claiming'}"
    old = root / f"claimer.0002{'.claiming'}"
    young.write_bytes(b"")
    old.write_bytes(b"")
    os.utime(old, (time.time() - 2 * CLAIM_GRACE_S,) * 2)

    removed = sweep_stale_staging(root)

    assert removed == ["claimer.0002.claiming", "from-before-locks", "killed.lock"]
    assert sorted(path.name for path in root.iterdir()) == ["claimer.0001.claiming", "live", "live.lock"]
    young.unlink()
    live.release()
    assert not root.exists()


def test_a_lock_held_by_another_live_process_keeps_its_folder_until_that_process_dies(tmp_path: Path) -> None:
    """The kernel, not a PID, says who is alive: the lock goes with the process however it ends."""
    root = tmp_path / ".staging"
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys; from pathlib import Path; from pytest_specgate.evidence._staging import claim_staging; "
         f"claim_staging(Path({str(root)!r}), 'other'); print('held', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        assert sweep_stale_staging(root) == []
        assert (root / "other").is_dir()
    finally:
        holder.kill()
        holder.wait(timeout=30)
    assert sweep_stale_staging(root) == ["other.lock"]
    assert list(root.iterdir()) == []


def _commit(repo: Path) -> None:
    (repo / ".gitignore").write_text("__pycache__/\n.pytest_cache/\nout/\n")
    for arguments in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "specs"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *arguments],
            cwd=repo, check=True, capture_output=True,
        )


def _run(project: Path, *options: str, stop: str = "", note_bytes: int = 0,
         evidence: Path | None = None) -> subprocess.CompletedProcess[str]:
    environment = {**os.environ, "STOP": stop, "NOTE_BYTES": str(note_bytes)}
    environment.pop("PYTEST_ADDOPTS", None)
    target = evidence if evidence is not None else project / "out"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", f"--specgate-evidence={target}",
         *options],
        cwd=project, env=environment, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, check=False,
    )


@pytest.mark.parametrize("stop", sorted(STOPS))
def test_no_staging_folder_survives_the_next_run_after_a_kill(pytester: pytest.Pytester, stop: str) -> None:
    pytester.makepyfile(test_specs=ATTACHING_SPEC)
    _commit(pytester.path)
    staging = pytester.path / "out" / ".staging"

    killed = _run(pytester.path, *STOPS[stop], stop=stop)

    assert killed.returncode != 0, killed.stdout
    if stop in LEFT_BEHIND:
        assert [path.name for path in staging.iterdir() if path.is_dir()], killed.stdout
    following = _run(pytester.path)
    assert following.returncode == 0, following.stdout + following.stderr
    assert not staging.exists(), sorted(path.name for path in staging.iterdir())


def test_a_disk_full_write_leaves_the_evidence_folder_as_it_was(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ENOSPC injected where the writer writes every bundle file but the manifest's temp file."""
    import pytest_specgate.evidence._writer as writer_module

    def disk_full(*_args: object) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    pytester.makepyfile(test_specs=ATTACHING_SPEC)
    _commit(pytester.path)
    out = pytester.path / "out"
    (out / "20261201T000000Z-abcdef").mkdir(parents=True)
    (out / "20261201T000000Z-abcdef" / "receipt.json").write_text("{}\n")
    before = _tree(out)
    monkeypatch.setattr(writer_module, "write_unlisted", disk_full)

    result = pytester.runpytest("--specgate-evidence=out", "-p", "no:cacheprovider")

    result.stdout.fnmatch_lines(["*specgate evidence: NOT WRITTEN: *No space left on device*"])
    assert _tree(out) == before


def _mount_tmpfs(folder: Path, size: str) -> bool:
    folder.mkdir()
    if os.geteuid() != 0:
        return False
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                             capture_output=True, check=False)
    return mounted.returncode == 0


def test_a_real_full_disk_ends_with_the_folder_as_before(pytester: pytest.Pytester) -> None:
    """A 128 KiB tmpfs (root only): receipt, journal and staged attachment fit, the AC record
    carrying a 200 KB note does not."""
    pytester.makepyfile(test_specs=ATTACHING_SPEC)
    _commit(pytester.path)
    disk = pytester.path / "small-disk"
    if not _mount_tmpfs(disk, "128k"):
        pytest.skip("mounting a tmpfs needs root and CAP_SYS_ADMIN")
    try:
        out = disk / "out"
        out.mkdir()
        (out / "kept.txt").write_text("an earlier file\n")
        before = _tree(out)
        result = _run(pytester.path, note_bytes=200_000, evidence=out)
        assert "NOT WRITTEN" in result.stdout and "No space left on device" in result.stdout, result.stdout
        assert _tree(out) == before
        assert os.statvfs(disk).f_bfree * os.statvfs(disk).f_frsize > 100_000
    finally:
        subprocess.run(["umount", str(disk)], check=False)
