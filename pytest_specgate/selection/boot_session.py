"""The host's boot session: read at the start and at the end of a run, so a reboot (or a kernel
panic that rebooted the machine) during an 8 GB canary cannot pass unnoticed.

Linux names each boot with a random UUID (``/proc/sys/kernel/random/boot_id``); macOS gives the
boot time (``sysctl -n kern.boottime``). Anything else, or a read that fails, is None: unknown,
which the policy never takes for "no reboot" when the other end of the run is known.
"""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Callable
from pathlib import Path

LINUX_BOOT_ID = Path("/proc/sys/kernel/random/boot_id")
SYSCTL = "/usr/sbin/sysctl"


def _macos_boottime() -> str | None:
    try:
        done = subprocess.run([SYSCTL, "-n", "kern.boottime"], capture_output=True, text=True,
                              timeout=5, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def _linux_boot_id() -> str | None:
    try:
        return LINUX_BOOT_ID.read_text(encoding="ascii").strip() or None
    except OSError:
        return None


def boot_session_id(
    system: str | None = None,
    readers: dict[str, Callable[[], str | None]] | None = None,
) -> str | None:
    """This boot's identity on Linux and macOS, else None."""
    chosen = readers if readers is not None else {"Linux": _linux_boot_id, "Darwin": _macos_boottime}
    reader = chosen.get(system or platform.system())
    return None if reader is None else reader()
