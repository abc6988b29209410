"""A key and its value parted by an escaped line break or tab are still a key and a value.

pytest writes a parametrize value's line break as the two characters ``\\n`` in the node id
(``test_login[password:\\nHunter2Hunter2]``), and a JSON-escaped log line does the same. The
keyword rule took ``password=\\nVALUE`` but refused a colon before a backslash (kept for
``C:\\`` paths), so ``password:\\nVALUE`` and ``password:\\tVALUE`` stayed whole in every node id,
record and evidence.md line; decoding the escape first puts key and value on two lines, where
no line rule joins them. A colon before ``\\n``, ``\\r`` or ``\\t`` is an assignment now; before any
other backslash it is still none.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _pytest.compat import ascii_escaped

from pytest_specgate.evidence import build_redactor
from pytest_specgate.evidence._nodeids import NodeIdRedactor

VALUE = "Hunter2Hunter2"
REDACTOR = build_redactor(Path("/srv/repo"), (), {}, None)


@pytest.mark.parametrize("escape", ["\\n", "\\t", "\\r\\n"])
def test_a_value_after_an_escaped_break_is_redacted(escape: str) -> None:
    assert REDACTOR.text(f"db password:{escape}{VALUE}") == "db password:<SECRET>"


def test_a_parametrize_id_holding_a_line_break_keeps_no_value() -> None:
    nodeid = f"tests/test_login.py::test_login[{ascii_escaped('password:' + chr(10) + VALUE)}]"
    assert nodeid == f"tests/test_login.py::test_login[password:\\n{VALUE}]"
    assert NodeIdRedactor(REDACTOR)(nodeid) == "tests/test_login.py::test_login[password:<SECRET>]"


@pytest.mark.parametrize(
    "text", ["key_path:\\tmp\\cache", "password:\\\\server\\share", "token::\\n", "C:\\x"]
)
def test_a_colon_before_another_backslash_is_still_no_assignment(text: str) -> None:
    assert "<SECRET>" not in REDACTOR.text(text)
