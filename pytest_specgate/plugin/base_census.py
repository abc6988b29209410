"""``python -m pytest_specgate.plugin.base_census ROOT [SPEC_PATH...]``: the census of a tree, as JSON.

The gate learns which tests belong to each AC at the trusted commit by collecting that commit,
checked out in a temporary worktree, with the code the gate itself runs (installed from the base
branch). Collection imports the tree's conftests and spec modules, so it runs in a process of
its own; this module is that process. Its last line is ``BASE_CENSUS_PREFIX`` and then
``{"testpaths", "carriers", "errors", "problem"}`` as JSON (a conftest may print before it); it
exits 0 whatever the collection found (a failure is the census's ``problem``).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pytest_specgate.contracts.census import BASE_CENSUS_PREFIX


def main(argv: list[str]) -> int:
    from pytest_specgate.plugin.census import census_of_tree
    from pytest_specgate.plugin.hookspecs import SpecgateHookSpecs

    if not argv:
        print("usage: python -m pytest_specgate.plugin.base_census ROOT [SPEC_PATH...]", file=sys.stderr)
        return 2
    census = census_of_tree(Path(argv[0]).resolve(), argv[1:], SpecgateHookSpecs)
    result = {"testpaths": list(census.testpaths), "carriers": dict(census.carriers),
              "errors": list(census.errors), "problem": census.problem}
    print("\n" + BASE_CENSUS_PREFIX + json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
