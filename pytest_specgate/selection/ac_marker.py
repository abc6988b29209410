"""The ``ac`` marker: which acceptance criterion a test is evidence for."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_specgate.contracts.acceptance import AC_ID_FORMS, AcceptanceCriterion, is_ac_id
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.gates import parse_gate_name
from pytest_specgate.contracts.markers import AC_MARKER_DOC as AC_MARKER_LINE
from pytest_specgate.contracts.validation import one_line_text

__all__ = ["AC_MARKER_LINE", "AcceptanceCriterion", "ac_from_marker", "is_ac_id"]

_KEYWORDS = ("spec", "title", "waived_to", "reason")


def ac_from_marker(args: Sequence[object], kwargs: Mapping[str, object], nodeid: str) -> AcceptanceCriterion:
    """Validate ``@pytest.mark.ac(...)`` arguments; a bad one is an input error naming the test."""

    def bad(what: str) -> SpecgateInputError:
        return SpecgateInputError(f"{nodeid}: @pytest.mark.ac: {what}")

    unknown = sorted(set(kwargs) - set(_KEYWORDS))
    if unknown:
        raise bad(f"unknown keyword {unknown[0]}=; expected one of {', '.join(_KEYWORDS)}")
    if len(args) != 1:
        raise bad(f"expected exactly one positional AC id, found {len(args)} ({list(args)!r})")
    ac_id = args[0]
    if not is_ac_id(ac_id):
        raise bad(f"AC id {ac_id!r} must look like {AC_ID_FORMS}")
    values: dict[str, str | None] = {}
    for keyword in _KEYWORDS:
        value = kwargs.get(keyword)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise bad(f"{keyword}= must be a non-empty string, found {value!r}")
        try:
            values[keyword] = None if value is None else one_line_text(value, f"{keyword}=")
        except SpecgateInputError as error:
            raise bad(str(error)) from None
    waived_to, reason = values["waived_to"], values["reason"]
    if waived_to is not None:
        try:
            waived_to = parse_gate_name(waived_to).text
        except ValueError as error:
            raise bad(f"waived_to=: {error}") from None
        if reason is None:
            raise bad(f"waived_to={waived_to!r} needs reason= saying why the AC is deferred")
    elif reason is not None:
        raise bad("reason= is only meaningful together with waived_to=")
    return AcceptanceCriterion(
        id=str(ac_id), spec=values["spec"], title=values["title"], waived_to=waived_to, reason=reason
    )
