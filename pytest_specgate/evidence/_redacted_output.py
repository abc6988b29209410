"""What specgate prints passes the same redactor as what it writes to disk.

Evidence files were redacted; the terminal and the ``specgate`` command's output were not: an
engine error naming ``http://svc:PASS@host``, or a gate quoting a record, went to the CI log as
it was. Here a text stream redacts whole lines on their way out, and the GitHub Actions
``::add-mask::`` commands that keep known values out of the rest of a CI log are written past
it (a mask command redacted would mask nothing).
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterable, Mapping
from typing import TextIO

from pytest_specgate.evidence._known_secrets import github_mask_commands


class RedactedLines(io.TextIOBase):
    """A text stream writing to ``target`` every line as ``redact`` returns it.

    A line is held until its end arrives (a secret split over two writes is still one line);
    :meth:`flush` writes what is held, redacted, so a prompt without a line end is not kept
    back. ``redact`` is asked for only when text arrives, so a command that prints nothing
    builds no redactor."""

    def __init__(self, target: TextIO, redact: Callable[[], Callable[[str], str]]) -> None:
        super().__init__()
        self._target = target
        self._redact_factory = redact
        self._redact: Callable[[str], str] | None = None
        self._held = ""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._target, "encoding", None) or "utf-8"

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self._target.isatty()

    def fileno(self) -> int:
        return self._target.fileno()

    def write(self, text: str, /) -> int:
        held = self._held + text
        cut = held.rfind("\n") + 1
        self._held = held[cut:]
        if cut:
            self._target.write(self._redacted(held[:cut]))
        return len(text)

    def write_cleared(self, text: str) -> int:
        """Write ``text`` without the line pass: output the command built only from strings this
        host's redactor read already and left as they were (``records_read_clean``) and words of
        specgate's own. Only whole lines pass so: a line begun by :meth:`write` is redacted whole,
        this text with it, and a last line without its end is held for :meth:`write` to finish."""
        if self._held:
            return self.write(text)
        cut = text.rfind("\n") + 1
        self._held = text[cut:]
        if cut:
            self._target.write(text[:cut])
        return len(text)

    def flush(self) -> None:
        if self._held:
            held, self._held = self._held, ""
            self._target.write(self._redacted(held))
        self._target.flush()

    def _redacted(self, text: str) -> str:
        """``text`` redacted line by line, a line ending at ``\n`` only: the rules' patterns know
        no other line break, so a value holding a ``\r``, ``\x0c``, ``\x1c`` or ``\u2028`` (which
        ``str.splitlines`` breaks at) is read whole, as the evidence files read it."""
        if self._redact is None:
            self._redact = self._redact_factory()
        return "\n".join(map(self._redact, text.split("\n")))


def write_cleared(stream: TextIO, text: str) -> None:
    """``text`` to ``stream`` without a second redaction pass where ``stream`` redacts lines
    (:meth:`RedactedLines.write_cleared` says what may pass so); elsewhere a plain write."""
    if isinstance(stream, RedactedLines):
        stream.write_cleared(text)
    else:
        stream.write(text)


def write_mask_commands(target: TextIO, values: Iterable[str], environ: Mapping[str, str],
                        end_line: Callable[[], None] | None = None) -> int:
    """Write ``::add-mask::`` for each value to ``target`` under GitHub Actions; how many.
    ``end_line`` ends a terminal line in progress first: the runner reads a workflow command
    only at the start of a line."""
    commands = github_mask_commands(values, environ)
    if commands and end_line is not None:
        end_line()
    for command in commands:
        target.write(command + "\n")
    if commands:
        target.flush()
    return len(commands)


def redact_writes(writer: object, redact: Callable[[], Callable[[str], str]]) -> None:
    """Make ``writer`` (pytest's terminal writer) redact every text it is asked to write, before
    its markup is added: pytest's own lines (failures, ``-l`` locals, skip reasons, test ids in
    the summary) and specgate's. ``redact`` is built at the first write."""
    original = writer.write  # type: ignore[attr-defined]
    built: list[Callable[[str], str]] = []

    def write(msg: str, *, flush: bool = False, **markup: bool) -> None:
        if msg and not built:
            built.append(redact())
        original(built[0](msg) if msg else msg, flush=flush, **markup)

    writer.write = write  # type: ignore[attr-defined]
