"""Fine-tuning a BERT on labelled data: sentence, sentence-pair and token classification, regression."""
