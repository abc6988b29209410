"""``python -m pytest_specgate.engines.mock --port N ...``: what subprocess mode runs."""

from __future__ import annotations

import argparse
import sys

from pytest_specgate.engines.mock_cli import configure_parser, run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_specgate.engines.mock")
    configure_parser(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
