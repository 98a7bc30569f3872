"""Masked prediction: hide tokens, see what the model guesses for each [MASK]."""
import pandas as pd
import streamlit as st

from viz_app import cache, state, widgets
from viz_app.text import chip_labels, escape_markdown, filled_in_sentence
from viz_app.views.prediction import PredictionSettings, prediction_view

widgets.page_header(
    "Masked prediction",
    "BERT was trained to fill in hidden words. Click tokens to hide them behind [MASK] (or type [MASK] in the "
    "sentence); the model reads the whole sentence, left and right, and guesses every [MASK] at once.",
)
context = widgets.require()
prepared, tokenizer = context.prepared, context.loaded.tokenizer
tokens = prepared.base.tokens
maskable = prepared.maskable
labels = chip_labels(tokens, maskable)
typed = set(prepared.typed_masks)


def masks_changed() -> None:
    """The chips show every mask; `masks` keeps the clicked ones (a typed [MASK] stays in the sentence)."""
    st.session_state["masks"] = sorted(set(st.session_state["mask_chips"]) - typed)


st.session_state["mask_chips"] = list(prepared.all_masks)
st.pills(
    f"Click tokens to mask them ({escape_markdown(tokenizer.cls_token)} and {escape_markdown(tokenizer.sep_token)} "
    f"cannot be masked; {escape_markdown(tokenizer.pieces.marker_note)})",
    maskable,
    selection_mode="multi",
    format_func=lambda position: labels[position],
    key="mask_chips",
    on_change=masks_changed,
)
if typed:
    st.caption("A [MASK] typed in the sentence stays masked: edit the sentence to remove it.")

if not context.loaded.summary.has_mlm_head:
    released_as = ("ELECTRA's discriminator, whose head only tells whether each token was replaced"
                   if "replaced" in context.loaded.model.output_heads
                   else "an encoder only (its final vectors are meant for other tasks)")
    st.warning(
        f"This model has no masked-LM head, so it cannot guess masked words: it was released as {released_as}. "
        "Pick “MiniLM-L6 + masked-LM head” or bert-base-uncased in the sidebar. The pages that look inside it (attention, embeddings, MLP, probes) work with this model."
    )
    st.stop()

if not prepared.all_masks:
    st.info("No [MASK] yet: click a token above, or type [MASK] in the sentence.")
    st.stop()

result = cache.predictions_and_attention(context.key, prepared)  # the attention page reuses this pass
if len(prepared.all_masks) == len(maskable):
    st.caption("Every token is masked: with no context left, the model can only guess frequent words.")

st.markdown("**The model's best guesses, filled in:** " + filled_in_sentence(result, escape=escape_markdown))
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
    shown = st.multiselect(
        "Show the chart for",
        list(range(len(result.masks))),
        default=list(range(2)),
        format_func=lambda i: f"#{i + 1}: {result.masks[i].original or '[MASK]'} (position {result.masks[i].position})",
    )
else:
    shown = list(range(len(result.masks)))

charts = prediction_view(PredictionSettings(top_k, tuple(shown)), result)
columns = st.columns(2) if len(shown) > 1 else [st.container()]
for slot, index in enumerate(shown):
    mask = result.masks[index]
    with columns[slot % len(columns)]:
        widgets.show_chart(charts[f"mask_{index}"], key=f"mask_{index}")
        if mask.original is not None:
            st.markdown(
                f"The masked token **{escape_markdown(mask.original)}** is the model's "
                f"**#{mask.original_rank}** guess, with probability **{mask.original_probability:.1%}**."
            )
        else:
            st.caption("You typed this [MASK], so there is no original token to compare with.")
widgets.download_view("Masked prediction", "prediction_view")
