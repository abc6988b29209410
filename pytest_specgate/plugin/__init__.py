"""pytest-specgate's pytest plugin (entry point ``pytest11: specgate``): it only registers
the modules that hold the hooks and fixtures, one per phase of a run.

- ``host_facts``: the session's host facts and where they came from;
- ``bundle``: the evidence collector, redactor and signature of the run;
- ``options``: options and ini values, hook specs, settings at configure;
- ``terminal``: the report header, the terminal summary and progress lines;
- ``worker_secrets``: secrets an xdist worker learns, sent sealed to the controller;
- ``collection``: markers validated, run decisions, selection, xdist order;
- ``runtest``: run decisions applied, soft checks, progress, report payloads;
- ``fixtures``: every fixture.

pytest imports them with this module, so ``-p no:specgate`` turns all of them off. Each
imports only pytest, small contract modules and the stash keys at import time; settings,
host probes, engines and evidence load in the hook that first needs them.
"""

from __future__ import annotations

from pytest_specgate.evidence import watch_imports

# First: every module imported from here on is seen, so run provenance judges one that later
# leaves sys.modules too.
watch_imports()

# Each before any module that imports it: pytest warns of a plugin module already imported
# when it was imported without assertion rewriting (an editable install).
pytest_plugins = [
    "pytest_specgate.plugin.host_facts",
    "pytest_specgate.plugin.bundle",
    "pytest_specgate.plugin.options",
    "pytest_specgate.plugin.terminal",
    "pytest_specgate.plugin.worker_secrets",
    "pytest_specgate.plugin.collection",
    "pytest_specgate.plugin.runtest",
    "pytest_specgate.plugin.fixtures",
]
