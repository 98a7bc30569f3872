"""A whole lesson as one self-contained HTML handout: every step's text, figures for the loaded model, questions
with their answers folded in <details>. What "Download this lesson" and `python -m viz_app.export.lesson` write."""
from __future__ import annotations

from typing import Callable

from viz_app.app.forward import InputProblem
from viz_app.charts.base import Chart
from viz_app.export.html import Section, document
from viz_app.lessons.format import PAGES, Lesson
from viz_app.lessons.resolve import ResolvedStep, resolve
from viz_app.lessons.views import PerModel, view_charts
from viz_app.app.models import LoadedModel

ChartsFor = Callable[[ResolvedStep], list[Chart]]


def lesson_html(lesson: Lesson, loaded: LoadedModel, model_name: str, base_url: str | None = None,
                charts_for: ChartsFor | None = None) -> str:
    """The handout. base_url: the app's address, to give each step its link (None: name the page only).
    charts_for: how to build a step's charts (the app passes a cached one); default views.view_charts."""
    per_model = PerModel.of(loaded)  # what several steps, their values and their figures read: computed once
    if charts_for is None:
        charts_for = lambda step: view_charts(step.page, loaded, step.state, per_model)  # noqa: E731
    sections, session, drawn = [], {}, {}
    for index in range(len(lesson.steps)):
        step = resolve(lesson, index, loaded, session, per_model=per_model)
        session |= step.state  # a step without a sentence keeps the one before, as in the presenter view
        view = (step.page, tuple(step.query(None).items()))  # the same page in the same state: the same figures
        if view in drawn:
            section = step_section(step, [], model_name, base_url, same_as=drawn[view])
        else:
            section = step_section(step, _charts(step, charts_for), model_name, base_url)
            drawn[view] = step.number if section.charts else None
        sections.append(section)
    meta = f"{lesson.about} Model: {model_name} ({loaded.summary.one_line()})"
    return document(lesson.title, sections, meta)


def step_section(step: ResolvedStep, charts: list[Chart], model_name: str, base_url: str | None,
                 same_as: int | None = None) -> Section:
    """same_as: an earlier step that drew the same view (its figures are not repeated)."""
    page_title = PAGES[step.page][1]
    where = f"In the app: the {page_title} page"
    where += f", {step.link(base_url, model_name)}" if base_url else " (open it with this step's sentence to explore)"
    if charts:
        notes = [where]
    elif same_as:
        notes = [f"The figures are those of step {same_as}, above. {where}."]
    else:
        notes = [f"{where}. This step's view is drawn in the app only."]
    questions = ((step.question, step.answer),) if step.question else ()
    return Section(f"Step {step.number} of {step.total}: {step.title}", (step.text,), tuple(charts), questions,
                   step.notice, tuple(notes), step.problems)


def _charts(step: ResolvedStep, charts_for: ChartsFor) -> list[Chart]:
    try:
        return charts_for(step)
    except InputProblem:
        return []  # the step's text says what to type; the section notes the app
