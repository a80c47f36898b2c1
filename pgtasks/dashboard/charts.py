"""Charts as inline SVG, drawn on the server from numbers only (no user text inside), so a
live update can swap one in without a script library."""

from __future__ import annotations

# The chart's own units are CSS pixels (base.html shows it at this size): its labels are drawn
# at the font size they are read at, never scaled down.
WIDTH, HEIGHT = 300, 64
LABELS = 13  # the label row above the bars


def activity_svg(series: list[tuple[int, int, int]]) -> str:
    """Bars of tasks started per bucket, the failed part of each in red, oldest on the left;
    above them the scale (the tallest bar's count per minute) and the span."""
    if not series:
        return f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"></svg>'
    top = max(1, *(started for _, started, _ in series))
    step = WIDTH / len(series)
    bars = []
    for i, (_, started, failed) in enumerate(series):
        x, w = i * step + 0.5, max(step - 1, 0.5)
        for css, n in (("ok", started), ("failed", failed)):
            if n:
                h = (HEIGHT - LABELS) * n / top
                bars.append(
                    f'<rect class="{css}" x="{x:.1f}" y="{HEIGHT - h:.1f}" width="{w:.1f}" height="{h:.1f}"/>'
                )
    labels = (
        f'<text x="1" y="10" class="axis">max {top}/min</text>'
        f'<text x="{WIDTH - 1}" y="10" class="axis" text-anchor="end">'
        f"{len(series)} min, now on the right</text>"
    )
    return (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="tasks started per minute, at most {top}">{labels}{"".join(bars)}</svg>'
    )
