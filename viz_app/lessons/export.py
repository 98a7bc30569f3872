"""A whole lesson as one self-contained HTML handout: every step's text, figures for the loaded model, questions
with their answers folded in <details>. What "Download this lesson" and `python -m viz_app.export.lesson` write."""
from __future__ import annotations

from typing import Callable

from viz_app.charts.base import Chart
from viz_app.export.html import Section, document
from viz_app.lessons.computed import PerModel
from viz_app.lessons.format import PAGES, Lesson
from viz_app.lessons.resolve import ResolvedStep, step_state
from viz_app.lessons.steps import StepWork, WorkedStep, step_computation
from viz_app.app.models import LoadedModel
from viz_app.specs.base import Inputs

WorkedFor = Callable[[StepWork], WorkedStep]


def lesson_works(lesson: Lesson) -> list[StepWork]:
    """Every step of the handout, as its step computation's work (viz_app/lessons/steps.py): a step without a
    sentence reads the one before, as in the presenter view; the texts are escaped as HTML, not Markdown."""
    session, works = {}, []
    for index in range(len(lesson.steps)):
        works.append(StepWork.of(lesson, index, session, escape=False))
        session |= step_state(lesson, index, session)
    return works


def lesson_html(lesson: Lesson, loaded: LoadedModel, model_name: str, base_url: str | None = None,
                worked_for: WorkedFor | None = None) -> str:
    """The handout. base_url: the app's address, to give each step its link (None: name the page only).
    worked_for: each step's computation run (the app runs them through its caches, in the download's job); default
    here, with what several steps read computed once."""
    if worked_for is None:
        per_model = PerModel.of(loaded)  # what several steps, their values and their figures read: computed once
        computation = step_computation(lambda _: per_model)
        worked_for = lambda work: computation.compute(Inputs(loaded), work)  # noqa: E731
    sections, drawn = [], {}
    for work in lesson_works(lesson):
        worked = worked_for(work)
        step = worked.step
        view = (step.page, tuple(step.query(None).items()))  # the same page in the same state: the same figures
        if view in drawn:
            section = step_section(step, [], model_name, base_url, same_as=drawn[view])
        else:
            section = step_section(step, list(worked.figures), model_name, base_url)
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
