"""Features: what a layer computes across many sentences, as sparse-autoencoder features and as MLP neurons."""
from pathlib import Path

import streamlit as st

from bert.analysis.features.feature_labels import MAX_BYTES as LABELS_BYTES, labels_json, set_label
from bert.analysis.features.neurons import top_examples
from bert.analysis.features.sae import SaeFileError
from bert.layers import residual_label
from bert.errors import BertError
from viz_app import heavy
from viz_app.server import access
from viz_app.app import uploads
from viz_app import cache
from viz_app.app import show, state, widgets
from viz_app.specs import features as feature_logic
from viz_app.app.navigation import LINK_PARAMS

widgets.page_header(
    "Features",
    "A layer's vector is a mix of many small directions. A sparse autoencoder (Gao et al. 2024) rewrites it as a few "
    "active features out of thousands, each of which can be read from the sentences where it fires most; a neuron "
    "of the MLP can be read the same way (Dalvi et al. 2019).",
)
context = widgets.require()
loaded, prepared = context.loaded, context.prepared
views = list(LINK_PARAMS["features_look_at"].choices)  # "Sparse-autoencoder features", "MLP neurons"
view = st.segmented_control("Look at", views, required=True, **state.kept("features_look_at", views))


def corpus_picker(key: str):
    """The corpus a scan reads: a built-in one, an uploaded text file or (for who may choose folders) a corpus
    index on the server; (corpus id, corpus) or (None, a message)."""
    labels = feature_logic.corpus_choices(context.visitor.role.may_choose_any_model)
    choice = st.selectbox("Corpus", list(labels), format_func=labels.get, **state.kept(key, list(labels)))
    if choice == feature_logic.INDEX:
        folder = st.text_input("Index folder", **state.kept(f"{key}_index"),
                               placeholder="/path/to/an/index", help="A folder written by python -m bert index "
                                                                      "with this model.").strip()
        if not folder:
            return None, "Type the folder of a corpus index built with `python -m bert index` for this model."
        return cache.index_feature_corpus(context.key, folder, feature_logic.index_stamp(folder))
    if choice != feature_logic.UPLOAD:
        return choice, cache.feature_corpus(context.key, choice)
    upload = uploads.upload_box("Text file", ["txt"], f"{key}_upload", uploads.TEXT_BYTES,
                                help="One sentence per line.")
    if upload is None:
        return None, "Upload a .txt file with one sentence per line."
    return cache.uploaded_feature_corpus(context.key, upload.getvalue(), upload.name)


def show_examples(examples, corpus) -> None:
    st.html("<br>".join(feature_logic.example_html(example, corpus) for example in examples))


if view == "MLP neurons":
    summary = loaded.summary
    columns = st.columns(3)
    with columns[0]:
        layer = st.selectbox("Layer", range(summary.layers), **state.kept("neurons_layer", range(summary.layers)))
    with columns[1]:
        neuron = st.number_input("Neuron", 0, summary.intermediate - 1, step=1, **state.kept("neurons_neuron"),
                                 help="The MLP page shows which neurons fire on your sentence; type one here.")
    with columns[2]:
        corpus_id, corpus = corpus_picker("neurons_corpus")
    if isinstance(corpus, str):
        show.info("{}", corpus)
        st.stop()
    settings = feature_logic.Settings(feature_logic.NEURONS, corpus_id, corpus, layer, int(neuron))
    scan = heavy.run(context, *feature_logic.computations(settings)["scan"])  # once per model and corpus, shared
    if scan is None:
        st.stop()
    charts = feature_logic.view(settings, context, {"scan": scan})  # a treebank's tag mixes too: upos, deprel
    show.subheader("Where neuron {} of layer {} fires most ({})", neuron, layer, corpus.name)
    show_examples(top_examples(scan, corpus, int(neuron)), corpus)
    widgets.show_chart(charts["histogram"], key="neuron_histogram")
    mix_charts = [chart for chart in charts if chart.startswith("tag_mix:")]
    if mix_charts:  # side by side: the UPOS mix beside the deprel mix
        for column, chart in zip(st.columns(len(mix_charts)), mix_charts):
            with column:
                widgets.show_chart(charts[chart], key=f"neuron_{chart.replace(':', '_')}")
    st.stop()

offered = feature_logic.offered_saes(context.key.source)
if not offered:
    st.info("No sparse autoencoder is offered for this model yet. Train one on a text file (one sentence per line) "
            "with the command below, then put its folder in the folder named by the BERT_INSIDE_SAES variable when "
            "you start the app.")
    st.code(feature_logic.train_command(context.key.source, max(1, loaded.summary.layers // 2)), language="bash")
    st.stop()
name = st.selectbox("Sparse autoencoder", list(offered), **state.kept("features_sae")) if len(offered) > 1 else next(iter(offered))
folder = str(offered[name])
sae = cache.sae(context.key, folder)
if isinstance(sae, SaeFileError):
    show.warning("This sparse autoencoder cannot be used with this model ({}).",
                 access.failure(sae, context.visitor.role))
    st.stop()
config = sae.config
z = heavy.run(context, feature_logic.SENTENCE, feature_logic.SentenceWork(folder, sae))
if z is None:
    st.stop()
tokens = list(prepared.masked.tokens)
may_save = feature_logic.may_save_labels(context.visitor.role, folder)
saved, problem = feature_logic.saved_labels(folder, config.features)  # read on every run: the owner may have saved one
if problem:
    show.warning("{}", problem)  # it quotes the file
typed = feature_logic.typed_labels(st.session_state, name)
with st.expander("Feature labels: download them, or upload a file of them"):
    upload = uploads.upload_box("A labels file (JSON: feature number → label, as the download writes)", ["json"],
                                f"feature_labels_upload:{name}", LABELS_BYTES)
    uploaded, problem = feature_logic.uploaded_labels(upload.getvalue() if upload else None,
                                                      upload.name if upload else "", config.features)
    if problem:
        show.warning("{}", problem)  # it quotes the file
    labels = saved | uploaded | typed  # typed in this browser session first, then uploaded, then kept with the SAE
    st.download_button("Download the labels (JSON)", labels_json(labels), file_name=f"{Path(folder).name}-labels.json",
                       mime="application/json", key="feature_labels_download")
    show.caption("{} {} kept with it, {} uploaded, {} typed now.",
                 "Labels you save are kept beside this sparse autoencoder (labels.json) and shown to everyone who "
                 "opens it." if may_save else "Labels typed here are kept for this visit, in this browser tab: "
                 "download them to keep them, and upload the file next time.", len(saved), len(uploaded), len(typed))
shown = st.slider("Features in the heatmap", 4, 64, **state.kept("features_shown", range(4, 65)))
trained_on = feature_logic.training_data(config.data, context.visitor.role)  # a student: the file's name
show.caption("The residual stream {} (hidden_states[{}]), {} features, at most {} active per token; trained on {}.",
             residual_label(config.layer), config.layer, config.features, config.k, trained_on)
widgets.show_chart(feature_logic.sentence_view(shown, z, tokens, config.layer, labels)["heatmap"], key="features_heatmap")

feature = int(st.number_input("Feature", 0, config.features - 1, step=1,  # none chosen yet: the strongest here
                              **state.kept("features_feature", range(config.features), feature_logic.strongest_feature(z)),
                              help="Type a feature number from the heatmap (f812 → 812)."))
text = st.text_input("Your label for this feature", **state.kept(feature_logic.LABEL_KEY.format(sae=name, feature=feature)),
                     placeholder=(saved | uploaded).get(feature, "what it seems to fire on"),
                     help="It names the feature in the heatmap. " + ("Save keeps it beside the sparse autoencoder for "
                          "everyone; saving an empty box removes the saved label." if may_save else
                          "Kept for this visit, in this browser tab; the labels box above downloads them."))
if may_save and st.button("Save the label with the sparse autoencoder", key="feature_label_save"):
    try:
        set_label(folder, feature, text, config.features)
        if text.strip():
            show.success("Saved in {}/labels.json.", Path(folder).name)
        else:
            st.success("The saved label is removed.")
    except (BertError, OSError) as error:
        show.error("Could not save the label: {}", error)
corpus_id, corpus = corpus_picker("features_corpus")
factor = st.select_slider("Switch the feature", [0.0, 0.5, 1.0, 2.0, 4.0, 8.0], value=0.0, **state.kept("features_factor"),
                          format_func=lambda f: "off" if f == 0 else f"x {f:g}",
                          help="Multiply the feature's activation in the forward pass and watch the [MASK] guess.")
guess = None
if prepared.all_masks:
    guess = heavy.run(context, feature_logic.GUESS, feature_logic.GuessWork(folder, feature, factor, sae))
promoted = cache.promoted_tokens(context.key, folder, feature)
scan = None
if isinstance(corpus, str):
    show.info("{}", corpus)
else:
    settings = feature_logic.Settings("features", corpus_id, corpus, folder=folder, feature=feature, factor=factor, sae=sae)
    scan = heavy.run(context, *feature_logic.computations(settings)["scan"])  # once per model, SAE and corpus, shared
if scan is not None:
    show.subheader("Where feature {} fires most ({})", feature, corpus.name)
    examples = top_examples(scan, corpus, feature)
    if examples:
        show_examples(examples, corpus)
    else:
        st.info("This feature never fires on this corpus.")
    charts = feature_logic.view(settings, context, {"scan": scan, "promoted": promoted, "guess": guess})
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
