"""Example files shipped with the package, so a pip user has them without a clone.

``hosts/`` holds host-facts files (``--specgate-host-facts=FILE``) for the machines the
project's specs name: a 16 GB M4, an 8 GB M1 Air, a GB10 and a plain Linux box. They
simulate a host for trying markers and the gate; simulated facts never qualify.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from pytest_specgate.contracts.errors import SpecgateInputError

__all__ = ["host_example_names", "host_example_text", "host_examples_dir"]


def host_examples_dir() -> Path:
    """The installed folder of example host-facts files."""
    return Path(str(resources.files(__name__).joinpath("hosts")))


def host_example_names() -> list[str]:
    return sorted(path.stem for path in host_examples_dir().glob("*.json"))


def host_example_text(name: str) -> str:
    """The example host-facts file ``name`` (e.g. ``m4-16gb``), as shipped; an unknown name is a
    ``SpecgateInputError`` listing the ones that exist."""
    if name not in host_example_names():
        raise SpecgateInputError(
            f"--example={name}: no such host example; available: {', '.join(host_example_names())}"
        )
    return (host_examples_dir() / f"{name}.json").read_text("utf-8")
