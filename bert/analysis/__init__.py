"""Analyses built on the model's recorded activations and weights: plain numpy in, plain numpy out.

Each module is one concern, testable without the app (the Streamlit pages only draw what these compute):

- attention_stats: per-head statistics of one input's attention patterns (entropy, where each head looks),
  written so that a corpus-level version averages them over inputs with `combine`.
- embedding_subspaces: do the token, position and segment embeddings split the hidden space like a
  concatenation, or overlap? Per-token decomposition, PCA, principal angles, projections.
- compare: what changed between two models with one vocabulary (linear CKA per layer, Jensen-Shannon
  distance per attention head), e.g. a pre-trained model and one fine-tuned from it.
- treebank, word_features, treebank_probes (with treebank_tasks, structural_probe, tree_metrics, mdl): probing
  every layer on a treebank (CoNLL-U or label columns) for tags, arc labels, tree distances and depths, with
  controls, baselines and MDL; `python -m bert probe` (probe_cli).
"""
