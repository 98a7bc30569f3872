"""The figures a page shows for a given state, built in plain Python (no Streamlit): what a lesson step shows in
the presenter view and what an exported lesson contains. Each page's spec (viz_app/specs/) computes and draws
them, so a step shows what the page shows.

`view_charts(page, loaded, state)` returns the page's main charts, or an empty list for a page whose figures are
only drawn in the app (the step then says to open the page). The page's computations run through a `PerModel`
(viz_app/lessons/computed.py), which the step's computed values read too: the app passes its caches
(viz_app/lessons/session.py), an exported lesson one per lesson.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, Mapping

from bert.errors import BertError
from viz_app.charts.base import Chart
from viz_app.app.forward import PreparedInput, prepare_input
from viz_app.lessons.computed import PerModel
from viz_app.app.models import LoadedModel
from viz_app.app.navigation import LINK_PARAMS, PAGES
from viz_app.specs.base import Inputs, chosen_mask
from viz_app.specs.catalog import SPECS


class PageState:
    """One page's state for one model: the values the page would read, its prepared input, and the model's
    `PerModel`."""

    def __init__(self, loaded: LoadedModel, state: Mapping[str, Any], per_model: PerModel):
        self.loaded, self.state, self.per_model = loaded, state, per_model
        self.prepared: PreparedInput = prepare_input(loaded.tokenizer, self["text"], self["pair"], self["masks"],
                                                     self["truncate"], loaded.summary.max_positions)

    def __getitem__(self, key: str):
        return self.state.get(key, LINK_PARAMS[key].default)

    def mask_position(self, key: str) -> int | None:
        return chosen_mask(self[key], self.prepared.all_masks)


def spec_charts(spec, view: PageState) -> list[Chart]:
    """A page written as a spec (viz_app/specs/base.py): its computations for the step's settings, then the charts
    its LESSON_CHARTS names; [] where the page would say why it cannot run (a model without the head it reads)."""
    inputs = Inputs(view.loaded, view.prepared)
    settings = spec.Settings.from_state(view.state, inputs)
    try:  # through the PerModel: the step's values read the same results (its recorded pass, the causal runs)
        results = {name: view.per_model.computed(computation, view.prepared, work)
                   for name, (computation, work) in spec.computations(settings).items()}
    except BertError:
        return []
    charts = spec.view(settings, inputs, results)
    return [charts[name] for name in spec.LESSON_CHARTS if name in charts]


# url_path -> how a step draws it: its spec (`Page.spec`)
BUILDERS: dict[str, Callable[[PageState], list[Chart]]] = {
    url: functools.partial(spec_charts, SPECS[page.spec]) for url, page in PAGES.items() if page.spec}


def view_charts(page: str, loaded: LoadedModel, state: Mapping[str, Any],
                per_model: PerModel | None = None) -> list[Chart]:
    """The page's charts for this state; [] for a page drawn only in the app, or an input the page would refuse.
    per_model: the model's `PerModel` (default: a new `PerModel.of(loaded)`; pass one to share it between steps).
    Raises viz_app.app.forward.InputProblem for an input that cannot be run (empty, too long)."""
    builder = BUILDERS.get(page)
    return builder(PageState(loaded, state, per_model or PerModel.of(loaded))) if builder else []
