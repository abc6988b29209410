"""``specgate mock-engine``: run the mock engine in the foreground on 127.0.0.1.

Exit codes: 0 after a clean stop, 2 for bad options, 3 when the engine refuses
to start (fail-closed start-up, e.g. ``draft_model_tokenizer_mismatch``).
"""

from __future__ import annotations

import argparse
import sys

from pytest_specgate.contracts.validation import parse_json

__all__ = ["EXIT_BAD_OPTIONS", "EXIT_REFUSED", "configure_parser", "options_from_args", "run"]

EXIT_BAD_OPTIONS = 2
EXIT_REFUSED = 3
_MAX_PORT = 65535

_FLAG_OPTIONS = (
    ("alpha", float, "draft agreement per position, in [0, 1] (default 0.8)"),
    ("target_step_ms", float, "simulated target time per verification round or token (default 0)"),
    ("draft_step_ms", float, "simulated draft time per drafted token (default 0)"),
    ("seed", int, "model seed (default 0)"),
    ("vocab", str, "target vocabulary name (default words-v1)"),
    ("draft_vocab", str, "draft vocabulary name (default: the target's)"),
    ("memory_budget_gb", float, "refuse to start when target + draft + KV exceed this"),
    ("roll_period_s", float, "reset the telemetry window every N seconds"),
)


def configure_parser(parser: argparse.ArgumentParser) -> None:
    """Add the mock-engine arguments to ``parser`` (a subcommand parser of ``specgate``)."""
    parser.add_argument("--port", type=int, required=True, help="port on 127.0.0.1 to listen on")
    parser.add_argument("--target", default=None, help="target model id")
    parser.add_argument("--draft", default=None, help="draft model id; omit to disable speculation")
    parser.add_argument("--num-draft-tokens", type=int, default=None, help="draft length gamma")
    for name, kind, help_text in _FLAG_OPTIONS:
        parser.add_argument(f"--{name.replace('_', '-')}", dest=name, type=kind, default=None, help=help_text)
    parser.add_argument(
        "--gated-features",
        default=None,
        help="comma-separated features that force the baseline path "
        "(default logprobs,n,logit_bias,tools,response_format; empty string for none)",
    )
    parser.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="NAME",
        help="a violation (corrupt-spec, telemetry-off-by-one, no-reset-on-swap, gate-disabled) "
        "or a transient fault kind[:count[:seconds]] (reset, stall, late-reply, error-500, crash, "
        "draft-failure); repeatable",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="any other mock engine option, value as JSON (e.g. eos_one_in=0); repeatable",
    )


def options_from_args(args: argparse.Namespace) -> dict[str, object]:
    """Engine options from ``--option`` pairs, then explicit flags (flags win)."""
    options: dict[str, object] = {}
    for pair in args.option:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--option expects KEY=JSON, got {pair!r}")
        options[key] = parse_json(raw, f"--option {key}")
    for name, _, _ in _FLAG_OPTIONS:
        value = getattr(args, name)
        if value is not None:
            options[name] = value
    if args.gated_features is not None:
        options["gated_features"] = [f for f in args.gated_features.split(",") if f]
    if args.fault:
        options["faults"] = list(args.fault)
    return options


def run(args: argparse.Namespace) -> int:
    """Validate, check start-up fail-closed, then serve until interrupted."""
    from pytest_specgate.contracts.engine import EngineStartupRefused
    from pytest_specgate.engines.mock.server import listen_loopback, serve_forever
    from pytest_specgate.engines.mock.settings import check_startup, settings_from_options

    if not 1 <= args.port <= _MAX_PORT:
        print(f"specgate mock-engine: --port={args.port}: expected a port from 1 to {_MAX_PORT}",
              file=sys.stderr)
        return EXIT_BAD_OPTIONS
    try:
        settings = settings_from_options(
            args.target, args.draft, args.num_draft_tokens, options_from_args(args)
        )
        check_startup(settings)
    except ValueError as exc:
        print(f"specgate mock-engine: {exc}", file=sys.stderr)
        return EXIT_BAD_OPTIONS
    except EngineStartupRefused as refused:
        print(f"specgate mock-engine: refused to start: {refused}", file=sys.stderr)
        return EXIT_REFUSED
    try:
        sock = listen_loopback(args.port)
    except OSError as error:
        print(f"specgate mock-engine: --port={args.port}: cannot listen on 127.0.0.1:{args.port}: "
              f"{error.strerror or error}", file=sys.stderr)
        return EXIT_BAD_OPTIONS
    print(
        f"specgate mock-engine: serving {settings.target} (draft {settings.draft or 'none'}) "
        f"on http://127.0.0.1:{args.port}",
        file=sys.stderr,
        flush=True,
    )
    try:
        serve_forever(settings, sock)
    except KeyboardInterrupt:
        return 0
    return 0
