"""The one way specgate opens a file someone else wrote: bundle files, host facts, event payloads.

A bundle is written by the person who wants the merge, so each of its files may be a symlink
out of the bundle, a FIFO that never ends, a device that never stops (``/dev/zero``) or a file
of hundreds of megabytes. Every reader therefore opens with ``O_NOFOLLOW | O_NONBLOCK`` (a
symlink fails to open; a FIFO opens at once instead of waiting for a writer), refuses anything
``fstat`` does not call a regular file, and reads at most a documented number of bytes. Each
refusal is an :class:`~pytest_specgate.contracts.errors.SpecgateInputError` whose one line
names the file and what was wrong.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pytest_specgate.contracts.errors import SpecgateInputError

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "MAX_FILE_BYTES",
    "SafeReadError",
    "digest_regular_file",
    "read_regular_file",
]

MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
"""The most a JSON or text document (manifest, AC record, host facts, event payload, PR body,
``evidence.md``) may hold: about 30 times the largest this project writes (a 1,000-AC bundle's
``evidence.md`` is under 1 MB), and small enough to parse in well under a gigabyte."""
MAX_FILE_BYTES = 1024 * 1024 * 1024
"""The most any bundle file may hold when it is only hashed or copied (attachments)."""
_CHUNK = 1024 * 1024
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


class SafeReadError(SpecgateInputError):
    """A file that is not a regular file, cannot be opened, or is larger than its reader allows."""


def _kind(mode: int) -> str:
    return next((name for test, name in _KINDS if test(mode)), "not a regular file")


def _refusal(path: Path, what: str, error: OSError) -> SafeReadError:
    """The one line for a failed open: a symlink and a socket are named as what they are."""
    if error.errno == errno.ENOENT:
        return SafeReadError(f"{path}: {what} not found")
    with_kind = None
    if error.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP):
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            mode = 0
        with_kind = "a symbolic link" if stat.S_ISLNK(mode) else _kind(mode) if mode else None
    if with_kind is not None:
        return SafeReadError(f"{path}: {what} is {with_kind}; expected a regular file")
    return SafeReadError(f"{path}: cannot read {what}: {error.strerror or error}")


@contextmanager
def _opened(path: Path, what: str, limit: int) -> Iterator[tuple[int, int]]:
    """A descriptor on ``path`` proven a regular file of at most ``limit`` bytes, and its size."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        descriptor = os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except OSError as error:
        raise _refusal(path, what, error) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):
            raise SafeReadError(f"{path}: {what} is {_kind(info.st_mode)}; expected a regular file")
        if info.st_size > limit:
            raise _too_large(path, what, limit, f"{info.st_size} bytes")
        yield descriptor, info.st_size
    finally:
        os.close(descriptor)


def _too_large(path: Path, what: str, limit: int, found: str) -> SafeReadError:
    return SafeReadError(f"{path}: {what} holds {found}; specgate reads at most {limit} bytes of it")


def _chunks(descriptor: int, path: Path, what: str, limit: int) -> Iterator[bytes]:
    """The file's bytes in chunks; one more byte than ``limit`` (a file still growing) refuses it."""
    read = 0
    while chunk := _read(descriptor, path, what):
        read += len(chunk)
        if read > limit:
            raise _too_large(path, what, limit, "more bytes than that")
        yield chunk


def _read(descriptor: int, path: Path, what: str) -> bytes:
    try:
        return os.read(descriptor, _CHUNK)
    except OSError as error:
        raise SafeReadError(f"{path}: cannot read {what}: {error.strerror or error}") from None


def read_regular_file(path: Path, what: str = "the file", *, limit: int = MAX_DOCUMENT_BYTES) -> bytes:
    """Every byte of the regular file ``path`` (never through a symlink), at most ``limit``."""
    with _opened(path, what, limit) as (descriptor, size):
        parts = list(_chunks(descriptor, path, what, limit))
    return parts[0] if len(parts) == 1 and len(parts[0]) == size else b"".join(parts)


def digest_regular_file(
    path: Path, what: str = "the file", *, limit: int = MAX_FILE_BYTES
) -> tuple[str, int]:
    """sha256 and size of the regular file ``path``, read in chunks (memory stays one chunk)."""
    digest = hashlib.sha256()
    size = 0
    with _opened(path, what, limit) as (descriptor, _):
        for chunk in _chunks(descriptor, path, what, limit):
            digest.update(chunk)
            size += len(chunk)
    return digest.hexdigest(), size
