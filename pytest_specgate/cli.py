"""The ``specgate`` command: inspect hosts, render and gate evidence, run the mock engine."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from pytest_specgate._version import __version__
from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.hardware import HostProfile
from pytest_specgate.contracts.host import HostFacts, HostProvenance
from pytest_specgate.selection.hardware import evaluate_requirement, load_host_profiles
from pytest_specgate.selection.host_probe import load_host_facts, probe_host

__all__ = ["main"]

TINY_MODELS_SCHEMA_ID = "specgate.tiny-models/1"


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (where profiles are declared)."""
    for directory in (start, *start.parents):
        candidate = directory / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def hosts_report(facts: HostFacts, profiles: dict[str, HostProfile],
                 provenance: HostProvenance) -> dict[str, object]:
    """This host's facts, where they came from and, per named profile, whether it matches and why not."""
    verdicts = {
        name: evaluate_requirement(profile.requirement, facts, os.environ)
        for name, profile in sorted(profiles.items())
    }
    return {
        "host": facts.to_dict(),
        "summary": facts.summary(),
        "provenance": provenance.to_record(),
        "provenance_label": provenance.label(),
        "profiles": {
            name: {"matched": v.matched, "needs": v.requirement.describe(),
                   "unmet": list(v.reasons)}
            for name, v in verdicts.items()
        },
    }


def _format_hosts(report: dict[str, object]) -> str:
    host = report["host"]
    assert isinstance(host, dict)
    lines = [f"host: {report['summary']}  (source: {host['source']})"]
    provenance = report["provenance"]
    assert isinstance(provenance, dict)
    lines.append(f"  {'provenance':<14} {report['provenance_label'] or 'unedited probe'}")
    for tool in provenance["tools"]:
        where = "system location" if tool["system_location"] else "OUTSIDE the system's tool locations"
        lines.append(f"  {'asked':<14} {tool['name']} at {tool['path'] or 'unknown path'} ({where})")
    for key in ("os", "os_version", "kernel", "arch", "cpu_brand", "cpu_count", "memory_bytes",
                "apple_chip", "thermal_state"):
        lines.append(f"  {key:<14} {host[key] if host[key] is not None else 'unknown'}")
    for gpu in host["gpus"]:
        lines.append(f"  gpu            {gpu['name']} SM {gpu['compute_capability'] or 'unknown'} "
                     f"memory {gpu['memory_bytes'] if gpu['memory_bytes'] is not None else 'unknown'}")
    profiles = report["profiles"]
    assert isinstance(profiles, dict)
    if not profiles:
        lines.append("profiles: none declared in [tool.specgate.hosts]")
    for name, row in profiles.items():
        status = "MATCH" if row["matched"] else "no match"
        detail = "" if row["matched"] else f": {'; '.join(row['unmet'])}"
        lines.append(f"profile {name:<16} {status} (needs {row['needs']}){detail}")
    return "\n".join(lines)


def _write_host_example(name: str, out: Path | None) -> int:
    from pytest_specgate.examples import host_example_text

    try:
        text = host_example_text(name)
        if out is None:
            sys.stdout.write(text)
        else:
            out.write_text(text, "utf-8")
            print(f"specgate hosts: wrote the {name} example to {out}")
    except OSError as exc:
        raise SpecgateInputError(str(exc)) from None
    return 0


def _run_hosts(args: argparse.Namespace) -> int:
    if args.example is not None:
        return _write_host_example(args.example, None if args.out is None else Path(args.out))
    if args.out is not None:
        raise SpecgateInputError("--out=FILE writes an example; give --example=NAME too")
    if args.pyproject and not Path(args.pyproject).is_file():
        raise SpecgateInputError(f"--pyproject={args.pyproject}: no such file")
    if args.host_facts:
        facts = load_host_facts(Path(args.host_facts))
        provenance = HostProvenance("file", Path(args.host_facts).name)
    else:
        facts = probe_host()
        provenance = HostProvenance("probe", None, facts.probed_with)
    pyproject = Path(args.pyproject) if args.pyproject else find_pyproject(Path.cwd())
    profiles = load_host_profiles(pyproject)
    report = hosts_report(facts, profiles, provenance)
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else _format_hosts(report))
    return 0


def _run_tiny_models(args: argparse.Namespace) -> int:
    """Build the tiny local checkpoints (``tiny:<role>``) outside pytest and print their paths."""
    if not args.out.strip():
        raise SpecgateInputError(
            "--out= is empty: expected the cache folder to build into (e.g. --out=.tiny-models)"
        )
    try:
        from pytest_specgate.fetching.tiny_models import TINY_MODEL_ROLES, tiny_model_pair

        pair = tiny_model_pair(Path(args.out))
    except ImportError as exc:
        raise SpecgateInputError(
            f"building tiny models needs tokenizers and safetensors ({exc.name or exc} is missing): "
            "pip install 'pytest-specgate[tiny]'") from None
    except OSError as exc:
        raise SpecgateInputError(f"--out={args.out}: {exc}") from None
    if args.json:
        models = {f"tiny:{role}": str(pair.path_for(role)) for role in TINY_MODEL_ROLES}
        print(json.dumps({"schema": TINY_MODELS_SCHEMA_ID, "models": models}, indent=2, sort_keys=True))
        return 0
    for role in TINY_MODEL_ROLES:
        print(f"tiny:{role:<9} {pair.path_for(role)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specgate",
        description="Inspect hosts, render and gate evidence bundles, run the mock engine.",
    )
    parser.add_argument("--version", action="version", version=f"pytest-specgate {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    hosts = commands.add_parser("hosts", help="print this host's facts and the profiles it matches")
    hosts.add_argument("--json", action="store_true", help="print the facts as JSON")
    hosts.add_argument("--host-facts", metavar="FILE", help="read facts from FILE instead of probing")
    hosts.add_argument("--pyproject", metavar="FILE",
                       help="pyproject.toml declaring [tool.specgate.hosts] (default: nearest)")
    hosts.add_argument("--example", metavar="NAME",
                       help="print a shipped example host-facts file (m4-16gb, m1-8gb-air-macos26, "
                            "gb10, linux-x86_64-24gb-nogpu) for --specgate-host-facts=FILE")
    hosts.add_argument("--out", metavar="FILE", help="with --example: write it to FILE instead")
    hosts.set_defaults(handler=_run_hosts)

    tiny = commands.add_parser(
        "tiny-models",
        help="build the tiny local models (tiny:target, tiny:draft, ...) and print their paths",
        description="Build the tiny random Llama checkpoints that tiny:<role> model references name "
                    "(deterministic, offline, once per content hash). Needs tokenizers and "
                    "safetensors: pip install 'pytest-specgate[tiny]'.")
    tiny.add_argument("--out", metavar="DIR", required=True, help="cache directory to build into")
    tiny.add_argument("--json", action="store_true",
                      help=f"print the models' paths as JSON ({TINY_MODELS_SCHEMA_ID})")
    tiny.set_defaults(handler=_run_tiny_models)

    from pytest_specgate.evidence import cli_commands as evidence

    evidence_commands: tuple[tuple[str, str, Callable[[argparse.ArgumentParser], None],
                                   Callable[[argparse.Namespace], int]], ...] = (
        ("render", "print a bundle's markdown evidence blocks",
         evidence.configure_render_parser, evidence.run_render),
        ("merge", "merge bundles from several hosts into one",
         evidence.configure_merge_parser, evidence.run_merge),
        ("sign", "sign a bundle with an Ed25519 key (DSSE envelope of its in-toto Statement)",
         evidence.configure_sign_parser, evidence.run_sign),
        ("gate", "check a PR body against evidence bundles (exit 0 only when it may merge)",
         evidence.configure_gate_parser, evidence.run_gate),
        ("waivers", "list open waivers and the gate each AC moves to",
         evidence.configure_waivers_parser, evidence.run_waivers),
        ("compare", "compare two bundles' measurements (exit 1 on a regression beyond a tolerance)",
         evidence.configure_compare_parser, evidence.run_compare),
        ("history", "trend tables, plots and change points of every AC figure across many bundles",
         evidence.configure_history_parser, evidence.run_history),
    )
    for name, help_text, configure, run in evidence_commands:
        command = commands.add_parser(name, help=help_text)
        configure(command)
        command.set_defaults(handler=run)

    from pytest_specgate.engines import mock_cli

    mock = commands.add_parser("mock-engine",
                               help="serve the mock OpenAI-compatible engine on 127.0.0.1")
    mock_cli.configure_parser(mock)
    mock.set_defaults(handler=mock_cli.run)
    return parser


def _output_redactor() -> Callable[[str], str]:
    """The credential rules of the evidence redactor, knowing this environment's secrets: every
    line the command prints passes them (paths and names stay, the reader needs them)."""
    from pytest_specgate.evidence._redact import build_redactor

    return build_redactor(None).secrets_only().text


@contextmanager
def redacted_output() -> Iterator[None]:
    """``sys.stdout`` and ``sys.stderr`` through :func:`_output_redactor` while a command runs."""
    from pytest_specgate.evidence._redacted_output import RedactedLines

    built: list[Callable[[str], str]] = []

    def shared() -> Callable[[str], str]:
        if not built:
            built.append(_output_redactor())
        return built[0]

    saved = sys.stdout, sys.stderr
    sys.stdout = RedactedLines(saved[0], shared)
    sys.stderr = RedactedLines(saved[1], shared)
    try:
        yield
    finally:
        try:
            sys.stderr.flush()
            sys.stdout.flush()
        finally:
            sys.stdout, sys.stderr = saved


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        with redacted_output():
            return _run(args)
    except BrokenPipeError:
        # The reader went away (`specgate hosts | head`): not a failure of ours. Point
        # stdout at devnull so the interpreter's final flush cannot raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.handler(args))
    except SpecgateInputError as error:
        # The one place an input error becomes what the user sees: one line, exit 2.
        print(f"specgate {args.command}: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
