"""The configuration the gate trusts: ``[tool.specgate]`` from the base branch, never the PR's.

The gate runs on the PR's checkout, so its ``pyproject.toml`` is the author's claim: a PR that
deletes ``[tool.specgate.trust]``, adds a gate to waive to, or redefines a host profile must not
change what counts. ``specgate gate --trusted-config=REF`` reads ``git show REF:pyproject.toml``
(the base branch, as GitHub's protected-branch rules do); ``--trusted-config=FILE.toml`` reads a
file the caller took from somewhere it trusts. Only four tables are read: ``hosts`` (profile
definitions), ``gates`` (merge gates in order), ``trust`` (enrolled signers) and ``acs``
(per-AC settings, today ``engine = false`` for an AC that needs no engine).
"""

from __future__ import annotations

import fnmatch
import re
import subprocess
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_specgate.contracts.acceptance import AC_ID_FORMS, is_ac_id
from pytest_specgate.contracts.census import spec_paths_from
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.gates import GateName, declared_gates
from pytest_specgate.contracts.hardware import HostProfile
from pytest_specgate.contracts.project_keys import check_known_keys, enrolled_backends
from pytest_specgate.contracts.safe_read import SafeReadError, read_regular_file
from pytest_specgate.evidence._trust import TrustPolicy, trust_policy_from_table

PYPROJECT = "pyproject.toml"
FILE_SUFFIX = ".toml"
GIT_TIMEOUT_S = 30.0
_REF = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_./@{}~^+-]*$")
"""What a ref may look like here: no leading ``-`` (an option), no ``:`` (it would change the path
``git show`` reads), no whitespace; git itself then says whether it names a commit."""
ACS_TABLE = "[tool.specgate.acs]"
_AC_FIELDS = frozenset({"profile", "engine", "backends"})


class TrustedConfigError(SpecgateInputError):
    """A trusted configuration that cannot be read; names the ref or file and what was wrong."""


@dataclass(frozen=True)
class AcSettings:
    """``[tool.specgate.acs."AC-N"]``: what the base branch says the AC requires.

    ``profile``: the host profile every test of the AC must be marked with and run on (a signer
    enrolled for it must vouch); ``engine``: whether an engine must be recorded (default true;
    false lets a hardware AC record none); ``backends``: the engine backends its figures may come
    from (None: any enrolled backend).
    """

    profile: str | None = None
    engine: bool = True
    backends: tuple[str, ...] | None = None


@dataclass(frozen=True)
class TrustedConfig:
    """``source`` names where it came from in every message; ``base_commit`` is the commit a ref
    resolved to (None for a file), against which the gate lists changed harness files."""

    source: str
    hosts: Mapping[str, HostProfile] = field(default_factory=dict)
    gates: tuple[GateName, ...] = ()
    trust: TrustPolicy | None = None
    acs: Mapping[str, AcSettings] = field(default_factory=dict)
    base_commit: str | None = None
    backends: Mapping[str, str] = field(default_factory=dict)
    """Engine backends enrolled to qualify: name -> the distribution that must provide it."""
    spec_paths: tuple[str, ...] | None = None
    """Where the AC tests live (``[tool.specgate] spec_paths``, else ``testpaths``, else the
    rootdir): every record's census must have collected them; None without a trusted config."""
    sut_paths: tuple[str, ...] = ()
    """``[tool.specgate] sut_paths``: repository paths (globs) of in-process code under test; a
    change there is listed as such rather than blocking the ACs whose run imported it."""

    def is_sut(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.sut_paths)

    def engine_free(self, ac_id: str) -> bool:
        settings = self.acs.get(ac_id)
        return settings is not None and not settings.engine

    @property
    def defines_acs(self) -> bool:
        """Whether this config is the gate's anchor (from ``--trusted-config``): then every AC it
        judges must be defined in its ``[tool.specgate.acs]``; the defaults define none."""
        return self.source != UNTRUSTED.source


UNTRUSTED = TrustedConfig(source="the defaults (no --trusted-config)")
"""What the gate trusts when it is given nothing: no profiles, no gates, no signers, no exemptions."""


def is_file_argument(text: str) -> bool:
    """``--trusted-config`` is a file when it ends in ``.toml``, else a git ref (one rule, no guess
    from what happens to exist in the PR's checkout)."""
    return text.endswith(FILE_SUFFIX)


def load_trusted_config(argument: str, repo: Path) -> TrustedConfig:
    """``--trusted-config=REF`` (``git show REF:pyproject.toml`` in ``repo``) or ``=FILE.toml``."""
    if is_file_argument(argument):
        return trusted_config_from_file(Path(argument), "--trusted-config")
    commit = resolve_ref(argument, repo)
    text = _git(["show", f"{commit}:{PYPROJECT}"], repo, f"--trusted-config={argument}: {PYPROJECT}")
    return trusted_config_from_text(text, f"{argument}:{PYPROJECT} ({commit[:12]})", commit)


def trusted_config_from_file(path: Path, option: str) -> TrustedConfig:
    """The ``[tool.specgate]`` of a TOML file; ``option`` names where the path came from."""
    try:
        text = read_regular_file(path, "the trusted config").decode("utf-8")
    except SafeReadError as error:
        raise TrustedConfigError(f"{option}: {error}") from None
    except UnicodeDecodeError as error:
        raise TrustedConfigError(f"{option}={path}: not UTF-8 text: {error}") from None
    return trusted_config_from_text(text, str(path), None)


FULL_COMMIT = re.compile(r"^[0-9a-f]{40}$")
SHORT_NAME_RULES = ("refs/{}", "refs/tags/{}", "refs/heads/{}", "refs/remotes/{}", "refs/remotes/{}/HEAD")
"""Where git looks for a short name, in its own order (``git help revisions``): a tag named
``origin/main`` wins over the remote branch, so a short name is never resolved here."""


def resolve_ref(ref: str, repo: Path) -> str:
    """The full commit a fully qualified ref (``refs/...``) or a 40-hex commit names in ``repo``.

    A short name (``origin/main``, ``main``) is refused, naming the refs it could mean: anyone
    who can push a tag could otherwise choose what it resolves to. A malformed ref never reaches git.
    """
    if not _REF.match(ref) or ".." in ref:
        raise TrustedConfigError(
            f"--trusted-config={ref!r}: not a git ref (e.g. refs/remotes/origin/main) nor a .toml file"
        )
    missing = f"--trusted-config={ref}: no such commit here (fetch the base branch first)"
    if FULL_COMMIT.match(ref):
        return _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
                    repo, missing).strip()
    if not ref.startswith("refs/"):
        raise TrustedConfigError(_short_name_problem(ref, repo))
    found = _git(["show-ref", "--verify", "--hash", "--end-of-options", ref], repo, missing).strip()
    return _git(["rev-parse", "--verify", "--quiet", "--end-of-options", f"{found}^{{commit}}"],
                repo, f"--trusted-config={ref}: names no commit").strip()


def _short_name_problem(ref: str, repo: Path) -> str:
    """Why a short name is refused, with the fully qualified refs it could mean here."""
    listed = _git(["for-each-ref", "--format=%(refname)"], repo, f"--trusted-config={ref}").split()
    candidates = [name for name in (rule.format(ref) for rule in SHORT_NAME_RULES) if name in listed]
    start = f"--trusted-config={ref}: a short ref name, which git resolves by its own precedence"
    end = "pass a fully qualified ref (refs/...) or the 40-hex commit (in Actions: the event's base sha)"
    if not candidates:
        return f"{start}; it names no ref here (fetch the base branch first); {end}"
    if len(candidates) == 1:
        return f"{start}; {end}: --trusted-config={candidates[0]}"
    return f"{start}; it is ambiguous here, naming {', '.join(candidates)}; {end}"


def _git(arguments: list[str], repo: Path, what: str) -> str:
    """``git ARGUMENTS`` as a list argv (never a shell); a failure names ``what`` and git's words."""
    try:
        completed = subprocess.run(
            ["git", *arguments], cwd=repo, capture_output=True, text=True, timeout=GIT_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise TrustedConfigError(f"{what}: cannot run git: {error}") from None
    if completed.returncode != 0:
        said = completed.stderr.strip().splitlines()
        raise TrustedConfigError(f"{what}" + (f": {said[-1]}" if said else ""))
    return completed.stdout


def trusted_config_from_text(text: str, source: str, base_commit: str | None) -> TrustedConfig:
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise TrustedConfigError(f"{source}: not TOML: {error}") from None
    tool = document.get("tool", {})
    table = tool.get("specgate", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise TrustedConfigError(f"{source}: [tool.specgate] must be a table")
    ini = tool.get("pytest", {}).get("ini_options", {}) if isinstance(tool, dict) else {}
    testpaths = ini.get("testpaths", []) if isinstance(ini, dict) else []
    if isinstance(testpaths, str):
        testpaths = testpaths.split()
    config = trusted_config_from_table(table, source, base_commit)
    try:
        spec_paths = spec_paths_from(table, [str(path) for path in testpaths], source)
    except SpecgateInputError as error:
        raise TrustedConfigError(str(error)) from None
    return replace(config, spec_paths=spec_paths)


def trusted_config_from_table(
    table: Mapping[str, Any], source: str, base_commit: str | None
) -> TrustedConfig:
    from pytest_specgate.selection.hardware import host_profiles_from_table

    try:
        check_known_keys(table, where=source)
        hosts = host_profiles_from_table(table.get("hosts", {}), Path(source))
        gates = declared_gates(table["gates"], source) if "gates" in table else ()
        trust = (
            trust_policy_from_table(table["trust"], source, sorted(hosts) if "hosts" in table else None)
            if "trust" in table
            else None
        )
    except SpecgateInputError as error:  # a bad host profile, gate list or trust policy alike
        raise TrustedConfigError(str(error)) from None
    return TrustedConfig(
        source=source,
        hosts=hosts,
        gates=gates,
        trust=trust,
        acs=_ac_settings(table.get("acs", {}), source, hosts),
        base_commit=base_commit,
        backends=_enrolled_backends(table.get("backends", {}), source),
        sut_paths=_sut_paths(table.get("sut_paths", []), source),
    )


def _sut_paths(value: object, source: str) -> tuple[str, ...]:
    """``sut_paths``: a list of repository-relative paths or globs (``pytest_specgate/engines/*``)."""
    if not isinstance(value, list) or not all(isinstance(path, str) and path for path in value):
        raise TrustedConfigError(f"{source}: [tool.specgate] sut_paths must be a list of repository paths "
                                 f'or globs, e.g. ["src/engine/*.py"], found {value!r}')
    return tuple(value)


def _enrolled_backends(table: object, source: str) -> dict[str, str]:
    """``[tool.specgate.backends]``: ``name = "distribution"`` for each non-built-in engine
    backend whose evidence may qualify (``_run_provenance.unenrolled_backends``)."""
    try:
        return enrolled_backends(table, source)
    except SpecgateInputError as error:
        raise TrustedConfigError(str(error)) from None


def _ac_settings(table: object, source: str, hosts: Mapping[str, HostProfile]) -> dict[str, AcSettings]:
    """``[tool.specgate.acs."AC-N"]`` tables; an unknown AC id, key, value type or undeclared
    profile is an error."""
    if not isinstance(table, dict):
        raise TrustedConfigError(f"{source}: {ACS_TABLE} must be a table of AC tables")
    settings: dict[str, AcSettings] = {}
    for ac_id, raw in table.items():
        where = f'{source}: [tool.specgate.acs."{ac_id}"]'
        if not is_ac_id(ac_id):
            raise TrustedConfigError(f"{where}: not an AC id; an AC id looks like {AC_ID_FORMS}")
        if not isinstance(raw, dict):
            raise TrustedConfigError(f'{where} must be a table, e.g. profile = "m4-16gb"')
        unknown = sorted(set(raw) - _AC_FIELDS)
        if unknown:
            known = ", ".join(sorted(_AC_FIELDS))
            raise TrustedConfigError(f"{where}: unknown key {unknown[0]!r}; known: {known}")
        engine = raw.get("engine", True)
        if not isinstance(engine, bool):
            raise TrustedConfigError(f"{where}: engine must be true or false, found {engine!r}")
        profile = raw.get("profile")
        if profile is not None and (not isinstance(profile, str) or profile not in hosts):
            declared = ", ".join(sorted(hosts)) or "none"
            raise TrustedConfigError(f"{where}: profile {profile!r} is not declared in [tool.specgate.hosts] "
                                     f"(declared: {declared})")
        backends = raw.get("backends")
        if backends is not None and (
            not isinstance(backends, list) or not backends or not all(isinstance(b, str) for b in backends)
        ):
            raise TrustedConfigError(f'{where}: backends must be a non-empty list of backend names, e.g. '
                                     f'["mlx", "vllm"], found {backends!r}')
        settings[ac_id] = AcSettings(
            profile=profile, engine=engine, backends=None if backends is None else tuple(backends)
        )
    return settings
