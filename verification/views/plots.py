"""Coordinates for the small inline-SVG plots (no JS library; CSP forbids inline script).
Pure functions of plain numbers: the templates draw the shapes and escape every label."""

import math
from dataclasses import dataclass

WIDTH, HEIGHT = 320, 190
LEFT, RIGHT, TOP, BOTTOM = 38, 12, 12, 34  # margins inside the viewBox, room for the axes' labels
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
HISTOGRAM_BINS = 10


def _x(fraction: float) -> float:
    return round(LEFT + fraction * PLOT_W, 1)


def _y(fraction: float) -> float:
    return round(TOP + (1 - fraction) * PLOT_H, 1)


@dataclass
class Tick:
    position: float
    label: str


@dataclass
class Point:
    x: float
    y: float
    label: str  # what the point's <title> says
    css: str = ""


@dataclass
class Bar:
    x: float
    y: float
    width: float
    height: float
    count: int
    label: str


def _frame() -> dict:
    return {"width": WIDTH, "height": HEIGHT, "left": LEFT, "right": WIDTH - RIGHT, "top": TOP, "bottom": TOP + PLOT_H,
            "middle": round(LEFT + PLOT_W / 2, 1)}


def _percent_ticks() -> list[Tick]:
    return [Tick(_y(f), f"{f:.0%}") for f in (0, 0.5, 1)]


def pass_at_k_plot(curve: list[tuple[int, float]]) -> dict:
    """pass@k against k on a log2 axis (k = 1, 2, 4, 8, 16), one point per k."""
    top_k = max((k for k, _ in curve), default=1)
    span = math.log2(top_k) or 1.0

    def kx(k: int) -> float:
        return _x(math.log2(k) / span) if top_k > 1 else _x(0.5)

    points = [Point(kx(k), _y(value), f"pass@{k} = {value:.0%}") for k, value in curve]
    return {
        **_frame(),
        "points": points,
        "path": " ".join(f"{'M' if i == 0 else 'L'}{p.x},{p.y}" for i, p in enumerate(points)),
        "x_ticks": [Tick(kx(k), str(k)) for k, _ in curve],
        "y_ticks": _percent_ticks(),
    }


def histogram_plot(scores: list[float], *, threshold: float | None = None, bins: int = HISTOGRAM_BINS) -> dict:
    """Scores in [0, 1] in `bins` equal bins (1.0 falls in the last); one bar per bin."""
    counts = [0] * bins
    for score in scores:
        counts[min(bins - 1, max(0, int(score * bins)))] += 1
    tallest = max(counts, default=0) or 1
    step = PLOT_W / bins
    bars = []
    for i, count in enumerate(counts):
        height = round(PLOT_H * count / tallest, 1)
        low, high = i / bins, (i + 1) / bins
        bars.append(Bar(round(LEFT + i * step + 1, 1), round(TOP + PLOT_H - height, 1), round(step - 2, 1), height, count,
                        f"{count} with a score from {low:.1f} to {high:.1f}{'' if i < bins - 1 else ' (inclusive)'}"))
    return {
        **_frame(),
        "bars": bars,
        "counts": counts,
        "x_ticks": [Tick(_x(f), f"{f:g}") for f in (0, 0.5, 1)],
        "y_ticks": [Tick(_y(0), "0"), Tick(_y(1), str(tallest))],
        "threshold_x": None if threshold is None else _x(threshold),
        "threshold_label": "" if threshold is None else f"pass ≥ {threshold:g}",
    }


def scatter_plot(points: list[tuple[int, float, int]], labels: dict[int, str]) -> dict:
    """Rubric score (x, 0–1) against the expert's rank (y: 1, the best, at the top).
    `points`: (rollout id, score, rank) as verification.selectors.ranking_agreement gives them."""
    count = max((rank for _, _, rank in points), default=1)

    def ry(rank: int) -> float:  # inset from the axes so no dot sits on one
        return _y(0.94 - 0.88 * (rank - 1) / (count - 1)) if count > 1 else _y(0.5)

    dots = [Point(_x(score), ry(rank), f"{labels.get(pk, pk)}: your rank {rank}, rubric score {score:.2f}") for pk, score, rank in points]
    return {
        **_frame(),
        "points": dots,
        "x_ticks": [Tick(_x(f), f"{f:g}") for f in (0, 0.5, 1)],
        "y_ticks": [Tick(ry(1), "1st"), *([Tick(ry(count), ordinal(count))] if count > 1 else [])],
    }


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
