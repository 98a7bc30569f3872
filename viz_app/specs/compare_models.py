"""The model-comparison page's logic: which models to offer as B, the cached comparison, predictions side by side."""
from __future__ import annotations

import pandas as pd

from bert.analysis.representations.compare import same_vocabulary
from bert.predict import predict_masks
from viz_app.app import models
from viz_app.app.forward import PreparedInput
from viz_app.app.models import LoadedModel
from viz_app.specs.sentence_tasks import class_probabilities, next_sentence

# A model's usual partners, best first: its base, or the models trained from it.
PARTNERS = {"minilm": ["minilm-encoder"], "minilm-trec": ["minilm-encoder"], "minilm-encoder": ["minilm-trec", "minilm"]}


def partner(source_a: str, sources: list[str]) -> str:
    """Model B's default for model A: its first known partner on offer, else the first other model."""
    for wanted in PARTNERS.get(source_a, []):
        if wanted in sources:
            return wanted
    others = [s for s in sources if s != source_a and s != models.FOLDER]
    return others[0] if others else models.FOLDER


def side_by_side(a: LoadedModel, b: LoadedModel, prepared: PreparedInput, shared: bool | None = None) -> pd.DataFrame:
    """What both models say about the sidebar's input, row by row: each [MASK]'s top 5, the class, B-follows-A.

    shared: whether the two read the same token ids (`same_vocabulary`; worked out when None). Then B reads A's
    input, clicked masks included. Else B reads the text in its own tokens, and the typed [MASK]s (the only ones
    both inputs have) are paired in order."""
    shared = same_vocabulary(a.tokenizer, b.tokenizer) if shared is None else shared
    own = (prepared.base if shared else  # B's own tokens of the text (and pair)
           b.tokenizer.encode(prepared.text, prepared.pair or None, b.summary.max_positions, truncate=True))
    rows = []
    if a.model.has_mlm_head and b.model.has_mlm_head:
        inputs = (prepared.masked, prepared.masked) if shared else (prepared.base, own)
        guesses = [predict_masks(m.model, m.tokenizer, e, top_k=5) for m, e in zip((a, b), inputs)]
        for number, (first, second) in enumerate(zip(*guesses), start=1):
            what = (f"[MASK] at position {first.position}" if shared
                    else f"[MASK] number {number} (position {first.position} in A, {second.position} in B)")
            rows.append([what] + [", ".join(f"{c.token} {c.probability:.0%}" for c in g.candidates) for g in (first, second)])
    if a.model.has_classifier and b.model.has_classifier:
        tops = [class_probabilities(m.model, e).sort_values("probability").iloc[-1] for m, e in ((a, prepared.base), (b, own))]
        rows.append(["class"] + [f"{top['label']} {top['probability']:.0%}" for top in tops])
    if prepared.pair.strip() and a.model.has_nsp_head and b.model.has_nsp_head:
        follows = [next_sentence(m.model, m.tokenizer, prepared.text, prepared.pair, m.summary.max_positions,
                                 prepared.truncate).follows for m in (a, b)]
        rows.append(["P(B follows A)"] + [f"{p:.1%}" for p in follows])
    return pd.DataFrame(rows, columns=["what", "model A", "model B"])


NOTHING_SHARED = ("Nothing both models can predict for this input: put a [MASK] in the sentence (both need a masked-LM "
                  "head), or compare two classifiers, or two models with a next-sentence head and a second sentence.")


def nothing_shared(a: LoadedModel, b: LoadedModel, prepared: PreparedInput, shared: bool) -> str:
    """Why `side_by_side` has no row: where the input has a [MASK] both models would read, the model without a
    masked-LM head named; else what would give a row."""
    masks = prepared.all_masks if shared else prepared.typed_masks  # B reads its own tokens: only typed [MASK]s
    missing = [name for name, m in (("A", a), ("B", b)) if not m.model.has_mlm_head]
    if masks and missing:
        which = " and ".join(f"model {name}" for name in missing)
        return (f"The sentence has a [MASK], but {which} {'has' if len(missing) == 1 else 'have'} no masked-LM head, "
                "so it makes no guess there. Pick a model with one (e.g. minilm or bert-base-uncased), or compare two "
                "classifiers, or two models with a next-sentence head and a second sentence.")
    return NOTHING_SHARED

