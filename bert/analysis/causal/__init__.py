"""Change activations in the forward pass and measure what the prediction does.

- ablation: remove attention heads (zero or mean ablation) and watch the masked-word predictions.
- patching: activation patching on a clean and a corrupted sentence (residual stream, attention and MLP blocks,
  heads; batched) and attribution patching, its one-backward-pass approximation.
- tracing: causal tracing on one sentence, with noise on chosen token embeddings (Meng et al. 2022).
- erasure: amnesic probing, erasing a property from one layer with LEACE and measuring the masked-LM cost.
- interchange, alignment: where a variable lives: interchange interventions at one hook and position, distributed
  alignment search (DAS, Boundless DAS) and CausalGym's baselines, scored by IIA on held-out pairs with a control task.
"""
