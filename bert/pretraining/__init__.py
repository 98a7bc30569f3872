"""Pre-training BERT with its own objectives: masked-LM (seed 003: 15%, 80/10/10) and next-sentence prediction."""
