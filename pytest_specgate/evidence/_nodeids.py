"""A test's node id redacted with its file part once per file, its test part once per test.

Every node id of a run is a new string, so redacting it whole takes the redactor's full pass
once per test even though a hundred tests share one file part. Split at the first ``::`` after
a ``.py`` file, the file part is met again and costs a memo lookup; the test part (class,
function and parametrize id, where a secret can hide) is still redacted whole, every time it is
new. Nothing is weakened: the split is made only where no rule can match across it, at the
``::`` after ``.py`` when a Python name follows (a keyword before it would be ``py``, a token
stops at ``.`` and ``:``, and ``://`` needs a ``/`` after the colons: ``tests/a.py:://u:p@h``
goes whole). A file part the redactor changes (a path under a home folder, an absolute path)
sends the whole node id through the full pass, as before, so a rule that reads a path on into
the test part still does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_specgate.evidence._redact import Redactor

__all__ = ["redacted_nodeid"]

_FILE_END = ".py::"
_NAME_START = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_")
"""What a class or function name begins with (ASCII only: anything else goes whole)."""


def redacted_nodeid(redactor: Redactor, nodeid: str) -> str:
    """``nodeid`` redacted: the same text wherever the run writes it (journal, records, census,
    selection), so completeness still matches node ids across them."""
    cut = nodeid.find(_FILE_END)
    test_part = nodeid[cut + 5 :]
    if cut < 0 or not test_part[:1] or test_part[0] not in _NAME_START:
        return redactor.text(nodeid)
    file_part = nodeid[: cut + 3]
    if redactor.text(file_part) != file_part:
        return redactor.text(nodeid)
    return file_part + "::" + redactor.text(test_part)
