"""How BERT was trained: the masking draw and next-sentence pairs on your text, the loss of one example, and tiny
BERTs learning (live), masked-LM against left-to-right, and size against held-out loss (Devlin et al. 2019); then
what RoBERTa, ALBERT and ELECTRA changed, on your text and in tiny runs side by side."""
import pandas as pd
import streamlit as st

from bert.errors import BertError
from bert.pretraining import walkthrough
from viz_app import heavy
from viz_app.server import access
from viz_app.specs.how_bert_was_trained.examples import EXAMPLES, ExamplesWork
from viz_app import cache
from viz_app.app import live_run, show, successor_runs
from viz_app.app import models, page_context, state, widgets
from viz_app.app.navigation import LINK_PARAMS
from viz_app.server.access import Role
from viz_app.app import training_figures as figures
from viz_app.charts import training as charts

TASKS = LINK_PARAMS["pair_task"].choices  # name -> label
BUILTIN = models.ModelKey.of("minilm")  # its vocabulary draws the masks and pairs; its heads guess and score them

widgets.page_header(
    "How BERT was trained",
    "BERT learned from plain text with two exercises it could mark itself (Devlin et al. 2019, section 3.1 and "
    "appendix A): guess hidden words, and tell whether sentence B follows sentence A. Below, the project's own "
    "training code prepares your text exactly as it prepares its training data; then tiny BERTs learn in front of you.",
)
context = page_context.current()  # this page needs no picked model, only who is visiting
role = context.visitor.role if context is not None else Role.STUDENT  # run outside Home.py: nobody's powers
try:
    builtin = cache.load_model(BUILTIN)
except BertError as error:
    show.warning("The built-in model is missing ({}); the masking and pairs need its vocabulary.",
                 access.failure(error, role))
    st.stop()
tokenizer = builtin.tokenizer
widgets.contents({"masking": "Masking", "pairs": "Next-sentence pairs", "loss": "The loss", "tiny-bert": "A tiny BERT learns",
                  "mlm-vs-left-to-right": "Masked LM against left-to-right", "model-size": "Model size",
                  "after-bert": "After BERT"})

st.header("1. Masking: which words the model must guess", anchor="masking")
text = st.text_area("Your text (one or more sentences)", **state.kept("trained_text"))
seed_column, draw_column, whole_column = st.columns([1, 1, 2], vertical_alignment="bottom")
seed = int(seed_column.number_input("Seed", 0, 1_000_000, **state.kept("mask_seed", range(1_000_001))))
draw_column.button("Draw again", icon=":material/casino:", **state.filling(
    "mask_redraw", lambda pressed: {"mask_seed": st.session_state["mask_seed"] + 1}, event="on_click"))
whole_word = whole_column.toggle("Whole-word masking (hide all pieces of a word together)", **state.kept("mask_whole_word"))
try:
    batch, truncated = walkthrough.sentence_batch(tokenizer, text)
except BertError as error:
    show.info("Type some text above: {}.", error)
    st.stop()
masked = walkthrough.mask_example(tokenizer, batch, seed, whole_word, truncated)
st.markdown(charts.legend_chips(), unsafe_allow_html=True)  # our own words only
for label, row in (("The text", "text"), ("What the model reads", "read"), ("What the loss asks for", "labels")):
    st.markdown(f"**{label}**<br>{charts.masking_chips(masked, row)}", unsafe_allow_html=True)  # tokens escaped in the chips
show.caption("{}", figures.masking_summary(masked))
if truncated:
    show.caption("Only the first {} tokens are used, as in training.", walkthrough.MAX_LENGTH)

st.header("2. Next-sentence pairs", anchor="pairs")
task = st.radio("Pairs for", list(TASKS), format_func=TASKS.get, horizontal=True, **state.kept("pair_task", list(TASKS)))
try:
    pairs = walkthrough.sentence_pairs(tokenizer, text, seed, task)
except BertError as error:
    show.info("{}.", error)
    pairs = []
examples = None
if pairs and context is None:
    st.info("Open this page from the app's home page to see the built-in model's guesses and loss here.")
elif pairs:  # the built-in model's passes: one per pair, one for the loss, priced and run as a computation
    examples = heavy.run(context, EXAMPLES, ExamplesWork(text, seed, task, whole_word), model=BUILTIN)
for number, pair in enumerate(pairs, 1):
    st.markdown(f"**Pair {number}: {figures.pair_label(pair, task)}**<br>{charts.pair_chips(pair)}", unsafe_allow_html=True)
    if examples is not None and examples.follows:
        show.caption("The built-in model's guess: P(B follows A) = {:.0%}.", examples.follows[number - 1])
if pairs:
    show.caption("{}", figures.PAIRS_NOTE[task])

if examples is not None and examples.loss is not None:
    st.header("3. The loss for one example", anchor="loss")
    masked_pair = walkthrough.mask_example(tokenizer, pairs[0].batch, seed, whole_word)
    st.markdown(charts.masking_chips(masked_pair, "read"), unsafe_allow_html=True)  # tokens escaped in the chips
    loss = examples.loss
    mlm, nsp, total = st.columns(3)
    mlm.metric("Masked-LM loss", f"{loss.mlm:.3f}")
    nsp.metric("Next-sentence loss", f"{loss.nsp:.3f}")
    total.metric("Total (what training lowers)", f"{loss.total:.3f}")
    st.dataframe(pd.DataFrame({"position": loss.positions, "hidden token": loss.targets, "−log p(it)": loss.token_losses}),
                 hide_index=True)
    show.caption("{}", figures.LOSS_NOTE)

st.header("4. Watch a tiny BERT learn", anchor="tiny-bert")
show.caption("{}", figures.LIVE_NOTE)
if context is not None:  # a run is priced against this visitor's budget
    live_run.render(context)
else:
    st.info("Open the app with `streamlit run viz_app/Home.py` to train one here.")

st.header("5. Masked LM against left-to-right, in miniature", anchor="mlm-vs-left-to-right")
show.caption("{}", figures.DIRECTION_NOTE)
figures.direction_comparison()

st.header("6. Model size against held-out loss, in miniature", anchor="model-size")
show.caption("{}", figures.SIZE_NOTE)
figures.size_comparison()

st.header("7. What came after BERT", anchor="after-bert")
successor_runs.render(context, tokenizer, text, batch, seed)
