"""Every page written as a spec (viz_app/specs/base.py), by its address: what the lessons, the lesson costs and the
exports read for a page whose registry entry names a spec (viz_app/app/navigation.py, `Page.spec`)."""
from __future__ import annotations

from types import ModuleType

from viz_app.specs import (architecture, attention, attribution_graph, causal_tracing, circuits, compare_models, corpus_search, embeddings, features, head_ablation, head_statistics,
                          logit_lens, mixing, mlp, one_pass, prediction, probes, saliency, sentence_tasks, variable, word_contexts)

SPECS: dict[str, ModuleType] = {spec.NAME: spec for spec in (
    prediction, attention, embeddings, mlp, architecture, one_pass, logit_lens, head_ablation, mixing, head_statistics,
    saliency, sentence_tasks, compare_models, word_contexts, circuits, attribution_graph, causal_tracing, corpus_search, probes, features, variable)}
