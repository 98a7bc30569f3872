"""Every URL parameter a link, or a lesson's step, can set: how each is spelt in a URL and its default (plain
Python: the lessons read it without Streamlit; viz_app/state.py keeps them in session state and the URL).

PARAMS are those Streamlit does not bind itself, BOUND those it binds (`bind="query-params"`); see state.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

DEFAULT_TEXT = "The [MASK] barked at the mailman."
MAX_URL_TEXT = 4000  # longer sentences stay out of the link (browsers and servers cap URL lengths)


def _ints(value: str) -> list[int]:
    return sorted({int(part) for part in value.split(",") if part.strip()})


def _words(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _heads(value: str) -> list[tuple[int, int]]:
    """"3.7,0.1" -> [(0, 1), (3, 7)]: layer.head pairs."""
    pairs = [part.split(".") for part in value.split(",") if part.strip()]
    return sorted({(int(layer), int(head)) for layer, head in pairs})


def _join(values) -> str:
    return ",".join(map(str, values))


def _bool(value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


@dataclass(frozen=True)
class Param:
    parse: Callable[[str], Any]  # URL text -> value; raises ValueError for nonsense, which is then ignored
    dump: Callable[[Any], str]
    default: Any


PARAMS: dict[str, Param] = {
    "text": Param(str, str, DEFAULT_TEXT),
    "pair": Param(str, str, ""),
    "masks": Param(_ints, _join, []),
    "truncate": Param(_bool, lambda v: "1" if v else "0", False),
    "focus": Param(int, str, 1),
    "hide_special": Param(_bool, lambda v: "1" if v else "0", False),
    "mlp_token": Param(int, str, 1),
    "neuron": Param(int, str, None),  # None: the strongest neuron of the chosen token
    "image_format": Param(str, str, "png"),
    # Experiment pages. A None default: the page picks (its first [MASK], the last layer).
    "probe_tasks": Param(_words, _join, ["position", "continuation", "pos"]),
    "lens_mask": Param(int, str, None),
    "ablation_mask": Param(int, str, None),
    "ablation_mode": Param(str, str, "zero"),
    "ablation_heads": Param(_heads, lambda v: _join(f"{layer}.{head}" for layer, head in v), []),
    "ablation_layers": Param(_ints, _join, []),
    "stats_pairs": Param(_bool, lambda v: "1" if v else "0", True),
    "saliency_mask": Param(int, str, None),
    "saliency_method": Param(str, str, "integrated_gradients"),
    # Causal tracing (viz_app/views/causal_tracing.py). None: the page picks (the top guesses, the first content
    # word, the last layer).
    "causal_mode": Param(str, str, "two"),  # "two" sentences (patching) or "one" with noise (tracing)
    "patch_answer": Param(str, str, None),
    "patch_foil": Param(str, str, None),
    "patch_direction": Param(str, str, "denoise"),
    "patch_exact": Param(_bool, lambda v: "1" if v else "0", True),
    "patch_head_layer": Param(int, str, None),
    "patch_compare": Param(str, str, "residual"),
    "trace_corrupt": Param(_ints, _join, None),
    "trace_answer": Param(str, str, None),
    "trace_blocks": Param(_bool, lambda v: "1" if v else "0", False),
    # Sentence tasks and model comparison.
    "tasks_method": Param(str, str, "integrated_gradients"),
    "tasks_tag_token": Param(int, str, None),  # the token whose label is explained; None: the first word token
    "compare_with": Param(str, str, None),  # model B's source; None: the page picks a partner for model A
    # One word, many contexts: the layer of the sentence-by-sentence heatmap
    "contexts_layer": Param(int, str, None),
    # Corpus search. None: the sentence's first token, the last layer.
    "search_position": Param(int, str, None),
    "search_layer": Param(int, str, None),
    "search_by": Param(str, str, "layer"),  # "layer": a layer's output; "head": one head's output
    # Layer probes on a treebank (see viz_app/probe_data.py): lists, toggles, choices shown by a label, None defaults
    "probes_source": Param(str, str, "wordnet"),  # wordnet, ud_ewt, labelled or text
    "probe_treebank_tasks": Param(_words, _join, ["upos", "deprel", "distance", "depth"]),
    "probe_pieces": Param(str, str, "first"),  # first, mean or last
    "probe_mdl": Param(_bool, lambda v: "1" if v else "0", False),
    "probe_measure": Param(str, str, None),  # None: the first measure of the run
    "probe_tree_sentence": Param(int, str, 0),  # index of a scored sentence, shown by its text
    "probe_tree_layer": Param(int, str, None),  # shown by its name; None: the distance probe's best layer
    "probe_erase": Param(_bool, lambda v: "1" if v else "0", False),  # amnesic probing of one task at one layer
    "probe_erase_task": Param(str, str, None),  # None: the first label task of the run
    "probe_erase_layer": Param(int, str, None),  # shown by its name; None: the task's best layer
    # Context mixing (pages/9_rollout.py): the method (bert/analysis/attention/mixing.py), the one beside it (or
    # "none"), the token whose row is drawn as bars (None: the first [MASK], else the first word)
    "mixing_method": Param(str, str, "attention"),
    "mixing_compare": Param(str, str, "alti"),
    "mixing_query": Param(int, str, None),
}
# The parameters Streamlit binds itself (bind="query-params"): how a link or a lesson file spells each, and the
# value the widget starts from (a page may start it elsewhere when that depends on the model, e.g. the last layer).
# Not read from or written to the URL here: lesson files are checked against them and set them in session state.
BOUND: dict[str, Param] = {
    "top_k": Param(int, str, 10),
    "layer": Param(int, str, 0),
    "head": Param(int, str, 0),
    "statistic": Param(str, str, "entropy"),
    "units": Param(str, str, "word pieces"),  # attention, saliency, MLP: "word pieces" or "words" (Clark et al. 2019)
    "mlp_layer": Param(int, str, 0),
    "neurons_shown": Param(int, str, 48),
    "k": Param(int, str, 16),
    "probes_count": Param(int, str, 300),
    "probe_seed": Param(int, str, 0),
    "rollout_layer": Param(int, str, None),  # the context-mixing page's layer (its address is still /rollout)
    "stats_count": Param(int, str, 200),
    "stats_statistic": Param(str, str, "sep"),
    "saliency_steps": Param(int, str, 32),
    "saliency_samples": Param(int, str, 25),
    "tasks_class": Param(str, str, None),  # None: the top class
    "compare_folder": Param(str, str, ""),
    "compare_count": Param(int, str, 100),
    "contexts_word": Param(str, str, "bank"),
    "search_head": Param(int, str, 0),
    "search_k": Param(int, str, 10),
    "features_look_at": Param(str, str, "Sparse-autoencoder features"),  # or "MLP neurons"
    "features_shown": Param(int, str, 24),
    "features_corpus": Param(str, str, "builtin"),  # builtin, ud-ewt-test or upload
    "neurons_layer": Param(int, str, 0),
    "neurons_corpus": Param(str, str, "builtin"),
    "patch_clean": Param(str, str, "The man said that [MASK] was tired."),
    "patch_corrupted": Param(str, str, "The woman said that [MASK] was tired."),
    "trace_text": Param(str, str, "The man said that [MASK] was tired."),
    "trace_samples": Param(int, str, 10),
}
LINK_PARAMS = PARAMS | BOUND  # every parameter a link, or a lesson's step, can set
MODEL_PARAM = "model"  # the model's source; kept apart because the picker is two widgets (choice, folder)
