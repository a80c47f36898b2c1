"""Charts as inline SVG, drawn on the server from numbers only (no user text inside), so a
live update can swap one in without a script library."""

from __future__ import annotations

WIDTH, HEIGHT = 600, 120


def activity_svg(series: list[tuple[int, int, int]]) -> str:
    """Bars of tasks started per bucket, the failed part of each in red, oldest on the left."""
    if not series:
        return f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img"></svg>'
    top = max(1, *(started for _, started, _ in series))
    step = WIDTH / len(series)
    bars = []
    for i, (_, started, failed) in enumerate(series):
        x, w = i * step + 1, step - 2
        for css, n in (("ok", started), ("failed", failed)):
            if n:
                h = (HEIGHT - 14) * n / top
                bars.append(
                    f'<rect class="{css}" x="{x:.1f}" y="{HEIGHT - h:.1f}" width="{w:.1f}" height="{h:.1f}"/>'
                )
    label = f'<text x="2" y="11" class="axis">max {top}/min</text>'
    return f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img">{label}{"".join(bars)}</svg>'
