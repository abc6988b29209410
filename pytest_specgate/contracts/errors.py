"""The one error type for input a user handed in and the plugin or the CLI cannot use.

Every reader of outside input (options, markers, files, host facts, gate
arguments) raises a :class:`SpecgateInputError` or a subclass named for its
reader; the plugin turns it into a ``pytest.UsageError`` at configure and
collection time in one place (``plugin.input_errors_stop_the_run``; inside a
test it is that test's error), the CLI into one line on stderr and exit 2 in
``cli.main``. It carries where the input came from, what was expected and what
was found, so the message is never a traceback.
"""

from __future__ import annotations

from typing import Self

__all__ = ["SpecgateInputError"]


class SpecgateInputError(ValueError):
    """Input that cannot be used; ``str()`` is the one line a user sees.

    ``where`` names the field, marker, option or file, ``expected`` and ``found``
    what should have been there and what was; they are None when the reader wrote
    the message whole.
    """

    def __init__(
        self,
        message: str,
        *,
        where: str | None = None,
        expected: str | None = None,
        found: str | None = None,
    ) -> None:
        super().__init__(message)
        self.where = where
        self.expected = expected
        self.found = found

    @classmethod
    def mismatch(cls, where: str, expected: str, found: object) -> Self:
        """``<where>: expected <expected>, found <found!r>``."""
        shown = repr(found)
        message = f"{where}: expected {expected}, found {shown}"
        return cls(message, where=where, expected=expected, found=shown)
