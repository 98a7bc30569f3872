"""Inside BERT: `streamlit run viz_app/Home.py`.

The entry script: sets up the page, reads a shared link's query parameters once, draws the shared sidebar
(the model) and, at the top of every page that reads it, the sentence box, then runs the chosen page from the
top-level pages/ folder.
"""
import streamlit as st

from viz_app import page_context, sentence_box, sidebar, state

st.set_page_config(page_title="Inside BERT", page_icon="🔍", layout="wide")
state.load_from_url()

pages = {
    "See inside": [
        st.Page("../pages/1_prediction.py", title="Masked prediction", icon=":material/edit_note:", default=True),
        st.Page("../pages/2_attention.py", title="Attention", icon=":material/grid_on:", url_path="attention"),
        st.Page("../pages/3_embeddings.py", title="Embeddings", icon=":material/scatter_plot:", url_path="embeddings"),
        st.Page("../pages/4_mlp.py", title="MLP activations", icon=":material/bolt:", url_path="mlp"),
        st.Page("../pages/5_architecture.py", title="Architecture", icon=":material/account_tree:",
                url_path="architecture"),
    ],
    "Experiments": [
        st.Page("../pages/6_probes.py", title="Layer probes", icon=":material/science:", url_path="probes"),
        st.Page("../pages/7_logit_lens.py", title="Logit lens", icon=":material/layers:", url_path="logit_lens"),
        st.Page("../pages/8_head_ablation.py", title="Head ablation", icon=":material/content_cut:", url_path="head_ablation"),
        st.Page("../pages/9_rollout.py", title="Rollout and flow", icon=":material/water:", url_path="rollout"),
        st.Page("../pages/10_head_statistics.py", title="Head statistics", icon=":material/bar_chart:",
                url_path="head_statistics"),
        st.Page("../pages/11_saliency.py", title="Saliency", icon=":material/highlight:", url_path="saliency"),
        st.Page("../pages/14_corpus_search.py", title="Corpus search", icon=":material/manage_search:",
                url_path="corpus_search"),
        st.Page("../pages/15_word_contexts.py", title="One word, many contexts", icon=":material/compare_arrows:",
                url_path="word_contexts"),
    ],
    "How it was trained": [
        st.Page("../pages/16_how_bert_was_trained.py", title="How BERT was trained", icon=":material/model_training:",
                url_path="how_bert_was_trained"),
    ],
    "Fine-tuning": [
        st.Page("../pages/12_sentence_tasks.py", title="Sentence tasks", icon=":material/rule:", url_path="sentence_tasks"),
        st.Page("../pages/13_compare_models.py", title="Compare two models", icon=":material/compare:",
                url_path="compare_models"),
    ],
    "Teaching": [st.Page("../pages/17_lessons.py", title="Lessons", icon=":material/school:", url_path="lessons")],
}
page = st.navigation(pages, expanded=True)  # every page listed: collapsed, the later groups hide behind "View N more"
model = sidebar.render()
sentence = sentence_box.render(page.url_path, model.loaded, model.source)  # None where the page reads no sentence
context = page_context.Context.of(model, sentence)
state.write_url(context.source)
with page_context.serve(context):  # the page gets it from widgets.require()
    page.run()
