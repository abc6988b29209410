"""Files a virtual-environment tool writes into the environment it makes, known by their content.

virtualenv (20.x and 21.x) and uv (to 0.12) put ``_virtualenv.py`` and a ``_virtualenv.pth`` that
imports it at start-up into the site directory of every environment they create. No
distribution's RECORD lists them, so without this an honest run in such a venv had an unowned
start-up file and a module from nowhere (seen on a GPU image's venv). They belong to the
environment only as a released tool wrote them: their sha256 must be one below, read from the
file in each virtualenv release's wheel (``virtualenv/create/via_global_ref/_virtualenv.py``, the
latest patch of every minor release from 20.0 to 21.15, copied into a venv byte for byte) and
from the venvs uv 0.1.45, 0.2.37, 0.3.5, 0.4.30, 0.6, 0.8 to 0.12 made (uv 0.13 writes none); an
edited copy stays foreign, like an edited installed file, and the reason says how to make a venv
without them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Final

__all__ = ["VENV_TOOL_FILES", "venv_tool_file"]

VENV_TOOL_FILES: Final[Mapping[str, Mapping[str, str]]] = {
    "_virtualenv.pth": {
        "69ac3d8f27e679c81b94ab30b3b56e9cd138219b1ba94a1fa3606d5a76a1433d": "virtualenv 20-21, uv 0.1-0.12",
    },
    "_virtualenv.py": {
        "684b8c07932ba4a84ac2e5ae9afe49ef04e92bac3d8d4191d455cf09d093e5fc": "virtualenv 20.0-20.12",
        "ce57d5e0d9b5d7356cb42da7450ba8f9359bdf693e335f4c921626943c77e64d": "virtualenv 20.13-20.15",
        "c9199315871b11b12df226f890a38e66e63191e1adbfb11a66e6861151b33fca": "virtualenv 20.16-20.21",
        "f4dfaeb9efc1614890cfa94ed15bbe9b2ee15fbe76d569ef5e435e93e4987dc7": "virtualenv 20.22",
        "119e4eb9c1a39e6ffd220840844bd326fa1bd3acf2f1c9fa0612949aedc228a5": "virtualenv 20.23",
        "0aeb86546345c1d0fada097536e35525714d5cdbcc2d8eb3f9912a955044fcff": "virtualenv 20.24",
        "0f20351ea7e90039c46d3fabdef991f28b1e3ff33eb13ee6f0d5cd21ea0e8b14": "virtualenv 20.25-20.34",
        "bec6155ff7bfc88f8e79e481f27fd7ee0a3b40eeca9bfeb41f4c4b997b2f8100": "virtualenv 20.35-20.36",
        "02943e192823d75212f206e1f2991ac572119882683a95dfbb7a1b913d7b14b5": "virtualenv 20.38-21.0",
        "e8c426ce260f866254ff35cefedc8b3efbd6d1446d99d7a4cdeb0095f98a8b8f": "virtualenv 21.1-21.3",
        "460589e83387d4dfe5fd84d41c5f6979599f5cd080983d73c832549161c80435": "virtualenv 21.4-21.6",
        "0278334cdcfab4c746b4416fbd5c2b6e7da937c81e132397d62c361d404ebe0e": "virtualenv 21.7-21.15",
        "ee52b2e2e720a40885a6b4b90c40e28e5c70e550af74d5efd169eaa5db2a6f6f": "uv 0.1-0.2",
        "e3e10c8a19a62a49928c139b8e6824eac92dcdda7639953bcd10921011cbbdff": "uv 0.3",
        "6cf30c56faf2a55228914dbbd17f8088ed371ebb08f5e7fa6fd931f913fcaf1d": "uv 0.4-0.12",
    },
}
"""File name -> sha256 of a content a released tool writes -> which releases write it."""


def venv_tool_file(path: str, site_roots: tuple[str, ...]) -> str | None:
    """The tool releases that wrote the file at ``path`` (absolute), when it lies directly in one of
    ``site_roots`` under a name and with a content ``VENV_TOOL_FILES`` knows; else None."""
    known = VENV_TOOL_FILES.get(os.path.basename(path))
    if known is None or os.path.dirname(path) not in site_roots:
        return None
    try:
        with open(path, "rb") as handle:
            digest = hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None
    return known.get(digest)
