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
- features: what a layer computes unit by unit across a corpus: MLP neurons' top examples, histograms and tag mix
  (NeuroX), neurons ranked by an elastic-net probe and ablated; TopK sparse autoencoders on the residual stream
  (Gao et al. 2024) and their feature pages; `python -m bert neurons`, `python -m bert sae train`.
"""
