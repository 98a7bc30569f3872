"""The page "One pass, step by step" (address `one_pass`): the loaded model on the visitor's sentence, in the order
it computes, every number the hook's recorded value of one pass (bert/analysis/one_pass.py): word pieces and ids,
the embeddings and their LayerNorm, one head's queries, keys, values, scores and softmax, the heads joined and
projected, the residual and LayerNorm, the MLP, every layer's change, the masked-LM head's guess. Anchors:
Transformer Explainer (Cho et al. 2024), Bycroft's LLM visualisation, Alammar's "The Illustrated BERT".
Its spec (viz_app/specs/base.py): `Settings`, `computations`, `view`; and `paragraphs`, each step's text with the
pass's numbers. Plain Python.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Mapping

import numpy as np

from bert.analysis.attention.score_terms import ScoreTerms
from bert.analysis.one_pass import BLOCKS, OnePass, record_one_pass, softmax
from bert.config import BertConfig
from bert.costs import Cost
from bert.devices import model_device
from viz_app.app.forward import MaskResult
from viz_app.app.navigation import LINK_PARAMS
from viz_app.charts.base import Chart
from viz_app.charts.one_pass import change_overview, number_rows
from viz_app.charts.prediction import prediction_bars
from viz_app.charts.score_terms import score_terms_heatmaps
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "one_pass"
STEPS: Mapping[str, str] = LINK_PARAMS["pass_step"].choices  # the overview's blocks, in the order the model computes
TEMPERATURES: tuple[str, ...] = tuple(LINK_PARAMS["pass_temperature"].choices)  # of the final softmax
TOP_GUESSES = 8
BLOCK_WORDS = {"attention": "attention", "mlp": "MLP"}


@dataclass(frozen=True)
class PassWork:
    layer: int  # the layer whose attention and MLP are opened up
    head: int  # the head of that layer followed through its arithmetic
    zeroed: bool = False  # that head's weighted values set to zero (the "what if" knob)


def record(inputs: Inputs, work: PassWork) -> OnePass:
    """The one recorded pass on the input the model reads (its masks applied)."""
    loaded, encoding = inputs.loaded, inputs.prepared.masked
    input_ids, token_type_ids = encoding.tensors(model_device(loaded.model))
    return record_one_pass(loaded.model, input_ids, token_type_ids, work.layer, work.head,
                           tuple(loaded.tokenizer.mask_positions(encoding)),
                           (work.layer, work.head) if work.zeroed else None)


RECORD = Computation(
    "one_pass.record", lambda work: "the pass without that head" if work.zeroed else "one recorded pass",
    cost=lambda inputs, work: Cost(1, len(inputs.prepared.masked)), compute=record, work=PassWork)


@dataclass(frozen=True)
class Settings:
    layer: int  # 0 is the first transformer layer
    head: int
    token: int  # the token followed through every step
    temperature: str = "1"  # one of TEMPERATURES
    zero_head: bool = False  # also run the pass with (layer, head) zeroed, and show its guess
    step: str = "pieces"  # the step opened (a key of STEPS)

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        summary, tokens = inputs.loaded.summary, list(inputs.prepared.masked.tokens)
        masks = inputs.loaded.tokenizer.mask_positions(inputs.prepared.masked)
        default_token = masks[0] if masks else min(1, len(tokens) - 1)
        temperature = setting(state, "pass_temperature")
        step = setting(state, "pass_step")
        return cls(within(setting(state, "pass_layer"), summary.layers, 0),
                   within(setting(state, "pass_head"), summary.heads, 0),
                   within(setting(state, "pass_token"), len(tokens), default_token),
                   temperature if temperature in TEMPERATURES else "1", bool(setting(state, "pass_zero_head")),
                   step if step in STEPS else "pieces")


def computations(settings: Settings) -> Planned:
    """"pass" (the one recorded pass) and, with the knob on, "zeroed" (the pass without the chosen head)."""
    planned: Planned = {"pass": (RECORD, PassWork(settings.layer, settings.head))}
    if settings.zero_head:
        planned["zeroed"] = (RECORD, PassWork(settings.layer, settings.head, zeroed=True))
    return planned


def shape(values: np.ndarray) -> str:
    return " × ".join(str(size) for size in values.shape)


STEP_CHARTS = {  # the charts each step shows, by their names in `view`
    "pieces": ("pieces",),
    "embeddings": ("embeddings", "embedding_norm"),
    "attention": ("queries_keys", "scores", "score_terms", "weighted_values"),
    "projection": ("projection", "residual"),
    "mlp": ("mlp",),
    "layers": ("overview",),
    "guess": ("final", "guesses", "guesses_zeroed"),
}
LESSON_CHARTS = tuple(name for names in STEP_CHARTS.values() for name in names)  # `view` draws one step's


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """The charts of the opened step (settings.step), for the followed token, named as in STEP_CHARTS: "score_terms"
    only in DeBERTa, the guess's charts with a masked-LM head and a [MASK], "guesses_zeroed" with the knob on."""
    one: OnePass = results["pass"]
    tokens = list(inputs.prepared.masked.tokens)
    step = _STEP_VIEWS[settings.step](settings, tokens, one, inputs, results)
    return {name: step[name] for name in STEP_CHARTS[settings.step] if name in step}


def walk(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """Every step's charts, in order (the offline export of the whole walk)."""
    return {name: chart for step in STEPS for name, chart in view(replace(settings, step=step), inputs, results).items()}


def _where(settings: Settings) -> str:
    return f"layer {settings.layer}, head {settings.head}"


def _pieces(settings, tokens, one, inputs, results):
    return {"pieces": number_rows({"id": np.asarray(inputs.prepared.masked.input_ids, dtype=float)},
                                  "Word pieces and their ids", "one_pass_pieces",
                                  f"Each token is looked up by its id in the vocabulary ({len(tokens)} tokens).",
                                  columns=tokens, shares=True)}


def _embeddings(settings, tokens, one, inputs, results):
    t, word = settings.token, tokens[settings.token]
    charts = {"embeddings": number_rows({**{f"{part} embedding": values[t] for part, values in one.parts.items()},
                                         "sum": one.embedding_sum[t]},
                                        f"Embeddings of {word} and their sum", "one_pass_embeddings",
                                        f"Each row is one vector of {one.embedding_sum.shape[-1]} numbers; the whole "
                                        f"input's sum is {shape(one.embedding_sum)} (tokens × width).")}
    if one.norm_scale is not None:  # without an embedding norm (ESM-2, EuroBERT) the sum enters layer 0
        charts["embedding_norm"] = number_rows({"sum": one.embedding_sum[t], "LayerNorm scale": one.norm_scale,
                                                "after LayerNorm": one.embedding_norm[t]},
                                               f"LayerNorm of {word}'s sum", "one_pass_embedding_norm",
                                               f"(sum − mean) / spread × scale + shift; {shape(one.embedding_norm)}.")
    return charts


def _attention(settings, tokens, one, inputs, results):
    t, word, where = settings.token, tokens[settings.token], _where(settings)
    d = one.q.shape[-1]
    charts = {
        "queries_keys": number_rows({f"query of {word}": one.q[t], **{f"key of {i} {token}": one.k[i]
                                                                     for i, token in enumerate(tokens)}},
                                    f"{where}: the query of {word} and every key", "one_pass_queries_keys",
                                    f"q and k are {shape(one.q)} (tokens × head size) in this head."),
        "scores": number_rows(_score_rows(one, t), f"{where}: {word}'s query against every key",
                              "one_pass_scores", f"One row of the {shape(one.scores)} score matrix (query × key).",
                              columns=tokens),
        "weighted_values": number_rows({"weighted sum of the values": one.z[t, settings.head * d:(settings.head + 1) * d],
                                        **{f"{one.pattern[t, i]:.2f} × value of {i} {token}": one.v[i]
                                           for i, token in enumerate(tokens)}},
                                       f"{where}: what {word} takes from each token", "one_pass_weighted_values",
                                       f"v is {shape(one.v)}; the weighted sum is this head's output for {word}."),
    }
    if one.score_terms:  # DeBERTa: the attention page's view of the three terms
        terms = {term: one.score_terms.get(term, np.zeros_like(one.scores)).astype(np.float64) for term in ("c2c", "c2p", "p2c")}
        charts["score_terms"] = score_terms_heatmaps(
            ScoreTerms(settings.layer, settings.head, tuple(tokens), terms["c2c"], terms["c2p"], terms["p2c"]),
            list(range(len(tokens))))
    return charts


def _projection(settings, tokens, one, inputs, results):
    t, word, layer = settings.token, tokens[settings.token], settings.layer
    d = one.q.shape[-1]
    return {
        "projection": number_rows({"heads concatenated": one.z[t], "projected (added to the residual)": one.attention_result[t]},
                                  f"Layer {layer}: every head of {word}, joined and projected", "one_pass_projection",
                                  f"{one.z.shape[-1]} numbers from {one.z.shape[-1] // d} heads of {d}; the output "
                                  f"projection maps them to {one.attention_result.shape[-1]}."),
        "residual": number_rows({"layer input": one.layer_in[t], "attention's addition": one.attention_result[t],
                                 "after the residual (and LayerNorm)": one.attention_out[t]},
                                f"Layer {layer}: the residual for {word}", "one_pass_residual",
                                f"Each {shape(one.attention_out)}."),
    }


def _mlp(settings, tokens, one, inputs, results):
    t, word = settings.token, tokens[settings.token]
    return {"mlp": number_rows({"expansion": one.mlp_pre[t], "after the activation": one.mlp_post[t],
                                "contraction (added to the residual)": one.mlp_result[t], "layer output": one.layer_out[t]},
                               f"Layer {settings.layer}: the MLP's {one.mlp_pre.shape[-1]} neurons for {word}",
                               "one_pass_mlp", f"{shape(one.mlp_pre)}: the expansion before and after the activation; "
                               f"the contraction maps it back to {one.mlp_result.shape[-1]}.")}


def _layers(settings, tokens, one, inputs, results):
    return {"overview": change_overview(one.changes, tokens, settings.token, tuple(BLOCK_WORDS[b] for b in BLOCKS))}


def _guess(settings, tokens, one, inputs, results):
    if one.logits is None:
        return {}
    temperature, mask = float(settings.temperature), _followed_mask(one, settings.token)
    charts = {"final": number_rows({"final vector": one.final[mask], "after the head's transform": one.transform[mask]},
                                   f"The [MASK] at {one.masks[mask]}: its final vector", "one_pass_final",
                                   f"The head reads {one.final.shape[-1]} numbers and gives {one.logits.shape[-1]:,} "
                                   f"logits, one per vocabulary entry."),
              "guesses": _guesses(inputs, one, mask, temperature)}
    if results.get("zeroed") is not None:
        charts["guesses_zeroed"] = _guesses(inputs, results["zeroed"], mask, temperature)
    return charts


_STEP_VIEWS = {"pieces": _pieces, "embeddings": _embeddings, "attention": _attention, "projection": _projection,
               "mlp": _mlp, "layers": _layers, "guess": _guess}


def _score_rows(one: OnePass, t: int) -> dict[str, np.ndarray]:
    """q · k, ÷ √d, softmax; DeBERTa: its three terms (each already ÷ √(3d)), their sum, softmax."""
    if one.score_terms:
        rows = {f"{term} term ÷ {one.scale:.2f}": values[t] for term, values in one.score_terms.items()}
        return {**rows, "scores (their sum)": one.scores[t], "softmax (the row of weights)": one.pattern[t]}
    return {"q · k (dot products)": one.q[t].astype(np.float64) @ one.k.T.astype(np.float64),
            f"÷ {one.scale:.2f} (scores)": one.scores[t], "softmax (the row of weights)": one.pattern[t]}


def _followed_mask(one: OnePass, t: int) -> int:
    """The [MASK] whose guess is shown: the followed token if it is one, else the first."""
    return one.masks.index(t) if t in one.masks else 0


def _guesses(inputs: HasInputs, one: OnePass, mask: int, temperature: float) -> Chart:
    probabilities = softmax(one.logits[mask], temperature)
    top = np.argsort(-probabilities)[:TOP_GUESSES]
    tokenizer = inputs.loaded.tokenizer
    pieces = inputs.prepared.masked.pieces
    tokens = tuple(tokenizer.id_to_token(int(i)) for i in top)
    result = MaskResult(one.masks[mask], tokens, probabilities[top].astype(np.float32),
                        tuple(pieces.is_continuation(token) for token in tokens))
    return prediction_bars(result, TOP_GUESSES, mask + 1, pieces)


def paragraphs(settings: Settings, inputs: HasInputs, one: OnePass) -> dict[str, str]:
    """Each step's paragraph (a key of STEPS), with this pass's numbers for the followed token; plain text."""
    tokens = list(inputs.prepared.masked.tokens)
    t, word = settings.token, tokens[settings.token]
    config: BertConfig = inputs.loaded.model.config
    summed = one.embedding_sum[t]
    texts = {
        "pieces": f"The tokenizer cuts the sentence into {len(tokens)} word pieces; the model sees only their ids. "
                  f"{word} is id {inputs.prepared.masked.input_ids[t]}.",
        "embeddings": f"{word}'s vector is the sum of {', '.join(one.parts)} embeddings ({summed.shape[-1]} numbers "
                      f"each)." + (f" LayerNorm then centres it (mean {summed.mean():.3f}) and divides by its spread "
                                    f"({summed.std():.3f}), then multiplies by a learned scale and adds a shift."
                                    if config.embedding_norm else ""),
        "attention": f"In layer {settings.layer}, head {settings.head}, {word}'s query is compared with every token's key: "
                     f"q · k, divided by √d = {one.scale:.2f}, then softmax makes the row sum to 1. {word} gives "
                     f"{one.pattern[t].max():.0%} of its weight to {tokens[int(one.pattern[t].argmax())]}. The head's "
                     f"output is the weighted sum of the values.",
        "projection": f"The {one.z.shape[-1] // one.q.shape[-1]} heads' outputs are concatenated and projected; the "
                      f"result is added to {word}'s vector (the residual) and LayerNorm follows.",
        "mlp": f"The MLP expands {word}'s vector to {one.mlp_pre.shape[-1]} numbers, applies the activation "
               f"({int((one.mlp_post[t] > 0).sum())} come out positive) and contracts back to {one.mlp_result.shape[-1]}.",
        "layers": f"Every layer does the same with its own weights. Layer {int(one.changes[:, :, t].sum(1).argmax())} "
                  f"changes {word}'s vector the most.",
        "guess": "This model has no masked-LM head: the walk stops at the final vectors." if one.logits is None else
                 "Type [MASK] in the sentence (or mask a word on the prediction page) to see a guess."
                 if not one.masks else _guess_text(settings, inputs, one),
    }
    return {step: text + family_note(config, step) for step, text in texts.items()}


def _guess_text(settings: Settings, inputs: HasInputs, one: OnePass) -> str:
    mask = _followed_mask(one, settings.token)
    probabilities = softmax(one.logits[mask], float(settings.temperature))
    best = int(probabilities.argmax())
    return (f"The masked-LM head turns the [MASK]'s final vector into {one.logits.shape[-1]:,} logits; softmax at "
            f"temperature {settings.temperature} makes them probabilities: the top guess is "
            f"{inputs.loaded.tokenizer.id_to_token(best)} at {probabilities[best]:.1%}.")


def family_note(config: BertConfig, step: str) -> str:
    """What this model's family does differently at this step ("" where it does as BERT)."""
    notes = []
    if step == "embeddings":
        if config.type_vocab_size == 1:
            notes.append("This model has one segment embedding, added to every token alike (RoBERTa).")
        elif config.type_vocab_size == 0:
            notes.append("This model has no segment embeddings.")
        if config.rotary:
            notes.append("No position embedding: each layer rotates q and k by their positions (rotary, Su et al. 2021).")
        if config.relative_attention:
            notes.append("No position embedding: every attention layer adds scores read from relative distances (He et al. 2021).")
        if not config.embedding_norm:
            notes.append("No norm here: the sum enters layer 0 as it is, and each layer norms its own input (ESM-2, EuroBERT).")
        if config.projects_embeddings:
            notes.append(f"The embeddings are {config.embedding_width} wide and projected to {config.hidden_size} "
                         f"after the LayerNorm (Lan et al. 2020).")
    if step == "attention":
        if config.pre_norm:
            notes.append("Pre-norm (ModernBERT, ESM-2, EuroBERT): attention reads the normed input; the residual is added after.")
        if config.rms_norm:
            notes.append("The norm is RMSNorm: the vector divided by its root mean square, times a learned scale, with no "
                         "mean taken away and no shift (Zhang and Sennrich 2019).")
        if config.query_heads_per_key > 1:
            notes.append(f"Grouped-query attention: every {config.query_heads_per_key} heads share one key and one value "
                         f"head, so their k and v are the same (head h reads key-value head h // {config.query_heads_per_key}; "
                         f"Ainslie et al. 2023).")
        if config.rotary:
            notes.append("q and k are shown rotated by their positions: their product is the score.")
        if config.local_attention is not None:
            notes.append(f"Local layers see only the keys within ±{config.local_attention // 2} (ModernBERT, Warner et al. 2024).")
        if config.relative_attention:
            notes.append("The score is three terms: content to content, content to position, position to content "
                         "(DeBERTa, He et al. 2021).")
    if step == "mlp" and config.gated_mlp:
        glu = "SwiGLU" if config.activation == "silu" else "GeGLU" if config.activation.startswith("gelu") else "gated"
        notes.append(f"The MLP is gated ({glu}, Shazeer 2020): the activation of one map is multiplied by a second map "
                     f"of the same input, the gate, before the contraction.")
    if step == "layers" and config.shared_layers:
        notes.append("ALBERT applies one layer's weights again and again (Lan et al. 2020): every row is the same weights.")
    return "".join(" " + note for note in notes)
