"""The "What came after BERT" section of the "How BERT was trained" page, drawn: the changes on the visitor's text
(the trainer's own masking), then the tiny runs' settings and their losses, run as the computation
viz_app/specs/how_bert_was_trained/successors.py declares (`RUNS`)."""
from __future__ import annotations

import streamlit as st

from bert.errors import InvalidInputError
from bert.pretraining import walkthrough
from bert.pretraining.data import Batch
from bert.pretraining.successors import OBJECTIVES, ComparisonSettings, comparison_cost
from bert.tokenizer import BertTokenizer
from viz_app import heavy
from viz_app.app import show, state, widgets
from viz_app.app.page_context import Context
from viz_app.app.text import joined, markdown
from viz_app.charts import training as charts
from viz_app.specs.how_bert_was_trained.successors import CHANGES, RUN_NOTE, RUNS, RunsWork


def render(context: Context | None, tokenizer: BertTokenizer, text: str, batch: Batch, seed: int) -> None:
    for who, change, paper in CHANGES:
        show.markdown("**{}** ({}): {}.", who, paper, change)
    st.subheader("On your text")
    for epoch in (0, 1):
        dynamic = walkthrough.mask_example(tokenizer, batch, seed, step=epoch, static=False)
        st.markdown(f"**Dynamic masks, time {epoch + 1} the model reads it**<br>{charts.masking_chips(dynamic, 'read')}",
                    unsafe_allow_html=True)  # tokens escaped in the chips
    static = walkthrough.mask_example(tokenizer, batch, seed, static=True)
    st.markdown(f"**Static masks, every time**<br>{charts.masking_chips(static, 'read')}", unsafe_allow_html=True)
    spans = walkthrough.mask_example(tokenizer, batch, seed, max_ngram=3)
    st.markdown(f"**ALBERT's n-gram masks**<br>{charts.masking_chips(spans, 'read')}", unsafe_allow_html=True)
    st.caption("Drawn by the trainer's own masking (trainer.step_masks) for your text with the seed above.")

    st.subheader("Each objective in a tiny run")
    settings, objectives = _settings_form()
    show.caption("{}", RUN_NOTE.format(sentences=settings.sentences))
    if not objectives:
        st.info("Choose at least one objective to train.")
        return
    if context is None:
        st.info("Open this page from the app's home page to train the runs here.")
        return
    cost = comparison_cost(settings, objectives)
    show.caption("Cost: {}, on a model this small seconds of one core.", cost.describe())
    key = ("successors", text, settings, objectives)
    if st.button("Train them", icon=":material/play_arrow:", key="successors_train"):
        st.session_state["successors_asked"] = key
    if st.session_state.get("successors_asked") != key:
        return
    st.button("Stop", icon=":material/stop:", key="successors_stop", on_click=st.session_state.pop, args=("successors_asked", None))
    try:
        runs = heavy.run(context, RUNS, RunsWork(text, settings, objectives, tokenizer.vocab_size), key="successors")
    except InvalidInputError as error:  # no sentence to train on
        show.info("{}.", error)
        return
    if runs is None:  # over the budget: the page has said why
        return
    labels = {objective: OBJECTIVES[objective][0] for objective in runs}
    widgets.show_chart(charts.successor_losses(runs, labels), key="successor_losses")
    show.markdown("{}", joined(" · ", (markdown("**{}**: {:.2f} after {} steps ({:.0f} s)", labels[o], run.heldout_loss[-1],
                                                run.steps[-1], run.seconds) for o, run in runs.items())))


def _settings_form() -> tuple[ComparisonSettings, tuple[str, ...]]:
    steps, seed, chosen = st.columns([1, 1, 4])
    steps = int(steps.number_input("Steps", 10, 400, step=10, **state.kept("successors_steps", range(10, 401))))
    seed = int(seed.number_input("Seed", 0, 1_000_000, **state.kept("successors_seed", range(1_000_001))))
    state.clamp_subset("successors_objectives", list(OBJECTIVES))
    objectives = chosen.multiselect("Objectives", list(OBJECTIVES), format_func=lambda o: OBJECTIVES[o][0],
                                    **state.kept("successors_objectives"))
    return ComparisonSettings(steps=steps, seed=seed), tuple(o for o in OBJECTIVES if o in objectives)
