"""BERT's family, each as a reading of the one module tree in bert/model.py: how each family's Hugging Face
config.json maps to BertConfig (hf_configs.py) and, one line per tensor, how its checkpoint's names map to ours
(key_tables.py). A new family adds a config reader, a key table and its class names here."""
