"""Change activations in the forward pass and measure what the prediction does.

- ablation: remove attention heads (zero or mean ablation) and watch the masked-word predictions.
"""
