"""Running a model over many sentences, and searching a corpus by meaning.

- batching: length-sorted, padded batches and every layer's hidden states, shared by the corpus-level analyses.
- corpus_search (with corpus_index_files, model_fingerprint): every token of a corpus at every layer and its nearest
  neighbours by cosine (as in exBERT); index_cli: `python -m bert index`.
"""
