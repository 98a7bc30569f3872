"""Where the attention heads look.

- attention_stats: per-head statistics of one input's patterns (entropy, share to [CLS], [SEP], the next word...).
- head_stats: the same over a corpus, beside Clark et al. 2019's published values.
- rollout: attention rollout and attention flow (Abnar & Zuidema 2020).
- mixing: what each token takes from the others, by method: attention weights, norms (Kobayashi et al. 2020,
  2021), GlobEnc, ALTI, value zeroing, DecompX (mixing_parts, norm_based, value_zeroing, decompx; mixing_cli is
  `python -m bert mixing`).
- words: attention and per-token scores merged over each word's pieces (Clark et al. 2019).
- query_key: one query against one key, dimension by dimension (bertviz's neuron view, Vig 2019).
- score_terms: a DeBERTa head's scores split into content → content, content → position and position → content
  (He et al. 2021).
"""
