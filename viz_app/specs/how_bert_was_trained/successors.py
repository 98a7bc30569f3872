"""The "What came after BERT" section of the "How BERT was trained" page: what RoBERTa, ALBERT and ELECTRA changed
in pre-training, each on the visitor's text, then one tiny run per objective through the project's own trainer
(bert/pretraining/successors.py), its cost stated before it starts, stopped by any change of the page, kept per
text and settings (viz_app/cache.py)."""
from __future__ import annotations

import streamlit as st

from bert.errors import InvalidInputError
from bert.pretraining import walkthrough
from bert.pretraining.data import Batch
from bert.pretraining.successors import OBJECTIVES, ComparisonSettings, comparison_cost
from bert.tokenizer import BertTokenizer
from viz_app import cache
from viz_app.server import heavy
from viz_app.app import widgets
from viz_app.charts import training as charts
from viz_app.app.page_context import Context
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
    if not heavy.allowed(context, cost, "successors", config=settings.config("bert", tokenizer.vocab_size)):
        return
    st.button("Stop", icon=":material/stop:", key="successors_stop", on_click=st.session_state.pop, args=("successors_asked", None))
    with heavy.job(context, cost, "Training one tiny model per objective", config=settings.config("bert", tokenizer.vocab_size)):
        try:
            runs = cache.successor_runs(text, settings, objectives)
        except InvalidInputError as error:  # no sentence to train on
            st.info(f"{escape_markdown(str(error))}.")
            return
    labels = {objective: OBJECTIVES[objective][0] for objective in runs}
    widgets.show_chart(charts.successor_losses(runs, labels), key="successor_losses")
    st.markdown(" · ".join(f"**{escape_markdown(labels[o])}**: {run.heldout_loss[-1]:.2f} after {run.steps[-1]} steps "
                           f"({run.seconds:.0f} s)" for o, run in runs.items()))


def _settings_form() -> tuple[ComparisonSettings, tuple[str, ...]]:
    steps, seed, chosen = st.columns([1, 1, 4])
    steps = int(steps.number_input("Steps", 10, 400, ComparisonSettings.steps, step=10, key="successors_steps"))
    seed = int(seed.number_input("Seed", 0, 1_000_000, 0, key="successors_seed"))
    objectives = chosen.multiselect("Objectives", list(OBJECTIVES), default=list(OBJECTIVES), key="successors_objectives",
                                    format_func=lambda o: OBJECTIVES[o][0])
    return ComparisonSettings(steps=steps, seed=seed), tuple(o for o in OBJECTIVES if o in objectives)
