"""Host facts of the session: the ``pytest_specgate_host_facts`` default (probe or file),
other plugins' answers and edits, validated, and where they came from.

Collection (hardware verdicts), the evidence collector and the report header all read the
one object ``session_host_facts`` builds on first use.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.plugin.stash import (
    DEFAULT_HOST_FACTS_KEY,
    HOST_FACTS_KEY,
    HOST_PROVENANCE_KEY,
    SETTINGS_KEY,
)

if TYPE_CHECKING:
    from pytest_specgate.contracts.host import HostFacts, HostProvenance

__all__ = ["session_host_facts", "session_host_provenance"]


@pytest.hookimpl(trylast=True)
def pytest_specgate_host_facts(config: pytest.Config) -> HostFacts:
    from pytest_specgate.selection.host_probe import load_host_facts, probe_host

    path = config.stash[SETTINGS_KEY].host_facts_file
    facts = load_host_facts(path) if path is not None else probe_host()
    config.stash[DEFAULT_HOST_FACTS_KEY] = (facts, _json_shape(facts))
    return facts


def _json_shape(facts: HostFacts) -> dict[str, Any]:
    """A deep, detached copy of the facts' JSON form: what an edit is compared against."""
    shape: dict[str, Any] = json.loads(json.dumps(facts.to_dict(), default=str))
    return shape


def session_host_facts(config: pytest.Config) -> HostFacts:
    """The one host-facts object of this session: hook result, user edits, validated.

    Its provenance (``session_host_provenance``) is decided here from what happened, not
    from what the facts say about themselves.
    """
    if HOST_FACTS_KEY not in config.stash:
        facts, provenance = _resolve_host_facts(config)
        config.stash[HOST_FACTS_KEY] = dataclasses.replace(facts, source=provenance.source_label)
        config.stash[HOST_PROVENANCE_KEY] = provenance
    return config.stash[HOST_FACTS_KEY]


def session_host_provenance(config: pytest.Config) -> HostProvenance:
    session_host_facts(config)
    return config.stash[HOST_PROVENANCE_KEY]


def _resolve_host_facts(config: pytest.Config) -> tuple[HostFacts, HostProvenance]:
    from pytest_specgate.contracts.host import HostFacts, HostProvenance, host_facts_from_dict

    hook = config.hook
    try:
        answered = hook.pytest_specgate_host_facts(config=config)
    except SpecgateInputError as exc:
        raise SpecgateInputError(f"--specgate-host-facts: {exc}") from None
    if not isinstance(answered, HostFacts):
        raise SpecgateInputError(
            f"pytest_specgate_host_facts in {_implementers(config, 'pytest_specgate_host_facts')} "
            f"returned {type(answered).__name__}, expected pytest_specgate.contracts.host.HostFacts"
        )
    before = _json_shape(answered)
    edited = copy.deepcopy(before)
    hook.pytest_specgate_update_host_facts(config=config, facts=edited)
    try:
        facts = answered if edited == before else host_facts_from_dict(
            edited, where="pytest_specgate_update_host_facts", source=answered.source)
    except SpecgateInputError as exc:
        raise SpecgateInputError(f"--specgate-host-facts: {exc}") from None
    default, default_shape = config.stash.get(DEFAULT_HOST_FACTS_KEY, (None, None))
    # The default's own object, unchanged: anything else was answered (or rewritten) by a hook.
    by_default = default is answered and before == default_shape
    path = config.stash[SETTINGS_KEY].host_facts_file
    if edited != before:
        provenance = HostProvenance("edited", _implementers(config, "pytest_specgate_update_host_facts"))
    elif not by_default:
        provenance = HostProvenance("hook", _implementers(config, "pytest_specgate_host_facts"))
    elif path is not None:
        provenance = HostProvenance("file", path.name)
    else:
        provenance = HostProvenance("probe", None, answered.probed_with)
    return facts, provenance


def _implementers(config: pytest.Config, hook_name: str) -> str:
    """The plugins and conftests (relative to the rootdir) implementing one of our hooks."""
    names = []
    for impl in getattr(config.hook, hook_name).get_hookimpls():
        if impl.plugin is sys.modules[__name__]:
            continue
        where = getattr(impl.plugin, "__file__", None)
        if where is None:
            names.append(impl.plugin_name)
            continue
        try:
            names.append(Path(where).resolve().relative_to(config.rootpath.resolve()).as_posix())
        except ValueError:
            names.append(Path(where).name)
    return ", ".join(names) or "a hook wrapper"
