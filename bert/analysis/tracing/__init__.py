"""Circuit tracing in an encoder: transcoders, the local replacement model and the attribution graph of one
[MASK] guess (Dunefsky et al. 2024; Ameisen et al. 2025).

- transcoder.py: TopK transcoders, one per layer (what the MLP reads -> what it writes), files and splicing;
- transcoder_train.py: training them on pairs streamed from the model (resumable, torchrun);
- transcoder_measures.py: the model card's held-out figures;
- replacement.py: one run with attention patterns and the active features frozen, each LayerNorm replaced by its
  tangent (what is frozen or linearised is listed there and in docs/circuits.md);
- attribution_graph.py: nodes and exact direct-effect edges of one sentence and target;
- graph_pruning.py: influence, pruning by node and edge thresholds, the replacement and completeness scores;
- graph_json.py: circuit-tracer's graph JSON;
- supernodes.py: nodes grouped by hand into one named node, edges summed;
- transcoder_labels.py: each feature's label, its top word pieces over a corpus;
- tracing_cli.py: `python -m bert transcoders ...` and `python -m bert graph ...`.
"""
