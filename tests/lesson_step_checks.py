"""One lesson step made concrete for a model and checked (tests/lessons/test_lesson_steps.py walks a small random
model through every built-in step; tests/app/lessons/test_lessons_page.py the built-in model, beside the page the
class sees, reading what the app computed for the class, so the built-in model's steps are computed once): nothing
left uncomputed, every layer and head within the model, the figures drawn without Streamlit, and no more passes
through the model's layers than the step's cost (viz_app/lessons/steps.py) says (counted where the step is computed
afresh: every step of the small model's walk)."""
from __future__ import annotations

from viz_app.lessons.resolve import NOT_AVAILABLE, resolve
from viz_app.lessons.steps import step_cost
from viz_app.lessons.views import BUILDERS, PerModel, view_charts


class LayerPasses:
    """Rows through the model's transformer layers, over the number of layers: full forward passes and the
    layer-only passes of value zeroing and DecompX alike."""

    def __init__(self, model):
        self.rows, self.layers = 0, model.config.num_layers
        self.handles = [layer.register_forward_pre_hook(self._count) for layer in model.transformer]

    def _count(self, module, args):
        self.rows += args[0].shape[0]

    def close(self) -> float:
        for handle in self.handles:
            handle.remove()
        return self.rows / self.layers


def resolved_and_checked(lesson, index: int, loaded, session: dict, per_model: PerModel | None = None):
    """The step at `index` resolved for `loaded` (after the steps before it left `session`), with its cost; asserts
    that it holds as the module's docstring says. per_model: where its computations are kept (default: its own, so
    that every pass is counted; the app's stores, viz_app/lessons/session.py, to read what the app computed)."""
    cost = step_cost(lesson, index, loaded, session)
    counted = LayerPasses(loaded.model)
    per_model = per_model or PerModel.of(loaded)  # the values and figures share runs, as in the app
    try:
        step = resolve(lesson, index, loaded, session, per_model=per_model)
        charts = view_charts(step.page, loaded, step.state, per_model)
    finally:
        passes = counted.close()
    where = f"{lesson.name} step {step.number}"
    assert not step.problems, (where, step.problems)
    assert NOT_AVAILABLE not in step.text + step.question + step.answer, where
    assert "{" not in step.text, (where, step.text)
    for key, limit in (("layer", loaded.summary.layers), ("head", loaded.summary.heads)):
        assert 0 <= step.state.get(key, 0) < limit, where
    if step.page in BUILDERS and step.page not in ("sentence_tasks", "compare_models"):  # classes need a
        assert charts, where  # classifier head; a comparison, a model B the step names
    assert all(chart.figure.data for chart in charts), where
    assert passes <= cost.forward_passes, (where, passes, cost)
    return step, cost
