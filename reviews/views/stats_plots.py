"""Coordinates for the reviewer dashboard's inline-SVG plots (no JS: the CSP forbids inline
script). Pure functions of the selectors' numbers; the template draws the shapes and
escapes every label. Same frame and shapes as verification.views.plots."""

from reviews.selectors.stats import QueueDay, ReviewerRow
from verification.views.plots import BOTTOM, HEIGHT, LEFT, RIGHT, TOP, WIDTH, Bar, Point, Tick

PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
NAME_W = 96  # room for the reviewers' names left of the bars
BAR_ROW = 20


def _path(points: list[Point]) -> str:
    return " ".join(f"{'M' if i == 0 else 'L'}{p.x},{p.y}" for i, p in enumerate(points))


def queue_plot(days: list[QueueDay]) -> dict:
    """Open at each day's end as an area, submitted and decided per day as lines."""
    tallest = max((max(d.submitted, d.decided, d.waiting) for d in days), default=0) or 1
    step = PLOT_W / max(len(days) - 1, 1)

    def x(i: int) -> float:
        return round(LEFT + i * step, 1)

    def y(value: int) -> float:
        return round(TOP + (1 - value / tallest) * PLOT_H, 1)

    def label(d: QueueDay) -> str:
        return f"{d.day.day} {d.day:%b}: {d.submitted} submitted, {d.decided} decided, {d.waiting} open at day end"

    waiting = [Point(x(i), y(d.waiting), label(d)) for i, d in enumerate(days)]
    bottom = TOP + PLOT_H
    area = f"M{x(0)},{bottom} " + " ".join(f"L{p.x},{p.y}" for p in waiting) + f" L{x(len(days) - 1)},{bottom} Z" if days else ""
    ticks = sorted({0, len(days) // 2, len(days) - 1}) if days else []
    return {
        "width": WIDTH, "height": HEIGHT, "left": LEFT, "right": WIDTH - RIGHT, "top": TOP, "bottom": bottom,
        "middle": round(LEFT + PLOT_W / 2, 1),
        "area": area,
        "waiting_path": _path(waiting),
        "submitted_path": _path([Point(x(i), y(d.submitted), "") for i, d in enumerate(days)]),
        "decided_path": _path([Point(x(i), y(d.decided), "") for i, d in enumerate(days)]),
        "points": waiting,  # hover targets: one per day, its <title> tells the day's three numbers
        "x_ticks": [Tick(x(i), f"{days[i].day.day} {days[i].day:%b}") for i in ticks],
        "y_ticks": [Tick(y(0), "0"), Tick(y(tallest), str(tallest))],
    }


def approval_bars(rows: list[ReviewerRow]) -> dict:
    """One horizontal bar per reviewer: the share of their reviews that approve (0–100%)."""
    inner_w = WIDTH - NAME_W - RIGHT
    height = TOP + BAR_ROW * len(rows) + 24
    bars = []
    for i, row in enumerate(rows):
        width = round(inner_w * row.approval_rate, 1)
        bars.append(Bar(NAME_W, TOP + i * BAR_ROW + 3, width, BAR_ROW - 6, row.reviews,
                        f"{row.username}: approved {row.approvals} of {row.reviews} ({row.approval_rate:.0%})"))
    names = [Tick(round(TOP + i * BAR_ROW + BAR_ROW / 2, 1), row.username if len(row.username) <= 14 else row.username[:13] + "…")
             for i, row in enumerate(rows)]
    bottom = TOP + BAR_ROW * len(rows)
    return {
        "width": WIDTH, "height": height, "left": NAME_W, "right": WIDTH - RIGHT, "top": TOP, "bottom": bottom,
        "bars": bars, "names": names,
        "x_ticks": [Tick(round(NAME_W + inner_w * f, 1), f"{f:.0%}") for f in (0, 0.5, 1)],
    }
