"""What changed between two models (pre-trained vs fine-tuned, say, or BERT vs RoBERTa), over many sentences:

- layer by layer, how similar their representations are: linear CKA (centred kernel alignment, Kornblith et al.
  2019), 1 for representations that differ only by a rotation and a uniform scale, near 0 for unrelated ones;
  token by token when the two models share a vocabulary, else word by word (each word the mean of its pieces);
- head by head, how much each attention pattern moved: the Jensen-Shannon distance between the two models'
  attention rows (base 2: 0 for the same pattern, 1 for patterns with no key in common), averaged over queries.

Merchant et al. 2020 ("What happens to BERT embeddings during fine-tuning?") found that fine-tuning changes the
top layers most and the lower ones little: CKA against the base model stays near 1 low down and falls near the top.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import einops
import numpy as np
import torch

from ...costs import Cost
from ...devices import model_device
from ...errors import InvalidInputError
from ...hooks import hook_name
from ...model import Bert
from ...tokenizer import BertTokenizer, Encoding
from ..corpus.batching import batches, batches_cost, pad, record_encoder, residual_batches, residual_names


def linear_cka(x: np.ndarray | torch.Tensor, y: np.ndarray | torch.Tensor) -> float:
    """Linear CKA of two representations of the same n examples, x: [n, p] and y: [n, q].

    With column-centred x and y: ||yᵀx||²_F / (||xᵀx||_F · ||yᵀy||_F). Works in the feature space (p × q
    products), so thousands of tokens cost little.
    """
    x, y = (np.asarray(a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64) for a in (x, y))
    if x.ndim != 2 or y.ndim != 2 or x.shape[0] != y.shape[0]:
        raise InvalidInputError(f"CKA needs two [examples, features] arrays with the same examples; got {x.shape} and {y.shape}")
    if x.shape[0] < 2:
        raise InvalidInputError("CKA needs at least two examples")
    x, y = x - x.mean(0), y - y.mean(0)
    norms = np.linalg.norm(x.T @ x) * np.linalg.norm(y.T @ y)
    if norms == 0:
        raise InvalidInputError("CKA is undefined for a representation that is the same for every example")
    return float(np.linalg.norm(y.T @ x) ** 2 / norms)


def js_distance(p: np.ndarray | torch.Tensor, q: np.ndarray | torch.Tensor) -> np.ndarray:
    """Jensen-Shannon distance (base 2, in [0, 1]) between distributions along the last axis: [...] per row.

    sqrt(½ KL(p ‖ m) + ½ KL(q ‖ m)) with m = ½ (p + q), by scipy.
    """
    from scipy.spatial.distance import jensenshannon

    p, q = (np.asarray(a.detach().cpu() if isinstance(a, torch.Tensor) else a, dtype=np.float64) for a in (p, q))
    if p.shape != q.shape:
        raise InvalidInputError(f"the two distributions must have one shape; got {p.shape} and {q.shape}")
    return np.nan_to_num(jensenshannon(p, q, base=2, axis=-1))  # two all-zero rows (none here) would give NaN


@dataclass(frozen=True)
class Comparison:
    layers_a: list[str]  # "embeddings", "after layer 0", ... of model A (bert/layers.py's residual labels)
    layers_b: list[str]
    cka: np.ndarray  # [layer of A, layer of B]: linear CKA over every example (token or word) of every sentence
    attention_js: np.ndarray | None  # [layer, head] mean JS distance of the attention rows; None if heads cannot pair
    num_sentences: int  # sentences compared (those skipped left out)
    num_examples: int  # vectors each CKA compares: tokens (unit "token") or words (unit "word")
    unit: str = "token"  # "token": one tokenizer, token by token; "word": two tokenizers, word by word (`shared_words`)
    skipped: int = 0  # sentences left out because the two tokenizers cover different words in them (unit "word")

    @property
    def same_depth(self) -> bool:
        return len(self.layers_a) == len(self.layers_b)

    @property
    def layer_cka(self) -> np.ndarray | None:
        """CKA of each layer with the same layer of the other model: [layer + 1] (entry 0 = embeddings)."""
        return np.diag(self.cka).copy() if self.same_depth else None

    def lower_and_upper(self) -> tuple[float, float] | None:
        """Mean same-layer CKA of the lower half of the layers and of the upper half (embeddings left out).
        Merchant et al. 2020 would predict lower > upper after fine-tuning."""
        per_layer = self.layer_cka
        if per_layer is None or len(per_layer) < 3:
            return None
        layers = per_layer[1:]
        half = len(layers) // 2
        return float(layers[:half].mean()), float(layers[-half:].mean())


def same_vocabulary(tokenizer_a: BertTokenizer, tokenizer_b: BertTokenizer) -> bool:
    """One vocabulary, id for id: the two tokenizers turn a text into the same token ids, so `compare_models` pairs
    two models that read them token by token; else word by word (`shared_words`)."""
    if tokenizer_a.vocab_size != tokenizer_b.vocab_size:
        return False
    return all(tokenizer_a.id_to_token(i) == tokenizer_b.id_to_token(i) for i in range(tokenizer_a.vocab_size))


def shared_words(text: str, encoding_a: Encoding, encoding_b: Encoding) -> tuple[list[int | None], list[int | None]] | None:
    """The words of one sentence as two tokenizers both see them, and the shared word of each token of each
    encoding (None for special tokens and for pieces of no word); None when the tokenizers disagree.

    Both encodings are of `text`, each as its own model reads it. Each tokenizer groups its pieces into its
    own pre-tokenization words (`Encoding.word_ids`), whose characters in the text `Encoding.word_spans` gives.
    The shared words are those spans with overlapping ones joined: in "isn't", WordPiece's words "isn" "'" "t"
    and byte-level BPE's "isn" "'t" give the shared words "isn" and "'t"; against SentencePiece, which splits at
    spaces only, the one word "isn't". This is the finest split both tokenizers agree on. It goes by character
    offsets, so each model reads the sentence exactly as typed; feeding the tokenizers pre-split words instead
    would change what RoBERTa and ALBERT read ("dog ." for "dog."). A word of white space only (byte-level BPE
    keeps tabs, new lines and runs of spaces as words of their own) is left out. Where a shared word has pieces
    in one encoding only (a character one tokenizer drops and the other keeps as a word of its own, such as a
    zero-width space), the two disagree.

    Of a pair, sentence A's words only. An encoding cut to fit its model (`Encoding.truncated`) loses its last
    word, which may be cut inside, and the shared words past the end of its last whole word are left out of both.
    """
    spans, limit = [], None
    for side, encoding in enumerate((encoding_a, encoding_b)):
        words = {word: (start, end) for word, (start, end) in encoding.word_spans().items() if text[start:end].strip()}
        if encoding.truncated and words:
            words.pop(max(words))  # the last word may be cut inside
            end = max((last for _, last in words.values()), default=0)
            limit = end if limit is None else min(limit, end)
        spans += [(start, end, side, word) for word, (start, end) in words.items()]
    merged: list[list] = []  # [start, end, {(side, word)}] in text order
    for start, end, side, word in sorted(spans):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2].add((side, word))
        else:
            merged.append([start, end, {(side, word)}])
    kept = [members for _, end, members in merged if limit is None or end <= limit]
    if any(len({side for side, _ in members}) < 2 for members in kept):
        return None
    shared = [{word: index for index, members in enumerate(kept) for s, word in members if s == side} for side in (0, 1)]
    return tuple([shared[side].get(word) if word is not None and sentence == 0 else None
                  for word, sentence in zip(encoding.word_ids, encoding.sentences)]
                 for side, encoding in enumerate((encoding_a, encoding_b)))


def pool_words(states: torch.Tensor, token_words: Sequence[int | None]) -> torch.Tensor:
    """Each word's vector, the mean of its pieces' vectors: states [..., seq, hidden] -> [..., word, hidden], words
    numbered 0, 1, ... in `token_words` (each token's word; None: left out, as special tokens are)."""
    num_words = max((w for w in token_words if w is not None), default=-1) + 1
    weights = torch.zeros(num_words, len(token_words), dtype=states.dtype, device=states.device)  # [word, seq]
    for position, word in enumerate(token_words):
        if word is not None:
            weights[word, position] = 1.0
    pieces = weights.sum(-1, keepdim=True)
    if (pieces == 0).any():
        raise InvalidInputError("every word needs at least one piece: number the words 0, 1, ... without gaps")
    return einops.einsum(states, weights / pieces, "... seq hidden, word seq -> ... word hidden")


@dataclass(frozen=True)
class _Plan:
    """What `compare_models` runs: each model's encodings and, by words, each token's shared word per sentence."""

    encodings_a: list[Encoding]
    encodings_b: list[Encoding]
    words: list[tuple[list[int | None], list[int | None]]] | None  # None: token by token
    skipped: int


def _plan(model_a: Bert, model_b: Bert, tokenizer_a: BertTokenizer, tokenizer_b: BertTokenizer | None,
          sentences: Sequence[str], unit: str | None = None) -> _Plan:
    """The sentences as both models read them. One tokenizer: encoded once, cut to the shorter of the two models'
    positions. Two: each model's own encoding, cut to its positions, and the sentences whose words the
    tokenizers split differently left out (counted)."""
    tokenizer_b = tokenizer_b or tokenizer_a
    shared = tokenizer_b is tokenizer_a or same_vocabulary(tokenizer_a, tokenizer_b)
    if unit not in (None, "token", "word"):
        raise InvalidInputError(f"unit must be 'token' or 'word' (or None: tokens when the vocabularies match); "
                                f"got {unit!r}")
    if unit == "token" and not shared:
        raise InvalidInputError("the two models have different vocabularies, so their tokens do not pair up: compare "
                                "them by words (unit='word')")
    if (unit or ("token" if shared else "word")) == "token":
        longest = min(model_a.config.max_position_embeddings, model_b.config.max_position_embeddings)
        encodings = [tokenizer_a.encode(s, max_length=longest, truncate=True) for s in sentences]
        return _Plan(encodings, encodings, None, 0)
    encodings_a, encodings_b, words = [], [], []
    for sentence in sentences:
        a, b = (t.encode(sentence, max_length=m.config.max_position_embeddings, truncate=True)
                for t, m in ((tokenizer_a, model_a), (tokenizer_b, model_b)))
        aligned = shared_words(sentence, a, b)
        if aligned is not None:
            encodings_a.append(a)
            encodings_b.append(b)
            words.append(aligned)
    return _Plan(encodings_a, encodings_b, words, len(sentences) - len(words))


def comparison_cost(model_a: Bert, model_b: Bert, tokenizer: BertTokenizer, sentences: Sequence[str],
                    batch_size: int = 32, tokenizer_b: BertTokenizer | None = None, unit: str | None = None) -> Cost:
    """The passes `compare_models` makes, before it starts: every sentence it keeps through model A, then through
    model B, each in its own tokens (with two tokenizers the two models' inputs differ in length)."""
    plan = _plan(model_a, model_b, tokenizer, tokenizer_b, sentences, unit)
    return sum((batches_cost([len(e) for e in encodings], batch_size, ("the number of sentences",))
                for encodings in (plan.encodings_a, plan.encodings_b)), Cost(0, 0))


@torch.no_grad()
def compare_models(
    model_a: Bert, model_b: Bert, tokenizer: BertTokenizer, sentences: Sequence[str],
    tokenizer_b: BertTokenizer | None = None, batch_size: int = 32, unit: str | None = None,
) -> Comparison:
    """Run every sentence through both models and compare them layer by layer (CKA) and head by head (JS).

    tokenizer: model A's; tokenizer_b: model B's (None: the same). When the two read the same token ids
    (`same_vocabulary`: a model and one fine-tuned from it) the sentences are encoded once and compared token by
    token, special tokens included, and head by head where the two have as many layers and heads. When they do
    not (BERT's WordPiece against RoBERTa's byte-level BPE, say), each model reads the sentence in its own tokens
    and the two are compared word by word: the words both tokenizers agree on (`shared_words`), each word's
    vector the mean of its pieces' vectors (`pool_words`), special tokens left out; attention patterns over
    different tokens do not pair up, so `attention_js` is None. Sentences whose words the tokenizers split
    differently are skipped and counted (`Comparison.skipped`). Sentences longer than a model's positions are cut
    to fit. unit: "token" or "word" to choose (by words, two models of one vocabulary too); None: as above.
    """
    if len(sentences) < 2:
        raise InvalidInputError("compare over at least two sentences")
    tokenizer_b = tokenizer_b or tokenizer
    plan = _plan(model_a, model_b, tokenizer, tokenizer_b, sentences, unit)
    if plan.words is None:
        return _compare_tokens(model_a, model_b, tokenizer.pad_id, plan.encodings_a, batch_size)
    if not plan.words:
        raise InvalidInputError(f"the two tokenizers split all {len(sentences)} sentences into different words, so "
                                "no word can be paired up: try other sentences")
    states = [_word_states(model, encodings, [pair[side] for pair in plan.words], t.pad_id, batch_size)
              for side, (model, encodings, t) in enumerate(((model_a, plan.encodings_a, tokenizer),
                                                            (model_b, plan.encodings_b, tokenizer_b)))]
    cka = np.array([[linear_cka(a, b) for b in states[1]] for a in states[0]])
    return Comparison(residual_names(model_a), residual_names(model_b), cka, None, len(plan.words),
                      states[0].shape[1], "word", plan.skipped)


def _compare_tokens(model_a: Bert, model_b: Bert, pad_id: int, encodings: list[Encoding], batch_size: int) -> Comparison:
    same_shape = (model_a.config.num_layers, model_a.config.num_heads) == (model_b.config.num_layers, model_b.config.num_heads)
    states_a, states_b, js_sum = [], [], None
    for batch in batches(encodings, batch_size):
        ids, types, mask = pad([encodings[i] for i in batch], pad_id, "cpu")
        real = mask.bool()  # [batch, seq]
        (residual_a, pattern_a), (residual_b, pattern_b) = (_record(m, ids, types, mask) for m in (model_a, model_b))
        states_a.append(residual_a[:, real])  # [layer, token, hidden]
        states_b.append(residual_b[:, real])
        if same_shape:
            distance = js_distance(pattern_a, pattern_b)  # [layer, batch, head, query]
            per_head = (distance * real.numpy()[None, :, None, :]).sum(axis=(1, 3))  # real queries only
            js_sum = per_head if js_sum is None else js_sum + per_head
    states_a, states_b = torch.cat(states_a, 1), torch.cat(states_b, 1)
    cka = np.array([[linear_cka(a, b) for b in states_b] for a in states_a])
    num_tokens = states_a.shape[1]
    return Comparison(
        residual_names(model_a), residual_names(model_b), cka,
        None if js_sum is None else js_sum / num_tokens, len(encodings), num_tokens,
    )


def _word_states(model: Bert, encodings: list[Encoding], words: list[list[int | None]], pad_id: int,
                 batch_size: int) -> torch.Tensor:
    """[layer + 1, word, hidden]: every sentence's words in order, each the mean of its pieces, float32 on the CPU."""
    pooled: list[torch.Tensor | None] = [None] * len(encodings)
    for batch, residual in residual_batches(model, encodings, pad_id, batch_size):  # [layer + 1, batch, seq, hidden]
        for row, index in enumerate(batch):
            pooled[index] = pool_words(residual[:, row, :len(encodings[index])].float().cpu(), words[index])
    return torch.cat(pooled, 1)


def _record(model: Bert, ids, types, mask) -> tuple[torch.Tensor, torch.Tensor]:
    """([layer + 1, batch, seq, hidden] residual stream, [layer, batch, head, query, key] attention), float32 on
    the CPU, from a model on any device (the two models may live on different ones)."""
    device = model_device(model)
    ids, types, mask = ids.to(device), types.to(device), mask.to(device)
    cache = record_encoder(model, ids, types, mask, [hook_name("embedding_out")], stacked=("layer_out", "pattern"))
    return cache.residual_stream().float().cpu(), cache.stack("pattern").float().cpu()
