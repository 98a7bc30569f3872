"""Features: what a layer computes across many sentences, as sparse-autoencoder features and as MLP neurons."""
import streamlit as st

from bert.analysis.features.neurons import tag_mix, top_examples
from bert.analysis.features.sae import SaeFileError
from viz_app import access, cache, widgets
from viz_app import features as feature_logic
from viz_app.views.features import FeatureSettings, feature_view, neuron_view, sentence_view, strongest_feature

widgets.page_header(
    "Features",
    "A layer's vector is a mix of many small directions. A sparse autoencoder (Gao et al. 2024) rewrites it as a few "
    "active features out of thousands, each of which can be read from the sentences where it fires most; a neuron "
    "of the MLP can be read the same way (Dalvi et al. 2019).",
)
context = widgets.require()
loaded, prepared = context.loaded, context.prepared
view = st.segmented_control("Look at", ["Sparse-autoencoder features", "MLP neurons"], default="Sparse-autoencoder features",
                            key="features_look_at", bind="query-params", persist_state="session") or "Sparse-autoencoder features"


def corpus_picker(key: str):
    """The corpus a scan reads: a built-in one or an uploaded text file; (corpus id, corpus) or a message."""
    options = list(feature_logic.CORPORA) + ["upload"]
    labels = feature_logic.CORPORA | {"upload": "a text file of yours (one sentence per line)"}
    choice = st.selectbox("Corpus", options, format_func=labels.get, key=key, bind="query-params", persist_state="session")
    if choice != "upload":
        return choice, cache.feature_corpus(context.key, choice)
    upload = st.file_uploader("Text file", type=["txt"], key=f"{key}_upload")
    if upload is None:
        return None, "Upload a .txt file with one sentence per line."
    return cache.uploaded_feature_corpus(context.key, upload.getvalue(), upload.name)


def show_examples(examples, corpus) -> None:
    st.html("<br>".join(feature_logic.example_html(example, corpus) for example in examples))


if view == "MLP neurons":
    summary = loaded.summary
    columns = st.columns(3)
    with columns[0]:
        layer = st.selectbox("Layer", range(summary.layers), key="neurons_layer", bind="query-params", persist_state="session")
    with columns[1]:
        neuron = st.number_input("Neuron", 0, summary.intermediate - 1, step=1, key="neurons_neuron", persist_state="session",
                                 help="The MLP page shows which neurons fire on your sentence; type one here.")
    with columns[2]:
        corpus_id, corpus = corpus_picker("neurons_corpus")
    if isinstance(corpus, str):
        st.info(corpus)
        st.stop()
    scan = cache.neuron_scan(context.key, corpus_id, layer, corpus)
    mix = tag_mix(scan, corpus, int(neuron), "upos") if "upos" in corpus.tags else None
    charts = neuron_view(int(neuron), layer, scan, mix)
    st.subheader(f"Where neuron {neuron} of layer {layer} fires most ({corpus.name})")
    show_examples(top_examples(scan, corpus, int(neuron)), corpus)
    widgets.show_chart(charts["histogram"], key="neuron_histogram")
    if "tag_mix" in charts:
        widgets.show_chart(charts["tag_mix"], key="neuron_tag_mix")
    st.stop()

offered = feature_logic.offered_saes(context.key.source)
if not offered:
    st.info("No sparse autoencoder is offered for this model yet. Train one on a text file (one sentence per line) "
            "with the command below, then put its folder in the folder named by the BERT_INSIDE_SAES variable when "
            "you start the app.")
    st.code(feature_logic.train_command(context.key.source, max(1, loaded.summary.layers // 2)), language="bash")
    st.stop()
name = st.selectbox("Sparse autoencoder", list(offered), key="features_sae", persist_state="session") if len(offered) > 1 else next(iter(offered))
folder = str(offered[name])
sae = cache.sae(context.key, folder)
if isinstance(sae, SaeFileError):
    st.warning(f"This sparse autoencoder cannot be used with this model ({access.failure(sae, context.visitor.role)}).")
    st.stop()
config = sae.config
z = cache.sentence_features(context.key, folder, prepared)
tokens = list(prepared.masked.tokens)
labels = {int(key.rpartition(":")[2]): value for key, value in st.session_state.items()
          if isinstance(key, str) and key.startswith(f"feature_label:{name}:") and value}
shown = st.slider("Features in the heatmap", 4, 64, 24, key="features_shown", bind="query-params", persist_state="session")
st.caption(f"Layer {config.layer}'s output (hidden_states[{config.layer}]), {config.features} features, at most {config.k} "
           f"active per token; trained on {config.data}.")
widgets.show_chart(sentence_view(FeatureSettings(shown=shown), z, tokens, config.layer, labels)["heatmap"], key="features_heatmap")

if st.session_state.get("features_feature") is None:
    st.session_state["features_feature"] = strongest_feature(z)
feature = int(st.number_input("Feature", 0, config.features - 1, step=1, key="features_feature", persist_state="session",
                              help="Type a feature number from the heatmap (f812 → 812)."))
st.text_input("Your label for this feature", key=f"feature_label:{name}:{feature}", persist_state="session",
              placeholder="what it seems to fire on", help="Kept for this visit only, in this browser tab; it names the "
                                                            "feature in the heatmap.")
corpus_id, corpus = corpus_picker("features_corpus")
factor = st.select_slider("Switch the feature", [0.0, 0.5, 1.0, 2.0, 4.0, 8.0], value=0.0, key="features_factor",
                          format_func=lambda f: "off" if f == 0 else f"x {f:g}", persist_state="session",
                          help="Multiply the feature's activation in the forward pass and watch the [MASK] guess.")
guess = cache.feature_guess(context.key, folder, prepared, feature, factor) if prepared.all_masks else None
promoted = cache.promoted_tokens(context.key, folder, feature)
if isinstance(corpus, str):
    st.info(corpus)
    scan = None
else:
    scan = cache.feature_scan(context.key, folder, corpus_id, corpus)
    st.subheader(f"Where feature {feature} fires most ({corpus.name})")
    examples = top_examples(scan, corpus, feature)
    if examples:
        show_examples(examples, corpus)
    else:
        st.info("This feature never fires on this corpus.")
if scan is not None:
    charts = feature_view(feature, scan, promoted, guess, factor)
    left, right = st.columns(2)
    with left:
        widgets.show_chart(charts["histogram"], key="feature_histogram")
    with right:
        widgets.show_chart(charts["promoted"], key="feature_promoted")
    if "guess" in charts:
        widgets.show_chart(charts["guess"], key="feature_guess")
    else:
        st.info("Type [MASK] in the sentence to see how switching the feature changes the model's guess.")
with st.expander("Train one for another model"):
    st.code(feature_logic.train_command(context.key.source, config.layer), language="bash")
    st.caption("It writes sae.safetensors and config.json with its figures on held-out text; docs/features.md says more.")
