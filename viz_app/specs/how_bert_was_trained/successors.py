"""The "What came after BERT" section of the "How BERT was trained" page: what RoBERTa, ALBERT and ELECTRA changed
in pre-training, each on the visitor's text, then one tiny run per objective through the project's own trainer
(bert/pretraining/successors.py) through the server's budget and a heavy slot (`RUNS`, run by
viz_app/heavy.py's `run`), its cost stated before it starts, stopped by any change of the page, kept per text
and settings."""
from __future__ import annotations

from dataclasses import dataclass

import streamlit as st

from bert.errors import InvalidInputError
from bert.pretraining import walkthrough
from bert.pretraining.data import Batch
from bert.pretraining.successors import OBJECTIVES, ComparisonSettings, compare, comparison_cost
from bert.tokenizer import BertTokenizer
from viz_app import heavy
from viz_app.app import state, widgets
from viz_app.charts import training as charts
from viz_app.app.page_context import Context
from viz_app.specs.base import Computation
from viz_app.app.text import escape_markdown

CHANGES = (  # (who, what changed, its paper)
    ("RoBERTa", "masks redrawn every time a sentence comes back (dynamic), instead of once when the data was prepared "
                "(static); no next-sentence pairs: each input is full sentences packed together", "Liu et al. 2019, sections 4.1 and 4.2"),
    ("ALBERT", "spans of up to 3 word pieces hidden together, short spans the most often (p(n) ∝ 1/n); next-sentence pairs "
               "replaced by sentence order: are A and B in order, or swapped?", "Lan et al. 2020, section 4.1"),
    ("ELECTRA", "a small generator (a masked LM) fills the hidden positions with its own guesses; the model, the "
                "discriminator, says for every token whether it is the original or a replacement, so every token teaches "
                "it something, not only the 15% hidden (loss = generator's + 50 × discriminator's)", "Clark et al. 2020, section 2"),
)
RUN_NOTE = ("One tiny model per objective (1 layer, hidden 64), trained from scratch on your text and {sentences} sentences "
            "of the tiny corpus (bert/data/tiny_corpus.txt.gz), so that each sentence comes back several times; the held-out "
            "sentences are ones none of them trains on. A miniature, seconds of one core: what the papers found with "
            "weeks of TPUs need not show here, and a different seed can order the lines differently.")


@dataclass(frozen=True)
class RunsWork:
    text: str  # the visitor's text, trained on with the tiny corpus
    settings: ComparisonSettings
    objectives: tuple[str, ...]  # keys of OBJECTIVES, in their order
    vocab_size: int  # the built-in model's vocabulary, which the tiny models read


RUNS = Computation(  # one tiny model per objective, on the threads the server set at start
    "how_bert_was_trained.successors", lambda work: "Training one tiny model per objective",
    cost=lambda inputs, work: comparison_cost(work.settings, work.objectives),
    compute=lambda inputs, work: compare(work.text, work.settings, work.objectives),
    counted_at=lambda inputs, work: work.settings.config("bert", work.vocab_size), work=RunsWork)


def render(context: Context | None, tokenizer: BertTokenizer, text: str, batch: Batch, seed: int) -> None:
    for who, change, paper in CHANGES:
        st.markdown(f"**{who}** ({paper}): {change}.")
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
    st.caption(RUN_NOTE.format(sentences=settings.sentences))
    if not objectives:
        st.info("Choose at least one objective to train.")
        return
    if context is None:
        st.info("Open this page from the app's home page to train the runs here.")
        return
    cost = comparison_cost(settings, objectives)
    st.caption(f"Cost: {cost.describe()}, on a model this small seconds of one core.")
    key = ("successors", text, settings, objectives)
    if st.button("Train them", icon=":material/play_arrow:", key="successors_train"):
        st.session_state["successors_asked"] = key
    if st.session_state.get("successors_asked") != key:
        return
    st.button("Stop", icon=":material/stop:", key="successors_stop", on_click=st.session_state.pop, args=("successors_asked", None))
    try:
        runs = heavy.run(context, RUNS, RunsWork(text, settings, objectives, tokenizer.vocab_size), key="successors")
    except InvalidInputError as error:  # no sentence to train on
        st.info(f"{escape_markdown(str(error))}.")
        return
    if runs is None:  # over the budget: the page has said why
        return
    labels = {objective: OBJECTIVES[objective][0] for objective in runs}
    widgets.show_chart(charts.successor_losses(runs, labels), key="successor_losses")
    st.markdown(" · ".join(f"**{escape_markdown(labels[o])}**: {run.heldout_loss[-1]:.2f} after {run.steps[-1]} steps "
                           f"({run.seconds:.0f} s)" for o, run in runs.items()))


def _settings_form() -> tuple[ComparisonSettings, tuple[str, ...]]:
    steps, seed, chosen = st.columns([1, 1, 4])
    steps = int(steps.number_input("Steps", 10, 400, step=10, **state.kept("successors_steps", range(10, 401))))
    seed = int(seed.number_input("Seed", 0, 1_000_000, **state.kept("successors_seed", range(1_000_001))))
    state.clamp_subset("successors_objectives", list(OBJECTIVES))
    objectives = chosen.multiselect("Objectives", list(OBJECTIVES), format_func=lambda o: OBJECTIVES[o][0],
                                    **state.kept("successors_objectives"))
    return ComparisonSettings(steps=steps, seed=seed), tuple(o for o in OBJECTIVES if o in objectives)
