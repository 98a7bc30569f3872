"""What a layer computes, unit by unit, across a corpus.

- corpora: the text a scan reads (the built-in sentences, UD English EWT with its UPOS and deprel tags, a text
  file, or the sentences of a saved corpus index), each sentence encoded alone.
- top_activations: one streaming pass that keeps, for every unit of a layer at once, its top-k tokens and a
  histogram of its activations.
- neurons: MLP neurons (the GELU output, `hook_name("mlp_post", layer)`): top examples, histograms, the tag mix
  of their top examples (as NeuroX, Dalvi et al. 2019); `python -m bert neurons`.
- neuron_ranking: neurons ordered by an elastic-net probe's weights for a tag task, and the ablation of the top 1%
  against a random 1% (probe accuracy and masked-LM accuracy after each).
- sae: TopK sparse autoencoders on the residual stream (Gao et al. 2024): the model, its files (safetensors +
  config.json, checked on loading), encoding a sentence, splicing the reconstruction or switching a feature.
- feature_labels: the labels people give features, kept with the run (labels.json beside the weights).
- sae_train, sae_measures: training on activations streamed from the model (checkpointed, data-parallel under
  torchrun) and the held-out figures (variance explained, L0, dead features, spliced masked-LM loss);
  `python -m bert sae train`.
"""
