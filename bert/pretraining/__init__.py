"""Pre-training BERT with its own objectives: masked-LM (Devlin et al. 2019: 15%, 80/10/10) and next-sentence
prediction."""
