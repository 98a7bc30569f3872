"""Markers that flow along a route when a chart is drawn: the tokens of the pass diagram (viz_app/charts/one_pass.py)
gliding from the block the visitor had open to the one just opened, block by block, as Transformer Explainer
(Cho et al. 2024) moves GPT-2's data between its steps.

A figure asks for it with `layout.meta = {"flow": [[x, y], ...]}`: the route in data coordinates, from where the
markers come from to where the figure draws them (its last trace's markers). `element` turns that into the HTML the
page writes beside the chart (`st.html`): CSS keyframes, and a line of script that starts them.

Why CSS and not plotly's own `layout.transition` or frames: st.plotly_chart (Streamlit 1.67) makes each chart's
element id from its figure, and the browser mounts a chart anew whenever that id changes, so a changed figure is
always drawn from scratch (Plotly.newPlot), never updated by Plotly.react, and plotly's transitions never play; a
plotly animation needs a button. A CSS animation plays on the markers the new chart draws. Each keyframe shifts the
markers by the CSS `translate` property (composed with the `transform` plotly places them by), in percent of the
chart's width (an SVG element's reference box is its SVG viewport: the whole figure, whose width only the browser
knows) less the margins, and in pixels up or down (the height is the figure's).

Why the script: the rest of the page (the step the visitor opens) comes from the same run a moment later, and
drawing its charts can hold the browser's main thread, which moves SVG, for longer than the flow lasts (1.8 s in
headless Chromium on a busy 2-core machine): the markers would jump. So they wait at the route's start (the animation
paused) until the run has ended (Streamlit's `data-test-script-state` on the app, at most RUN_WAIT_MS) and the browser
is idle (`requestIdleCallback`, at most IDLE_WAIT_MS), then flow. A visitor whose system asks for reduced motion gets
no animation (`prefers-reduced-motion`): the markers stand at their place from the start.
"""
from __future__ import annotations

import re

import plotly.graph_objects as go

SECONDS_PER_BLOCK = 0.3  # the time the markers take from one stop of the route to the next
SHORTEST_S, LONGEST_S = 0.6, 2.0  # a whole flow, however few or many stops it passes
RUN_WAIT_MS, IDLE_WAIT_MS = 10_000, 2500  # the longest the markers wait for the run's end, then for an idle browser
START = "<style>@keyframes flow-"  # how all that `element` writes begins (the app's own CSS and script, no visitor text)


def route(figure: go.Figure) -> list[tuple[float, float]]:
    """The route the figure asks its last trace's markers to flow along, [] for none."""
    meta = figure.layout.meta
    stops = meta.get("flow") if isinstance(meta, dict) else None
    return [(float(x), float(y)) for x, y in stops] if stops and len(stops) > 1 else []


def duration(stops: int) -> float:
    """Seconds for a route of `stops` points: SECONDS_PER_BLOCK per step from one to the next, within bounds."""
    return min(LONGEST_S, max(SHORTEST_S, SECONDS_PER_BLOCK * (stops - 1)))


def offsets(figure: go.Figure) -> list[tuple[float, float, float]]:
    """Each stop of the route as the shift from the markers' drawn place: (percent of the figure's width, pixels
    taken off that for the margins, pixels down), the last (0, 0, 0)."""
    stops = route(figure)
    if not stops:
        return []
    layout = figure.layout
    (x0, x1), (y0, y1) = layout.xaxis.range, layout.yaxis.range
    margin = layout.margin
    across, tall = margin.l + margin.r, layout.height - margin.t - margin.b  # the figure's margins and plot height
    end_x, end_y = stops[-1]
    return [(100 * (x - end_x) / (x1 - x0), across * (x - end_x) / (x1 - x0), -tall * (y - end_y) / (y1 - y0))
            for x, y in stops]


def element(figure: go.Figure, key: str) -> str:
    """The HTML that moves the last trace's markers of the chart drawn under Streamlit's `key` along the figure's
    route, once, when the chart is drawn ("" for a figure with no route): a <style> with the keyframes, paused until
    a <script> marks the page's body once the browser is idle, and hiding the element it stands in (no gap on the
    page)."""
    shifts = offsets(figure)
    if not shifts:
        return ""
    name = re.sub(r"[^a-zA-Z0-9_-]", "-", key.strip())  # as Streamlit spells the key in its class `st-key-...`
    dots = f".st-key-{name} .scatterlayer .trace:last-child .point"
    frames = " ".join(f"{100 * i / (len(shifts) - 1):.2f}% {{translate: calc({percent + 0:.4f}% {'+' if margin <= 0 else '-'} "
                      f"{abs(margin):.3f}px) {down + 0:.3f}px}}" for i, (percent, margin, down) in enumerate(shifts))
    return (f"{START}{name} {{{frames}}} @media (prefers-reduced-motion: no-preference) {{{dots} {{transform-box: "
            f"view-box; animation: flow-{name} {duration(len(shifts)):.2f}s ease-in-out both paused}} "
            f"body[data-flowing=\"{name}\"] {dots} {{animation-play-state: running}}}} "
            f"[data-testid=stElementContainer]:has(script[data-flow]) {{display: none}}</style>"
            f"<script data-flow>{START_SCRIPT.replace('NAME', name)}</script>")


START_SCRIPT = " ".join(f"""(() => {{
    delete document.body.dataset.flowing;
    const app = document.querySelector('[data-testid=stApp]'), begun = performance.now();
    const flow = () => {{ document.body.dataset.flowing = "NAME"; }};
    const idle = () => (window.requestIdleCallback || setTimeout)(flow, {{timeout: {IDLE_WAIT_MS}}});
    const wait = () => app && app.dataset.testScriptState === 'running' && performance.now() - begun < {RUN_WAIT_MS}
        ? setTimeout(wait, 50) : idle();
    wait(); }})();""".split())  # marks the body with the chart's NAME once the run has ended and the browser is idle
