"""An acceptance criterion as a value: its id (``AC-10``, ``FR-4.6``), spec, title and waiver.

``selection.ac_marker`` reads one from ``@pytest.mark.ac(...)``; the evidence records,
the markdown, the merge and the gate name ACs by these ids.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["AC_ID", "AC_ID_FORMS", "AcceptanceCriterion", "is_ac_id"]

AC_ID = re.compile(r"^(?:AC-[0-9]+[a-z]?|FR-[0-9]+(?:\.[0-9]+)?)\Z")
"""ASCII digits only and no trailing newline, as the record schema's pattern: ``\\d`` would also
take ``AC-１０`` and ``$`` would take ``AC-10\\n``."""
AC_ID_FORMS = "AC-<n>[a-z] or FR-<n>[.<n>]"


@dataclass(frozen=True)
class AcceptanceCriterion:
    id: str
    spec: str | None = None
    title: str | None = None
    waived_to: str | None = None
    reason: str | None = None

    def to_dict(self) -> dict[str, str | None]:
        return {
            "id": self.id,
            "spec": self.spec,
            "title": self.title,
            "waived_to": self.waived_to,
            "reason": self.reason,
        }


def is_ac_id(text: object) -> bool:
    return isinstance(text, str) and AC_ID.match(text) is not None


