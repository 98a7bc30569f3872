"""Which input tokens an output depends on, and whether the answer can be trusted.

- target: what is explained (a masked word, a class, a token's tag; log p, p, or a contrast with a foil word).
- saliency: through Captum, gradient x input and integrated gradients (Sundararajan et al. 2017), split by
  embedding part; occlusion and Shapley value sampling, per token.
- deletion: the deletion curve of a saliency map against random orders, with its area under the curve.
"""
