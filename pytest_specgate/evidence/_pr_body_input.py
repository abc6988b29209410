"""Where ``specgate gate`` reads the PR body from: a file, stdin (``-``), or a GitHub event.

In GitHub Actions the PR description is in the event payload (``$GITHUB_EVENT_PATH``,
``pull_request.body``), so a workflow needs neither a checkout of the body nor the API.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.validation import read_json_file
from pytest_specgate.evidence._gate import GateInputError, PrBodyText

STDIN_ARGUMENT = "-"
EVENT_PATH_VARIABLE = "GITHUB_EVENT_PATH"


def pr_body_from_event(environ: Mapping[str, str]) -> PrBodyText:
    """``pull_request.body`` of the event file named by ``$GITHUB_EVENT_PATH`` (null is empty)."""
    location = environ.get(EVENT_PATH_VARIABLE)
    if not location:
        raise GateInputError(
            f"--pr-body-from-event: ${EVENT_PATH_VARIABLE} is not set; it is set inside GitHub Actions, "
            "elsewhere give --pr-body=FILE"
        )
    path = Path(location)
    try:
        _, event = read_json_file(path, what="GitHub event payload")
    except SpecgateInputError as error:
        raise GateInputError(str(error)) from None
    pull_request = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull_request, dict):
        name = environ.get("GITHUB_EVENT_NAME", "this")
        raise GateInputError(
            f"{path}: the {name} event has no pull_request; run the gate on pull_request events"
        )
    body = pull_request.get("body")
    if body is not None and not isinstance(body, str):
        raise GateInputError(f"{path}: pull_request.body is {type(body).__name__}, expected text")
    number = pull_request.get("number")
    return PrBodyText(body or "", f"pull request #{number} body" if number is not None else str(path))


def pr_body_input(
    argument: str | None, from_event: bool, stdin: TextIO, environ: Mapping[str, str]
) -> Path | PrBodyText:
    """The PR body the options name: ``--pr-body=FILE``, ``--pr-body=-`` or ``--pr-body-from-event``."""
    if from_event:
        return pr_body_from_event(environ)
    if argument is None:
        raise GateInputError("give --pr-body=FILE, --pr-body=- (stdin) or --pr-body-from-event")
    if argument == STDIN_ARGUMENT:
        try:
            return PrBodyText(stdin.read(), "<stdin>")
        except (OSError, UnicodeDecodeError) as error:
            raise GateInputError(f"--pr-body=-: cannot read the PR body from stdin: {error}") from None
    return Path(argument)
