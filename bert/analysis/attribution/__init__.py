"""Which input tokens a prediction depends on.

- saliency: gradient x input and integrated gradients (Sundararajan et al. 2017), split by embedding part.
"""
