"""Masked prediction: hide tokens, see what the model guesses for each [MASK]. With ELECTRA's discriminator, which has
no masked-LM head: which words look replaced, the [MASK]s filled by a generator first. The page lays out the
widgets; what it computes and draws is its spec, viz_app/specs/prediction.py."""
import pandas as pd
import streamlit as st

from bert.errors import BertError, quoted
from viz_app import heavy
from viz_app.server import access
from viz_app import cache
from viz_app.app import analysis_widgets, models, show, state, widgets
from viz_app.app.models import ModelKey
from viz_app.app.text import filled_in_sentence, marked_sentence
from viz_app.specs import prediction as spec

widgets.page_header(
    "Masked prediction",
    "BERT was trained to fill in hidden words. Click tokens to hide them behind [MASK] (or type [MASK] in the "
    "sentence); the model reads the whole sentence, left and right, and guesses every [MASK] at once.",
)
context = widgets.require()
prepared = context.prepared
analysis_widgets.mask_chips(context)

NO_GENERATOR = "(none)"  # the generator picker's "leave the blanks as typed": no model's name (viz_app/server/settings.py)


def pick_generator():
    """The generator picker: the visitor's ELECTRA generators that share the discriminator's vocabulary (and, for
    whoever may open any folder, a folder box). The loaded generator, or None: blanks stay as typed."""
    offered = {c.source: c for c in cache.generator_choices(context.key, context.visitor.choices)}
    if context.visitor.role.may_choose_any_model:
        offered[models.FOLDER] = models.ModelChoice(models.FOLDER, "A local Hugging Face folder…")
    if not offered:
        st.caption("No ELECTRA generator with this model's vocabulary is on offer here, so the blanks stay as typed.")
        return None
    options = [NO_GENERATOR, *offered]
    first = next((s for s in offered if s != models.FOLDER), NO_GENERATOR)
    source = st.selectbox("Generator to fill the blanks", options, **state.kept("generator", options, first),
                          format_func=lambda s: "None: leave the blanks as typed" if s == NO_GENERATOR else offered[s].label,
                          help="ELECTRA's generator is a small masked LM trained beside the discriminator: it writes "
                               "a word into every [MASK], and the discriminator then tries to spot its words.")
    if source == NO_GENERATOR:
        return None
    folder = offered[source].folder
    if source == models.FOLDER:
        folder = st.text_input("Folder of the generator", **state.kept("generator_folder"),
                               placeholder="/path/to/an/electra/generator").strip()
        if not folder:
            st.caption("Type the path of an ELECTRA generator's folder (config.json, weights, vocab.txt).")
            return None
        source = folder
    key = ModelKey.of(source, folder)
    try:
        loaded = cache.load_model(key)
    except (BertError, OSError, ValueError, RuntimeError) as error:
        show.error("Could not load the generator {} ({}): the blanks stay as typed.", quoted(source),
                   access.failure(error, context.visitor.role))
        return None
    problem = cache.generator_problem(context.key, key)
    if problem:
        show.error("This generator cannot fill the blanks: {}.", problem)
        return None
    return loaded


def which_words_look_replaced() -> None:
    """ELECTRA's discriminator: its replaced-token scores on the sentence, its [MASK]s filled by a generator."""
    st.subheader("Which words look replaced?")
    st.markdown(
        "ELECTRA (Clark et al. 2020) is pre-trained differently from BERT. A small generator fills each [MASK] with "
        "a word of its own; the discriminator, this model, reads the result and says for every word piece whether "
        "the generator put it there. It has no masked-LM head: it never guesses words, it spots the ones that do "
        "not fit. Change a word of the sentence to a wrong one, or mask words and let a generator fill them."
    )
    generator = pick_generator()
    encoding = prepared.masked
    fills = generator is not None and bool(prepared.all_masks)
    sample = False
    if fills:
        sample = st.toggle("Sample the generator's words, as in pre-training (else its most probable word)",
                           **state.kept("generator_sample"))
    seed = int(st.number_input("Seed of the sample", 0, 10_000, **state.kept("generator_seed", range(10_001)))) if sample else 0
    settings = spec.Settings(replaced=spec.ReplacedWork(generator.key if fills else None, sample, seed))
    try:
        report = heavy.run(context, *spec.computations(settings)["replaced"], key="replaced_tokens")
    except BertError as error:  # e.g. a generator with fewer positions than the input has tokens
        show.error("The generator cannot read this input: {}.", error)
        st.stop()
    if report is None:
        st.stop()  # over the budget: the page has said why
    if report.filled:
        filled = marked_sentence(encoding.tokens, encoding.special, encoding.pieces,
                                 {p: report.encoding.tokens[p] for p in report.filled})
        show.markdown("**The generator's words, filled in:** {}", filled)
        kept = [p for p in report.filled if prepared.base.tokens[p] == report.encoding.tokens[p] and p in prepared.masks]
        if kept:
            st.caption("Where the generator wrote back the very word you masked, ELECTRA's training counts the token "
                       "as original, not replaced.")
    elif prepared.all_masks:
        st.caption("The blanks stay as typed: the discriminator reads [MASK] itself, a token it never saw in "
                   "pre-training (the generator always filled it), so its score there means little.")
    for name, chart in spec.view(settings, context, {"replaced": report}).items():
        widgets.show_chart(chart, key=name)


if not context.loaded.summary.has_mlm_head:
    if "replaced" in context.loaded.model.output_heads:
        which_words_look_replaced()
        st.stop()
    st.warning(
        "This model has no masked-LM head, so it cannot guess masked words: it was released as an encoder only (its "
        "final vectors are meant for other tasks). Pick “MiniLM-L6 + masked-LM head” or bert-base-uncased in the "
        "sidebar. The pages that look inside it (attention, embeddings, MLP, probes) work with this model."
    )
    st.stop()

if not prepared.all_masks:
    st.info("No [MASK] yet: click a token above, or type [MASK] in the sentence.")
    st.stop()

result = heavy.run(context, *spec.computations(spec.Settings())["recorded"])  # the attention page reuses this pass
if result is None:
    st.stop()  # over the budget: the page has said why
if len(prepared.all_masks) == len(prepared.maskable):
    st.caption("Every token is masked: with no context left, the model can only guess frequent words.")

show.markdown("**The model's best guesses, filled in:** {}", filled_in_sentence(result))
top_k = st.slider("Candidates per [MASK]", 1, 30, **state.kept("top_k", range(1, 31)))

many = len(result.masks) > 4
if many:
    summary = pd.DataFrame(
        {
            "mask": [f"#{n}" for n in range(1, len(result.masks) + 1)],
            "position": [m.position for m in result.masks],
            "masked token": [m.original or "(typed [MASK])" for m in result.masks],
            "best guess": [m.tokens[0] for m in result.masks],
            "probability": [float(m.probabilities[0]) for m in result.masks],
            "rank of the masked token": [m.original_rank for m in result.masks],
            "its probability": [m.original_probability for m in result.masks],
        }
    )
    st.dataframe(
        summary,
        hide_index=True,
        column_config={
            "probability": st.column_config.ProgressColumn(format="percent", min_value=0, max_value=1),
            "its probability": st.column_config.NumberColumn(format="percent"),
        },
    )
    options = list(range(len(result.masks)))
    state.clamp_subset("prediction_shown", options)
    shown = st.multiselect(
        "Show the chart for", options, **state.kept("prediction_shown"),
        format_func=lambda i: f"#{i + 1}: {result.masks[i].original or '[MASK]'} (position {result.masks[i].position})",
    )
else:
    shown = list(range(len(result.masks)))

charts = cache.prediction_charts(context.key, context.prepared, spec.Settings(top_k, tuple(shown)), result)
columns = st.columns(2) if len(shown) > 1 else [st.container()]
for slot, index in enumerate(shown):
    mask = result.masks[index]
    with columns[slot % len(columns)]:
        widgets.show_chart(charts[f"mask_{index}"], key=f"mask_{index}")
        if mask.original is not None:
            show.markdown("The masked token **{}** is the model's **#{}** guess, with probability **{:.1%}**.",
                          mask.original, mask.original_rank, mask.original_probability)
        else:
            st.caption("You typed this [MASK], so there is no original token to compare with.")
widgets.download_view("Masked prediction", "prediction_view")
