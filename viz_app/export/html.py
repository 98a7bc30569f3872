"""One self-contained HTML file from the app's charts: a view or a whole lesson that opens in any browser with no
server and no network. Plotly's own export, with plotly.js inlined once and MathJax off; nothing is fetched.
Every text is escaped here (a lesson's **bold** is the only markup kept). No Streamlit here: the CLI uses it too.
"""
from __future__ import annotations

import html
import re
from dataclasses import dataclass, field
from datetime import date

import plotly.graph_objects as go
import plotly.io as pio
from plotly.offline import get_plotlyjs

from viz_app.charts.base import Chart

FIGURE_CONFIG = {"displaylogo": False, "responsive": True, "toImageButtonOptions": {"format": "png", "scale": 2}}
STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; max-width: 1100px; margin: 2em auto;
       padding: 0 1em; color: #262730; line-height: 1.5; }
h1 { font-size: 1.9em; margin-bottom: 0.2em; } h2 { margin-top: 2.2em; border-top: 1px solid #ddd; padding-top: 1em; }
.meta, .caption { color: #6b6f76; font-size: 0.92em; }
.notice { background: #eef4fb; border-left: 4px solid #3b6fb6; padding: 0.5em 0.9em; }
.problem { background: #fff4e5; border-left: 4px solid #e08a2e; padding: 0.5em 0.9em; }
details { margin: 0.8em 0; } summary { cursor: pointer; font-weight: 600; }
.chart { margin: 1.2em 0; }
"""


@dataclass(frozen=True)
class Section:
    """A part of the document: a heading, paragraphs, charts; questions whose answers open on click."""

    heading: str
    paragraphs: tuple[str, ...] = ()
    charts: tuple[Chart, ...] = ()
    questions: tuple[tuple[str, str], ...] = ()  # (question, answer)
    notice: str = ""
    notes: tuple[str, ...] = ()  # small print: where the view is in the app, what could not be drawn
    problems: tuple[str, ...] = field(default=())


def document(title: str, sections: list[Section], meta: str = "") -> str:
    """The whole HTML file as a string (plotly.js inside where a section has a chart to draw)."""
    body = [f"<h1>{html.escape(title)}</h1>"]
    plotly = f'<script type="text/javascript">{get_plotlyjs()}</script>\n' if any(s.charts for s in sections) else ""
    if meta:
        body.append(f'<p class="meta">{html.escape(meta)} · saved {date.today().isoformat()} from Inside BERT</p>')
    body += [_section(section, number) for number, section in enumerate(sections, 1)]
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n{plotly}"
        "</head>\n<body>\n" + "\n".join(body) + "\n</body>\n</html>\n"
    )


def view_document(title: str, charts: list[Chart], meta: str = "", notes: tuple[str, ...] = ()) -> str:
    """One page's view: its charts and their captions under one heading."""
    return document(title, [Section("", charts=tuple(charts), notes=notes)], meta)


def _section(section: Section, number: int) -> str:
    parts = [f"<h2>{html.escape(section.heading)}</h2>"] if section.heading else []
    parts += [f"<p>{paragraph_html(p)}</p>" for text in section.paragraphs for p in _paragraphs(text)]
    parts += [f'<p class="problem">{html.escape(p)}</p>' for p in section.problems]
    for index, chart in enumerate(section.charts):
        parts.append(f'<div class="chart">{_figure(chart, f"figure-{number}-{index}")}')
        if chart.caption:
            parts.append(f'<p class="caption">{html.escape(chart.caption)}</p>')
        parts.append("</div>")
    for question, answer in section.questions:
        parts.append(f"<p><strong>Question.</strong> {paragraph_html(question)}</p>")
        parts.append("<details><summary>Answer</summary>"
                     + "".join(f"<p>{paragraph_html(p)}</p>" for p in _paragraphs(answer)) + "</details>")
    if section.notice:
        parts.append(f'<p class="notice"><strong>Notice:</strong> {paragraph_html(section.notice)}</p>')
    parts += [f'<p class="caption">{html.escape(note)}</p>' for note in section.notes]
    return "<section>\n" + "\n".join(parts) + "\n</section>"


def _figure(chart: Chart, div_id: str) -> str:
    """The figure as a div and the script that draws it (plotly escapes '<' in its JSON, so no text ends the script)."""
    figure = go.Figure(chart.figure).update_layout(template="plotly_white")  # the app draws on white too
    return pio.to_html(figure, full_html=False, include_plotlyjs=False, include_mathjax=False,
                       config=FIGURE_CONFIG, div_id=div_id, default_width="100%")


def _paragraphs(text: str) -> list[str]:
    """Blank lines separate paragraphs; single line breaks are spaces, as in Markdown."""
    return [" ".join(block.split()) for block in re.split(r"\n\s*\n", text) if block.strip()]


def paragraph_html(text: str) -> str:
    """Escaped text; **bold** and `code` kept (the only Markdown lessons use)."""
    escaped = html.escape(text)
    escaped = re.sub(r"\*\*(.+?)\*\*", r"<strong>\1</strong>", escaped)
    return re.sub(r"`(.+?)`", r"<code>\1</code>", escaped)
