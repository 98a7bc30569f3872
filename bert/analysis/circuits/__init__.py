"""Circuits in an encoder: which heads and MLPs, and which connections between them, carry the answer at a [MASK].

- graph.py: the nodes (embeddings, every head, every MLP, the logits) and the edges between them (to a head's
  query, key and value apart);
- encoder_parts.py: the one place that reads the model's parameters and recomputes its sub-layers;
- graph_run.py: a forward pass in which any edge carries another run's value, and the LayerNorm treatment of
  post-LN families;
- edge_scores.py: exact edge patching, EAP and EAP-IG on clean/counterfactual pairs (`edge_scores_cost` first);
- faithfulness.py: top-n and pruned circuits, the faithfulness curve, CPR and CMD as MIB defines them (Mueller et
  al. 2025), a random baseline, node-level circuits;
- flow_routes.py: information flow routes from one pass (Ferrando & Voita 2024), by the project's per-token
  contributions (ALTI);
- tasks.py: the built-in minimal pairs (bert/data/circuit_pairs.tsv) and the user's own;
- circuit_cli.py: `python -m bert circuit`.
The method, the treatment of LayerNorm and the figures are in docs/circuits.md.
"""
