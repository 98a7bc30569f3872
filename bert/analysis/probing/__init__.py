"""Probing every layer: what can a linear classifier read off the model's vectors? One pipeline for every source.

- data: treebank (CoNLL-U and labelled-column files, the shipped UD English EWT) and sentence_sets (the built-in
  WordNet sentences and plain text, read as labelled sentences like a treebank's).
- tasks: task_table (every task: text tasks on word pieces, word tags, arcs, distance, depth); examples and
  text_inputs (what each task reads); word_features (every layer's vector per word and word piece).
- probes: linear_probes (a logistic regression per layer, control tasks of Hewitt & Liang 2019), mdl (Voita &
  Titov 2020), structural_probe and tree_metrics (Hewitt & Manning 2019).
- report: scoring (each task's result, best and expected layer) and pipeline (run_probes, ProbeReport: one report
  for every source); probe_cli: `python -m bert probe`.
"""
