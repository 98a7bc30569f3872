"""Where the attention heads look.

- attention_stats: per-head statistics of one input's patterns (entropy, share to [CLS], [SEP], the next word...).
- head_stats: the same over a corpus, beside Clark et al. 2019's published values.
- rollout: attention rollout and attention flow (Abnar & Zuidema 2020).
- words: attention and per-token scores merged over each word's pieces (Clark et al. 2019).
- query_key: one query against one key, dimension by dimension (bertviz's neuron view, Vig 2019).
"""
