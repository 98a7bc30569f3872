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
from bert.analysis.worked_sums import PROJECTIONS, projection_cell, score_cell, softmax_cell
from bert.config import BertConfig
from bert.costs import Cost
from bert.devices import model_device
from viz_app.app.forward import MaskResult
from viz_app.app.navigation import LINK_PARAMS
from viz_app.charts.base import Chart
from viz_app.charts.one_pass import (Block, change_overview, number_rows, pass_diagram, residual_stream, token_ids,
                                     token_matrices, vector_rows, weight_slice)
from viz_app.charts.prediction import prediction_bars
from viz_app.charts.score_terms import score_terms_heatmaps
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting, within

NAME = "one_pass"
STEPS: Mapping[str, str] = LINK_PARAMS["pass_step"].choices  # the overview's blocks, in the order the model computes
TEMPERATURES: tuple[str, ...] = tuple(LINK_PARAMS["pass_temperature"].choices)  # of the final softmax
CELLS: Mapping[str, str] = LINK_PARAMS["pass_cell"].choices  # the matrices whose cell is expanded: Q, K, V
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
    cell: str = "q"  # the matrix whose cell at (token, dimension) is expanded into its sum (a key of CELLS)
    dimension: int = 0  # of the head's q, k, v
    key: int | None = None  # the key of the expanded score and weight (the followed token is the query); None: the
    # key it weighs most

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        summary, tokens = inputs.loaded.summary, list(inputs.prepared.masked.tokens)
        masks = inputs.loaded.tokenizer.mask_positions(inputs.prepared.masked)
        default_token = masks[0] if masks else min(1, len(tokens) - 1)
        temperature = setting(state, "pass_temperature")
        step, cell = setting(state, "pass_step"), setting(state, "pass_cell")
        return cls(within(setting(state, "pass_layer"), summary.layers, 0),
                   within(setting(state, "pass_head"), summary.heads, 0),
                   within(setting(state, "pass_token"), len(tokens), default_token),
                   temperature if temperature in TEMPERATURES else "1", bool(setting(state, "pass_zero_head")),
                   step if step in STEPS else "pieces", cell if cell in CELLS else "q",
                   within(setting(state, "pass_dimension"), summary.hidden // summary.heads, 0),
                   within(setting(state, "pass_key"), len(tokens), None))


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
    "attention": ("matrices", "score_terms", "head_matrix", "weights", "weighted_values"),
    "projection": ("projection", "residual"),
    "mlp": ("mlp",),
    "layers": ("stream", "overview"),
    "guess": ("final", "guesses", "guesses_zeroed"),
}
LESSON_CHARTS = tuple(name for names in STEP_CHARTS.values() for name in names)  # `view` draws one step's
EVERY_NUMBER = "_every_number"  # `strips` names each vector chart's every-number strip by its name and this


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """The charts of the opened step (settings.step), for the followed token, named as in STEP_CHARTS: "score_terms"
    only in DeBERTa, the guess's charts with a masked-LM head and a [MASK], "guesses_zeroed" with the knob on."""
    one: OnePass = results["pass"]
    tokens = list(inputs.prepared.masked.tokens)
    step = _STEP_VIEWS[settings.step](settings, tokens, one, inputs, results)
    return {name: step[name] for name in STEP_CHARTS[settings.step] if name in step}


def strips(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """The opened step's vectors with every number (a strip each, values on hover): the rest of what `view` shows
    as first numbers and a length, for the page's "every number" on demand."""
    one: OnePass = results["pass"]
    tokens = list(inputs.prepared.masked.tokens)
    return {name + EVERY_NUMBER: number_rows(rows, title, f"one_pass_{name}_every_number")
            for name, (title, rows) in _vectors(settings, tokens, one).items()}


def walk(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """Every step's charts, in order (the offline export of the whole walk)."""
    return {name: chart for step in STEPS for name, chart in view(replace(settings, step=step), inputs, results).items()}


def _where(settings: Settings) -> str:
    return f"layer {settings.layer}, head {settings.head}"


def _vectors(settings: Settings, tokens: list[str], one: OnePass) -> dict[str, tuple[str, dict[str, np.ndarray]]]:
    """The opened step's vector charts: {name: (title, {row label: vector})}, for the followed token."""
    t, word, layer, where = settings.token, tokens[settings.token], settings.layer, _where(settings)
    d = one.q.shape[-1]
    if settings.step == "embeddings":
        vectors = {"embeddings": (f"Embeddings of {word} and their sum",
                                  {**{f"{part} embedding": values[t] for part, values in one.parts.items()},
                                   "sum": one.embedding_sum[t]})}
        if one.norm_scale is not None:  # without an embedding norm (ESM-2, EuroBERT) the sum enters layer 0
            vectors["embedding_norm"] = (f"LayerNorm of {word}'s sum", {"sum": one.embedding_sum[t], "LayerNorm scale": one.norm_scale,
                                                                        "after LayerNorm": one.embedding_norm[t]})
        return vectors
    if settings.step == "attention":
        return {"weighted_values": (f"{where}: what {word} takes from each token",
                                    {"weighted sum of the values": one.z[t, settings.head * d:(settings.head + 1) * d],
                                     **{f"{one.pattern[t, i]:.2f} × value of {i} {token}": one.v[i]
                                        for i, token in enumerate(tokens)}})}
    if settings.step == "projection":
        return {"projection": (f"Layer {layer}: every head of {word}, joined and projected",
                               {"heads concatenated": one.z[t], "projected (added to the residual)": one.attention_result[t]}),
                "residual": (f"Layer {layer}: the residual for {word}",
                             {"layer input": one.layer_in[t], "attention's addition": one.attention_result[t],
                              "after the residual (and LayerNorm)": one.attention_out[t]})}
    if settings.step == "mlp":
        return {"mlp": (f"Layer {layer}: the MLP's {one.mlp_pre.shape[-1]} neurons for {word}",
                        {"expansion": one.mlp_pre[t], "after the activation": one.mlp_post[t],
                         "contraction (added to the residual)": one.mlp_result[t], "layer output": one.layer_out[t]})}
    if settings.step == "guess" and one.logits is not None:
        mask = _followed_mask(one, t)
        return {"final": (f"The [MASK] at {one.masks[mask]}: its final vector",
                          {"final vector": one.final[mask], "after the head's transform": one.transform[mask]})}
    return {}


_CAPTIONS = {  # each vector chart's caption, from the pass's shapes
    "embeddings": lambda one: f"Each row is one vector of {one.embedding_sum.shape[-1]} numbers; the whole input's sum "
                              f"is {shape(one.embedding_sum)} (tokens × width).",
    "embedding_norm": lambda one: f"(sum − mean) / spread × scale + shift; {shape(one.embedding_norm)}.",
    "weighted_values": lambda one: f"v is {shape(one.v)}; the weighted sum is this head's output for the token.",
    "projection": lambda one: f"{one.z.shape[-1]} numbers from {one.z.shape[-1] // one.q.shape[-1]} heads of "
                              f"{one.q.shape[-1]}; the output projection maps them to {one.attention_result.shape[-1]}.",
    "residual": lambda one: f"Each {shape(one.attention_out)}.",
    "mlp": lambda one: f"{shape(one.mlp_pre)}: the expansion before and after the activation; the contraction maps it "
                       f"back to {one.mlp_result.shape[-1]}.",
    "final": lambda one: f"The head reads {one.final.shape[-1]} numbers and gives {one.logits.shape[-1]:,} logits, one "
                         f"per vocabulary entry.",
}


def _vector_charts(settings, tokens, one) -> dict[str, Chart]:
    return {name: vector_rows(rows, title, f"one_pass_{name}", _CAPTIONS[name](one))
            for name, (title, rows) in _vectors(settings, tokens, one).items()}


def _pieces(settings, tokens, one, inputs, results):
    return {"pieces": token_ids(tokens, list(inputs.prepared.masked.input_ids), "Word pieces and their ids",
                                "one_pass_pieces", f"Each token is looked up by its id in the vocabulary ({len(tokens)} tokens).")}


def _embeddings(settings, tokens, one, inputs, results):
    return _vector_charts(settings, tokens, one)


def _attention(settings, tokens, one, inputs, results):
    t, word, where = settings.token, tokens[settings.token], _where(settings)
    name = PROJECTIONS[settings.cell]
    charts = {
        "matrices": token_matrices(_score_matrices(one), tokens, t, f"{where}: every query against every key "
                                   f"(outlined: {word})", "one_pass_matrices",
                                   f"Each {shape(one.scores)} (query × key), each on its own colour scale: the dot "
                                   f"products, the scores, and the softmax of each row (0 to 1; a row sums to 1).",
                                   shares=(WEIGHTS,)),
        "head_matrix": vector_rows({f"{i} {token}": getattr(one, settings.cell)[i] for i, token in enumerate(tokens)},
                                   f"{where}: {name}, one row per token", f"one_pass_{settings.cell}",
                                   f"{name} is {shape(one.q)} (tokens × head size)"
                                   + ("; rotated by each token's position." if one.rotation is not None and settings.cell != "v" else "."),
                                   shown=min(one.q.shape[-1], 16)),
        "weights": weight_slice(one.weights[settings.cell], settings.dimension,
                                f"W_{name} of {where}: {shape(one.weights[settings.cell])}", f"one_pass_w_{settings.cell}",
                                f"The head's slice of the layer's W_{name} ({one.weights[settings.cell].shape[0]} inputs × "
                                f"{one.weights[settings.cell].shape[1]} dimensions); outlined: column "
                                f"{settings.dimension}, which makes dimension {settings.dimension} of every token's {name}."),
        **_vector_charts(settings, tokens, one),
    }
    if one.score_terms:  # DeBERTa: the attention page's view of the three terms
        terms = {term: one.score_terms.get(term, np.zeros_like(one.scores)).astype(np.float64) for term in ("c2c", "c2p", "p2c")}
        charts["score_terms"] = score_terms_heatmaps(
            ScoreTerms(settings.layer, settings.head, tuple(tokens), terms["c2c"], terms["c2p"], terms["p2c"]),
            list(range(len(tokens))))
    return charts


def _projection(settings, tokens, one, inputs, results):
    return _vector_charts(settings, tokens, one)


def _mlp(settings, tokens, one, inputs, results):
    return _vector_charts(settings, tokens, one)


def _layers(settings, tokens, one, inputs, results):
    stages = ["embeddings"] + [f"layer {layer} {BLOCK_WORDS[block]}" for layer in range(one.changes.shape[0])
                               for block in BLOCKS]
    return {"stream": residual_stream(one.stream_norms, stages, tokens, settings.token),
            "overview": change_overview(one.changes, tokens, settings.token, tuple(BLOCK_WORDS[b] for b in BLOCKS))}


def _guess(settings, tokens, one, inputs, results):
    if one.logits is None:
        return {}
    temperature, mask = float(settings.temperature), _followed_mask(one, settings.token)
    charts = {**_vector_charts(settings, tokens, one), "guesses": _guesses(inputs, one, mask, temperature)}
    if results.get("zeroed") is not None:
        charts["guesses_zeroed"] = _guesses(inputs, results["zeroed"], mask, temperature)
    return charts


_STEP_VIEWS = {"pieces": _pieces, "embeddings": _embeddings, "attention": _attention, "projection": _projection,
               "mlp": _mlp, "layers": _layers, "guess": _guess}


WEIGHTS = "softmax (the weights)"


def _score_matrices(one: OnePass) -> dict[str, np.ndarray]:
    """q · k (every query's dot product with every key), the recorded scores (÷ √d; DeBERTa: with its two position
    terms), the recorded weights; a masked score keeps the dtype's lowest number (drawn blank)."""
    dots = one.q.astype(np.float64) @ one.k.T.astype(np.float64)
    scored = "q · k ÷ {:.2f} + position terms (scores)" if one.score_terms else "q · k ÷ {:.2f} (scores)"
    return {"q · k": np.where(np.abs(one.scores) > 1e30, one.scores, dots), scored.format(one.scale): one.scores,
            WEIGHTS: one.pattern}


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


def chosen_key(settings: Settings, one: OnePass) -> int:
    """The key of the expanded score and weight: the chosen one, else the key the followed token weighs most."""
    return settings.key if settings.key is not None else int(one.pattern[settings.token].argmax())


def worked(settings: Settings, inputs: HasInputs, one: OnePass) -> dict[str, str]:
    """The attention step's numbers expanded into the sums that made them (bert/analysis/worked_sums.py), as plain
    text: "projection" (a cell of Q, K or V: X's row times W's column, plus the bias; rotary: then turned),
    "score" (q · k ÷ √d) and "weight" (exp over the row's sum), each ending with the hook's recorded value."""
    tokens = list(inputs.prepared.masked.tokens)
    t, d, key = settings.token, settings.dimension, chosen_key(settings, one)
    name, word, other = PROJECTIONS[settings.cell], tokens[t], tokens[key]
    cell = projection_cell(one, settings.cell, t, d)
    reads = "the LayerNorm'd input" if inputs.loaded.model.config.pre_norm else "the layer's input"
    projection = (f"{name}[{t}, {d}]  ({word}'s {name}, dimension {d})\n"
                  f"  = X[{t}] · W_{name}[:, {d}] + b_{name}[{d}]     (X: {reads}, {one.attention_in.shape[-1]} numbers)\n"
                  f"  = {cell.sum.written()}\n  + bias {cell.sum.bias:.4f} = {cell.sum.value:.4f}")
    if cell.turn is not None:
        turn, sign = cell.turn, "−" if cell.turn.sign < 0 else "+"
        projection += (f"\n  turned by position {t}: {cell.sum.value:.4f} × cos {turn.cos:.4f} {sign} "
                       f"{turn.partner_sum.value:.4f} (dimension {turn.partner}) × sin {turn.sin:.4f} = {cell.value:.4f}")
    projection += f"\n  recorded by the model: {cell.recorded:.4f}"
    score = score_cell(one, t, key)
    scored = (f"score[{t}, {key}]  ({word} → {other})\n  = Q[{t}] · K[{key}] ÷ √{round(one.scale ** 2)}"
              f"\n  = ({score.written()}) ÷ {score.divisor:.3f} = {score.value:.4f}")
    if score.masked:
        scored += "\n  outside this layer's window: the model sets the score to the lowest number, so its weight is 0"
    else:
        scored += f"\n  recorded by the model: {score.recorded:.4f}"
        if one.score_terms:
            scored += f" (content to content; with the two position terms the score is {one.scores[t, key]:.4f})"
    weight = softmax_cell(one, t, key)
    weighed = (f"weight[{t}, {key}]  ({word} → {other})\n  = exp(score[{t}, {key}]) / Σ over the {len(tokens)} keys j "
               f"of exp(score[{t}, j])\n  = {float(weight.exps[key]):.4f} / ({weight.written()})"
               f" = {weight.value:.4f}\n  recorded by the model: {weight.recorded:.4f}")
    return {"projection": projection, "score": scored, "weight": weighed}


def diagram(settings: Settings, inputs: HasInputs, came_from: tuple[str, int] | None = None) -> Chart:
    """The whole pass as one diagram, drawn from the model's config before any pass: the word pieces, the
    embeddings, each layer's attention, add & norm, MLP, add & norm (pre-norm: norm, attention, add, norm, MLP, add),
    the masked-LM head; the open step's blocks highlighted; the family's differences named in the blocks and the
    line under them; the sentence's tokens a row of dots in the open block, flowing there from the block of
    `came_from` (the step and layer open before; None or the same: they stand still) through every block
    between (`flow_route`)."""
    config: BertConfig = inputs.loaded.model.config
    layers, step, open_layer = config.num_layers, settings.step, settings.layer
    compact = layers > 12
    blocks = [Block(0, (0, 4), "word<br>pieces<br>→ ids", "pieces", current=step == "pieces"),
              Block(1, (0, 4), _embedding_label(config), "embeddings", current=step == "embeddings")]
    for layer in range(layers):
        column, here = layer + 2, layer == open_layer
        blocks += [
            Block(column, (4, 4.7), f"layer {layer}" if not compact else str(layer), "layers", layer, step == "layers"),
            Block(column, (3, 4), _attention_label(config, layer, compact), "attention", layer, here and step == "attention"),
            Block(column, (2, 3), ("add" if config.pre_norm else "add &<br>norm") if not compact else "+",
                  "projection", layer, here and step == "projection"),
            Block(column, (1, 2), ("norm →<br>MLP" if config.pre_norm else "MLP") if not compact else "MLP", "mlp", layer,
                  here and step == "mlp"),
            Block(column, (0, 1), ("add" if config.pre_norm else "add &<br>norm") if not compact else "+", "mlp", layer,
                  here and step == "mlp"),
        ]
    head = "no<br>masked-LM<br>head" if not inputs.loaded.summary.has_mlm_head else (
        "final norm<br>→ masked-LM<br>head" if config.pre_norm else "masked-LM<br>head<br>→ guess")
    blocks.append(Block(layers + 2, (0, 4), head, "guess", current=step == "guess"))
    columns = ["pieces", "embeddings", *(f"layer {layer}" for layer in range(layers)), "head"]
    return pass_diagram(blocks, columns, "The whole pass, left to right: click a block to open its step",
                        diagram_notes(config), tuple(inputs.prepared.masked.tokens), settings.token,
                        flow_route(blocks, came_from or (step, open_layer), (step, open_layer)))


def _opens(block: Block, step: str, layer: int) -> bool:
    """Whether `block` is where the tokens stand when (step, layer) is open: the step's first block in the pass (the
    MLP, not its add & norm), in that layer for a step of a layer."""
    return block.step == step and block.layer in (None, layer)


def flow_route(blocks: list[Block], came_from: tuple[str, int], to: tuple[str, int]) -> tuple[tuple[float, float], ...]:
    """The stops the tokens pass from the block of `came_from` to that of `to` (each (step, layer)), in the order the
    model computes (backwards when the visitor goes back): every block between, but the layers' headers they only
    pass by; one stop when they are the same, or when `came_from` is no block of this diagram (another model's layer)."""
    index = [next((i for i, block in enumerate(blocks) if _opens(block, *where)), None) for where in (came_from, to)]
    start, end = (index[1], index[1]) if index[0] is None else index
    step = 1 if end >= start else -1
    passed = [blocks[i] for i in range(start, end + step, step)]
    return tuple(block.stop for block in passed
                 if block.step != "layers" or block is passed[0] or block is passed[-1])


def _embedding_label(config: BertConfig) -> str:
    parts = ["token"] + (["position"] if not (config.rotary or config.relative_attention) else [])
    parts += ["segment"] if config.type_vocab_size else []
    label = "<br>+ ".join(parts) + "<br>LayerNorm"
    return label + (f"<br>→ {config.hidden_size}" if config.projects_embeddings else "")


def _attention_label(config: BertConfig, layer: int, compact: bool) -> str:
    label = ("norm →<br>" if config.pre_norm and layer > 0 and not compact else "") + ("attn" if compact else "attention")
    if compact:
        return label
    if config.rotary:
        label += "<br>rotary"
    if config.window(layer) is not None:
        label += f"<br>local ±{config.window(layer)}"
    if config.relative_attention:
        label += "<br>+ 2 position<br>terms"
    return label


def diagram_notes(config: BertConfig) -> str:
    """What this model does differently from BERT's post-LN layers, one line under the diagram ("" for BERT)."""
    notes = []
    if config.pre_norm:
        notes.append("pre-norm: LayerNorm before each block, the residual added after (ModernBERT, Warner et al. 2024)")
    if config.rotary:
        notes.append("no position table: q and k rotated by their positions (Su et al. 2021)")
    if config.local_attention is not None:
        notes.append(f"local layers see the keys within ±{config.local_attention // 2}")
    if config.relative_attention:
        notes.append("positions enter every attention as content-to-position and position-to-content terms "
                     "(DeBERTa, He et al. 2021)")
    if config.projects_embeddings:
        notes.append(f"embeddings {config.embedding_width} wide, projected to {config.hidden_size} (Lan et al. 2020)")
    if config.shared_layers:
        notes.append("one layer's weights applied at every layer (ALBERT, Lan et al. 2020)")
    return "; ".join(notes)


def opened(event: Mapping[str, Any]) -> dict[str, Any]:
    """The widgets' new values for a click on the diagram (Streamlit's selection event, {"selection": {"points":
    [{"customdata": [step, layer], ...}]}}): the clicked block's step, and its layer (−1: none). {}: no block."""
    points = ((event or {}).get("selection") or {}).get("points") or []
    for point in reversed(points):
        data = point.get("customdata")
        if isinstance(data, (list, tuple)) and len(data) == 2 and data[0] in STEPS:
            return {"pass_step": data[0], **({"pass_layer": int(data[1])} if int(data[1]) >= 0 else {})}
    return {}
