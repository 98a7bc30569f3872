"""What the vectors hold, layer by layer.

- embedding_subspaces: do the token, position and segment embeddings split the hidden space or overlap?
- self_similarity: one word across many contexts (Ethayarajh 2019); sense_neighbours: do neighbours share a sense?
- logit_lens: every layer's residual stream read through the masked-LM head.
- compare: what changed between two models with one vocabulary (linear CKA per layer, Jensen-Shannon per head).
"""
