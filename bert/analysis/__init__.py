"""Analyses built on the model's recorded activations and weights: plain numpy in, plain numpy out.

One sub-package per concern, each testable without the app (the Streamlit pages only draw what these compute):

- probing: linear probes on every layer (word labels, control tasks, MDL), treebanks (CoNLL-U and label columns),
  structural probes and tree scores; `python -m bert probe`.
- attention: per-head statistics of one input and of a corpus (Clark et al. 2019), attention rollout and flow
  (Abnar & Zuidema 2020), the query-key "neuron view".
- corpus: running a model over many sentences in padded batches; corpus indexes and nearest-neighbour search
  (as in exBERT); `python -m bert index`.
- representations: what the vectors hold: the embedding subspaces, self-similarity across contexts (Ethayarajh
  2019), sense neighbours, the logit lens, what changed between two models (CKA).
- attribution: which input tokens a prediction depends on (gradients, integrated gradients).
- causal: changing activations and measuring the effect (head ablation).
"""
