"""Probing every layer: what can a linear classifier read off the model's vectors?

- probes: layer-wise logistic-regression probes on labelled sentences, with control tasks (Hewitt & Liang 2019).
- treebank: reading CoNLL-U and labelled-column files; word_features: every layer's vector per word.
- treebank_probes (with treebank_tasks, mdl, structural_probe, tree_metrics): tags, arc labels, MDL (Voita &
  Titov 2020) and structural probes (Hewitt & Manning 2019) on a treebank; probe_cli: `python -m bert probe`.
"""
