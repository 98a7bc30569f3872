"""What the user chose, kept in `st.session_state` and mirrored in the URL's query parameters.

Every widget whose value should survive a page switch and travel in a shared link has a key listed in
PARAMS. The first run of a session reads the URL into session state; every run writes session state back to
the URL, so the address bar always reopens the same view (page, model, sentence, masks and selections).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import streamlit as st

from bert.analysis.self_similarity import EXAMPLES
from viz_app import models

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
    "top_k": Param(int, str, 10),
    "layer": Param(int, str, 0),
    "head": Param(int, str, 0),
    "focus": Param(int, str, 1),
    "hide_special": Param(_bool, lambda v: "1" if v else "0", False),
    "statistic": Param(str, str, "entropy"),
    "mlp_layer": Param(int, str, 0),
    "mlp_token": Param(int, str, 1),
    "neuron": Param(int, str, None),  # None: the strongest neuron of the chosen token
    "neurons_shown": Param(int, str, 48),
    "k": Param(int, str, 16),
    "image_format": Param(str, str, "png"),
    # Experiment pages. A None default: the page picks (its first [MASK], the last layer).
    "probes_count": Param(int, str, 300),
    "probe_tasks": Param(_words, _join, ["position", "continuation", "pos"]),
    "probe_seed": Param(int, str, 0),
    "lens_mask": Param(int, str, None),
    "ablation_mask": Param(int, str, None),
    "ablation_mode": Param(str, str, "zero"),
    "ablation_heads": Param(_heads, lambda v: _join(f"{layer}.{head}" for layer, head in v), []),
    "ablation_layers": Param(_ints, _join, []),
    "rollout_layer": Param(int, str, None),
    "stats_count": Param(int, str, 200),
    "stats_pairs": Param(_bool, lambda v: "1" if v else "0", True),
    "stats_statistic": Param(str, str, "sep"),
    "saliency_mask": Param(int, str, None),
    "saliency_method": Param(str, str, "integrated_gradients"),
    "saliency_steps": Param(int, str, 32),
    # Sentence tasks and model comparison.
    "tasks_class": Param(str, str, None),  # None: the top class
    "tasks_method": Param(str, str, "integrated_gradients"),
    "compare_with": Param(str, str, None),  # model B's source; None: the page picks a partner for model A
    "compare_folder": Param(str, str, ""),  # model B's folder when compare_with is "folder"
    "compare_count": Param(int, str, 100),
    # One word, many contexts: the word, its sentences (one per line), the layer of the sentence-by-sentence heatmap
    "contexts_word": Param(str, str, "bank"),
    "contexts_sentences": Param(str, str, "\n".join(EXAMPLES["bank"])),
    "contexts_layer": Param(int, str, None),
    # Corpus search. None: the sentence's first token, the last layer.
    "search_position": Param(int, str, None),
    "search_layer": Param(int, str, None),
    "search_by": Param(str, str, "layer"),  # "layer": a layer's output; "head": one head's output
    "search_head": Param(int, str, 0),
    "search_k": Param(int, str, 10),
    # Layer probes on a treebank (UD English EWT or an uploaded labelled file). None: the page picks.
    "probes_source": Param(str, str, "wordnet"),  # wordnet, ud_ewt, labelled or text (see viz_app/probe_data.py)
    "probes_ud_count": Param(int, str, 200),  # sentences from each of UD EWT's dev and test files
    "probes_file_count": Param(int, str, 2000),  # sentences of an uploaded file (at most the file's)
    "probe_treebank_tasks": Param(_words, _join, ["upos", "deprel", "distance", "depth"]),
    "probe_pieces": Param(str, str, "first"),
    "probe_mdl": Param(_bool, lambda v: "1" if v else "0", False),
    "probe_measure": Param(str, str, None),  # the first measure of the run
    "probe_tree_layer": Param(int, str, None),  # the distance probe's best layer
    "probe_tree_sentence": Param(int, str, 0),
}
MODEL_PARAM = "model"  # the model's source; kept apart because the picker is two widgets (choice, folder)


def load_from_url() -> None:
    """On a session's first run: query parameters -> session state (bad values are ignored)."""
    if st.session_state.get("_loaded_url"):
        return
    st.session_state["_loaded_url"] = True
    query = st.query_params
    for key, param in PARAMS.items():
        value = copy.copy(param.default)  # a list default is never shared between sessions
        if key in query:
            try:
                value = param.parse(query[key])
            except ValueError:
                pass
        st.session_state.setdefault(key, value)
    st.session_state.setdefault("model_source_requested", query.get(MODEL_PARAM, ""))  # "": the first choice


def init_model_widgets(choices: list[models.ModelChoice]) -> None:
    """Point the picker at the requested model once its choices are known (a folder path goes to the folder box)."""
    requested = st.session_state.pop("model_source_requested", None)
    if requested is None:
        return
    sources = [c.source for c in choices]
    if not requested:
        st.session_state.setdefault("model_choice", models.first_choice(choices))
    elif requested in sources and requested != models.FOLDER:
        st.session_state.setdefault("model_choice", requested)
    elif requested in ("minilm", "minilm-encoder"):  # e.g. minilm asked for before its head file exists
        st.session_state.setdefault("model_choice", models.default_source())
    else:
        st.session_state.setdefault("model_choice", models.FOLDER)
        st.session_state.setdefault("model_folder", requested)


def _default(key: str, default):
    """An explicit default, else the key's default in PARAMS (one place for each default)."""
    return PARAMS[key].default if default is None and key in PARAMS else default


def clamp(key: str, options: list, default=None) -> None:
    """Keep a selection valid when its options change (another model, a shorter sentence)."""
    default = _default(key, default)
    if st.session_state.get(key) not in options:
        st.session_state[key] = default if default in options else options[0]


def clamp_subset(key: str, options: list) -> None:
    """Keep a multi-selection to the options there are (a link may name layers this model lacks)."""
    default = _default(key, None)
    chosen = st.session_state.get(key, default)
    st.session_state[key] = [value for value in chosen if value in options] if isinstance(chosen, list) else copy.copy(default)


def clamp_range(key: str, low: int, high: int, step: int = 1) -> None:
    """Keep a slider's value inside its range and on its steps."""
    value = st.session_state.get(key)
    if not isinstance(value, int) or not low <= value <= high or (value - low) % step:
        st.session_state[key] = min(max(_default(key, None), low), high)


def write_url(model_source: str | None) -> None:
    """Session state -> query parameters: the model always (a new session's first choice depends on the local
    cache), other values only where they differ from the defaults, to keep links short."""
    wanted = {}
    if model_source:
        wanted[MODEL_PARAM] = model_source
    for key, param in PARAMS.items():
        value = st.session_state.get(key, param.default)
        if value is None or value == param.default:
            continue
        if key in ("text", "pair", "contexts_sentences") and len(value) > MAX_URL_TEXT:
            continue
        wanted[key] = param.dump(value)
    if dict(st.query_params) != wanted:
        st.query_params.from_dict(wanted)
