"""How often the credential rules change text that holds no credential: the false-positive rate.

``python -m benchmarks.redaction_false_positives FILE...`` reads logs that hold no secret (a
verbose pytest run of this repository's suites, an mlx-lm or vLLM server log), redacts each line
with the credential rules alone (what the terminal and the ``specgate`` command apply: no known
values, no paths or names), and prints the share of lines changed and every change, so each one
can be judged: a false positive, or a secret after all.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Sequence
from pathlib import Path


def changed_lines(text: str) -> list[tuple[str, str]]:
    """Each line the credential rules change, with what they made of it."""
    from pytest_specgate.evidence import LocalIdentity, build_redactor

    redactor = build_redactor(None, [], {}, LocalIdentity((), (), ())).secrets_only()
    return [(line, redactor.text(line)) for line in text.splitlines() if redactor.text(line) != line]


def _changes(before: str, after: str) -> str:
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return "; ".join(
        f"{before[i1:i2]!r} -> {after[j1:j2]!r}"
        for tag, i1, i2, j1, j2 in matcher.get_opcodes()
        if tag != "equal"
    )


def main(argv: Sequence[str] | None = None) -> int:
    paths = [Path(argument) for argument in (sys.argv[1:] if argv is None else argv)]
    total_lines = total_changed = 0
    for path in paths:
        text = path.read_text(encoding="utf-8", errors="replace")
        lines = len(text.splitlines())
        changed = changed_lines(text)
        total_lines += lines
        total_changed += len(changed)
        print(f"{path}: {len(changed)} of {lines} lines changed ({len(changed) / max(lines, 1):.3%})")
        for before, after in changed:
            print(f"  {_changes(before, after)}")
    print(f"all: {total_changed} of {total_lines} lines changed ({total_changed / max(total_lines, 1):.3%})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
