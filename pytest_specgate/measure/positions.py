"""Acceptance per draft position, beside the analytic alpha^k.

Under the model of Leviathan et al. 2023 each drafted token is accepted with probability alpha
independently, so the token at draft position k survives with probability alpha^k. A measured
curve that falls faster than that says the draft loses the target's thread as it drafts further
(the usual case), which one pooled acceptance rate hides. Alpha is the one that explains the
pooled rate (:func:`~pytest_specgate.measure.expected.alpha_from_acceptance_rate`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pytest_specgate.measure.expected import alpha_from_acceptance_rate
from pytest_specgate.measure.statistics import AcceptanceMeasurement


@dataclass(frozen=True)
class PositionAcceptance:
    """Measured share of draft rounds accepted at positions 1..gamma and alpha^k for each."""

    measured: tuple[float, ...]
    expected: tuple[float, ...]
    alpha: float
    drafts: int

    def to_dict(self) -> dict[str, object]:
        return {
            "measured": list(self.measured),
            "expected_alpha_k": list(self.expected),
            "alpha": self.alpha,
            "drafts": self.drafts,
        }


def position_acceptance(acceptance: AcceptanceMeasurement, gamma: int) -> PositionAcceptance | None:
    """The per-position curve of a complete measurement (positions beyond gamma are dropped),
    or None when the engine does not count positions (``acceptance.positions_reason`` says why)."""
    rates = acceptance.per_position_rates()
    if rates is None or acceptance.acceptance_rate is None or acceptance.drafts is None:
        return None
    measured = (rates + (0.0,) * gamma)[:gamma]
    alpha = alpha_from_acceptance_rate(acceptance.acceptance_rate, gamma)
    return PositionAcceptance(measured, tuple(alpha**k for k in range(1, gamma + 1)), alpha,
                              acceptance.drafts)


def write_position_plot(positions: PositionAcceptance, path: Path, *, title: str) -> Path:
    """A small PNG of the measured rates and alpha^k by position (Agg canvas, no global backend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    figure = Figure(figsize=(5, 3.2), dpi=100)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    ks = list(range(1, len(positions.measured) + 1))
    axes.plot(ks, positions.measured, marker="o", label="measured")
    axes.plot(ks, positions.expected, marker="s", linestyle="--",
              label=f"analytic alpha^k (alpha {positions.alpha:.3f})")
    axes.set_xticks(ks)
    axes.set_xlabel("draft position k")
    axes.set_ylabel("share of drafts accepted at k")
    axes.set_ylim(0, 1.02)
    axes.set_title(f"{title} ({positions.drafts} drafts)")
    axes.grid(True, alpha=0.3)
    axes.legend(loc="best")
    figure.tight_layout()
    figure.savefig(path, format="png", metadata={"Software": None})
    return path
