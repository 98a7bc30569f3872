"""Every page of the app, once: its group in the sidebar's navigation, its address (url path), its file in pages/,
its title and icon. viz_app/Home.py builds the navigation from it; lessons check the pages their steps open."""
from __future__ import annotations

from typing import NamedTuple


class PageEntry(NamedTuple):
    url_path: str  # the address: http://host:8501/<url_path> ("prediction" is the app's default page, at /)
    file: str  # in the top-level pages/ folder
    title: str
    icon: str


GROUPS: dict[str, list[PageEntry]] = {
    "See inside": [
        PageEntry("prediction", "1_prediction.py", "Masked prediction", ":material/edit_note:"),
        PageEntry("attention", "2_attention.py", "Attention", ":material/grid_on:"),
        PageEntry("embeddings", "3_embeddings.py", "Embeddings", ":material/scatter_plot:"),
        PageEntry("mlp", "4_mlp.py", "MLP activations", ":material/bolt:"),
        PageEntry("architecture", "5_architecture.py", "Architecture", ":material/account_tree:"),
    ],
    "Experiments": [
        PageEntry("probes", "6_probes.py", "Layer probes", ":material/science:"),
        PageEntry("logit_lens", "7_logit_lens.py", "Logit lens", ":material/layers:"),
        PageEntry("head_ablation", "8_head_ablation.py", "Head ablation", ":material/content_cut:"),
        PageEntry("causal_tracing", "18_causal_tracing.py", "Causal tracing", ":material/route:"),
        PageEntry("rollout", "9_rollout.py", "What each word takes", ":material/water:"),
        PageEntry("head_statistics", "10_head_statistics.py", "Head statistics", ":material/bar_chart:"),
        PageEntry("saliency", "11_saliency.py", "Saliency", ":material/highlight:"),
        PageEntry("corpus_search", "14_corpus_search.py", "Corpus search", ":material/manage_search:"),
        PageEntry("word_contexts", "15_word_contexts.py", "One word, many contexts", ":material/compare_arrows:"),
        PageEntry("features", "19_features.py", "Features", ":material/category:"),
    ],
    "How it was trained": [
        PageEntry("how_bert_was_trained", "16_how_bert_was_trained.py", "How BERT was trained", ":material/model_training:"),
    ],
    "Fine-tuning": [
        PageEntry("sentence_tasks", "12_sentence_tasks.py", "Sentence tasks", ":material/rule:"),
        PageEntry("compare_models", "13_compare_models.py", "Compare two models", ":material/compare:"),
    ],
    "Teaching": [PageEntry("lessons", "17_lessons.py", "Lessons", ":material/school:")],
}
PAGES: dict[str, PageEntry] = {page.url_path: page for group in GROUPS.values() for page in group}
DEFAULT_PAGE = "prediction"
