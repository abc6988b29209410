"""The plugin package: hooks in ``plugin``, fixtures in ``plugin.fixtures``, keys in ``plugin.stash``.

The fixtures module is registered by the hooks module, so turning the plugin off
(``-p no:specgate``) turns its fixtures off too, and turning it on brings them all.
"""

from __future__ import annotations

import pytest

FIXTURES = ("evidence", "duration_scale", "engine", "engine_config", "shared_engine", "boot_engine",
            "qualification", "specgate_engine_pool", "specgate_host_facts_file", "tiny_model_cache")


def test_every_fixture_comes_with_the_plugin(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--fixtures", "-p", "no:randomly")
    for name in FIXTURES:
        result.stdout.re_match_lines([rf"^{name}( \[session scope\])? -- "])


def test_turning_the_plugin_off_turns_its_fixtures_off(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_uses_evidence(evidence):\n    pass\n")
    result = pytester.runpytest("-p", "no:specgate")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*fixture 'evidence' not found*"])


def test_loading_the_plugin_warns_of_nothing(pytester: pytest.Pytester) -> None:
    """Each phase module is registered before another imports it: pytest warns of a plugin
    module imported earlier without assertion rewriting (as in an editable install)."""
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-W", "default")
    result.assert_outcomes(passed=1)
    assert "Warning" not in result.stdout.str()
