"""Collection-time decisions about each test, made once per distinct marker.

A suite marks hundreds of tests with the same few ``ac`` and ``hardware`` markers, so
criteria and hardware verdicts are memoised per marker signature (its arguments, each
with its exact type) instead of being parsed and judged once per test. The declared
cost of a test (``@pytest.mark.specgate_cost(seconds)``) orders an xdist run so the
longest specs start first, each on its own worker.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, TypeVar, final

from pytest_specgate.contracts.errors import SpecgateInputError
from pytest_specgate.contracts.markers import COST_MARKER
from pytest_specgate.contracts.validation import is_finite_positive

if TYPE_CHECKING:
    from pytest_specgate.contracts.acceptance import AcceptanceCriterion
    from pytest_specgate.contracts.hardware import HardwareVerdict

__all__ = [
    "MarkerSignature",
    "SpecPlan",
    "costliest_spread",
    "declared_cost",
    "load_chunk_size",
    "marker_signature",
]

MarkerSignature = tuple[tuple[tuple[type, object], ...], tuple[tuple[str, type, object], ...]]
_SCALARS = (str, int, float, bool, type(None))
_Decided = TypeVar("_Decided")


def marker_signature(args: Sequence[object], kwargs: Mapping[str, object]) -> MarkerSignature | None:
    """The marker's arguments as a hashable key, or None when one is not a plain scalar.

    Types are part of the key: ``1``, ``1.0`` and ``True`` are equal in Python but a
    marker may accept one and refuse another, so they must never share a decision.
    """
    values = [*args, *kwargs.values()]
    if not all(type(value) in _SCALARS for value in values):
        return None
    return (
        tuple((type(value), value) for value in args),
        tuple(sorted((key, type(value), value) for key, value in kwargs.items())),
    )


def _memoised(memo: dict[MarkerSignature, _Decided], args: Sequence[object], kwargs: Mapping[str, object],
              decide: Callable[[], _Decided]) -> _Decided:
    """``decide()`` once per signature; a decision that raises is not kept, so each test
    with a bad marker gets its own error naming it."""
    signature = marker_signature(args, kwargs)
    if signature is None:
        return decide()
    decided = memo.get(signature)
    if decided is None:
        decided = memo[signature] = decide()
    return decided


@final
class SpecPlan:
    """One session's memo of ``ac`` criteria and hardware verdicts, keyed by marker signature."""

    def __init__(self) -> None:
        self._criteria: dict[MarkerSignature, AcceptanceCriterion] = {}
        self._verdicts: dict[MarkerSignature, HardwareVerdict] = {}

    def criterion(self, args: Sequence[object], kwargs: Mapping[str, object],
                  nodeid: str) -> AcceptanceCriterion:
        """The test's ``@pytest.mark.ac`` criterion; a bad marker is an input error naming ``nodeid``."""
        from pytest_specgate.selection.ac_marker import ac_from_marker

        return _memoised(self._criteria, args, kwargs, lambda: ac_from_marker(args, kwargs, nodeid))

    def verdict(self, args: Sequence[object], kwargs: Mapping[str, object],
                judge: Callable[[], HardwareVerdict]) -> HardwareVerdict:
        """The host's verdict on a ``@pytest.mark.hardware`` with these arguments (``judge`` decides)."""
        return _memoised(self._verdicts, args, kwargs, judge)

    @property
    def distinct_markers(self) -> int:
        """How many distinct ``ac`` and ``hardware`` markers were decided (for tests and benchmarks)."""
        return len(self._criteria) + len(self._verdicts)


def declared_cost(args: Sequence[object], kwargs: Mapping[str, object], nodeid: str) -> float:
    """``@pytest.mark.specgate_cost(seconds)``: a real number of seconds > 0, else an input error."""
    where = f"{nodeid}: @pytest.mark.{COST_MARKER}"
    if kwargs or len(args) != 1:
        raise SpecgateInputError(f"{where}: expected one positional number of seconds, found "
                                f"args {list(args)!r} and keywords {sorted(kwargs)!r}")
    seconds = args[0]
    if not is_finite_positive(seconds):
        raise SpecgateInputError(f"{where}: seconds must be a finite number > 0, found {seconds!r}")
    assert isinstance(seconds, int | float)
    return float(seconds)


_Item = TypeVar("_Item")


def load_chunk_size(total: int, workers: int, max_chunk: int | None) -> int:
    """How many tests ``--dist load`` sends each worker before any finishes (pytest-xdist 3:
    one each, round robin, below two per worker; else a quarter of a worker's share, 2 to
    ``--maxschedchunk``)."""
    if total < 2 * workers:
        return 1
    return max(min(total // workers // 4, total if max_chunk is None else max_chunk), 2)


def costliest_spread(items: Sequence[_Item], costs: Mapping[int, float], *, workers: int,
                     chunk: int) -> list[_Item]:
    """``items`` ordered so each worker's first batch starts with one of the costliest tests.

    ``costs`` maps an item's index to its declared seconds. ``--dist load`` hands worker k
    items ``[k*chunk, (k+1)*chunk)`` first and never takes back what it handed out, so two
    long specs in one batch run one after the other while the other worker idles. The
    ``workers`` costliest lead one batch each, the other declared ones follow the first
    batches costliest first, and undeclared tests keep their collection order.
    """
    ranked = sorted(costs, key=lambda index: (-costs[index], index))
    rest = iter([index for index in range(len(items)) if index not in costs])
    order: list[int] = []
    for leader in ranked[:workers]:
        order.append(leader)
        order.extend(itertools.islice(rest, chunk - 1))
    order.extend(ranked[workers:])
    order.extend(rest)
    return [items[index] for index in order]
