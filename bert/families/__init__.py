"""BERT's family, each as a reading of the one module tree in bert/model.py: one module per family (bert.py,
roberta.py, distilbert.py, albert.py, electra.py, modernbert.py, deberta.py) holds everything that is that family's
(a `Family`: the config fields it sets, its config.json, its key table, its transformers classes, its tokenizer's
defaults, its paper), and registry.py lists them, one line each."""
