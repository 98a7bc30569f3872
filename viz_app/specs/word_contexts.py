"""The page "One word, many contexts" (address `word_contexts`): how alike a word's vectors are in different sentences,
layer by layer, beside how alike random tokens are (Ethayarajh 2019). Its spec (viz_app/specs/base.py): `Settings`,
`computations` (the word's sentences, the once-per-model baseline), `view`; plus the plain-words reading of a
result. The maths is bert.analysis.representations.self_similarity. Plain Python."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np

from bert.analysis.corpus.batching import residual_names
from bert.analysis.representations.self_similarity import (
    anisotropy_baseline, anisotropy_baseline_cost, word_contexts, word_contexts_cost)
from bert.data import builtin_sentences
from viz_app.app.models import LoadedModel
from viz_app.app.text import Markdown, markdown
from viz_app.charts.base import Chart
from viz_app.charts.token_matrix import token_heatmap
from viz_app.charts.word_contexts import self_similarity_chart
from viz_app.specs.base import Computation, HasInputs, Planned, setting, within

NAME = "word_contexts"
LESSON_CHARTS = ("self_similarity", "cosines")
MAX_SENTENCES = 20
BASELINE_SENTENCES, BASELINE_SAMPLES, BASELINE_SEED = 200, 2000, 0
# Measured with scripts/self_similarity.py on the built-in minilm (see docs/probing.md), written out for the page.
OUR_FINDING = (
    "On the built-in model (MiniLM, 6 layers), over five hand-written words in four sentences each (bank, play, "
    "light, bat, spring), self-similarity falls from 0.97 at the embeddings to 0.72 after layer 2, then rises "
    "again to 0.77 after layer 5; the random-token baseline rises from 0.06 to 0.19 after layer 3 and falls back to "
    "0.10 after layer 5. So ours agrees in the lower half (context matters more with each layer, and all vectors grow more "
    "alike) but not at the top, where BERT-base's vectors are the most context-specific. The MiniLM encoder as "
    "released (before this project trained its masked-LM head) is closer to the paper: its self-similarity is "
    "lowest after layer 5 (0.68), though its baseline also drops there (0.04). Five words are a small sample."
)


@dataclass(frozen=True)
class WordResult:
    layers: list[str]  # "embeddings", "layer 1", ...
    self_similarity: np.ndarray  # [layer]
    cosines: np.ndarray  # [layer, sentence, sentence]
    pieces: list[list[str]]  # per sentence, the word pieces averaged


def sentence_lines(text: str) -> list[str]:
    """One sentence per non-empty line, spaces tidied."""
    return [" ".join(line.split()) for line in text.splitlines() if line.strip()]


def reading(word: str, result: WordResult, base: np.ndarray) -> Markdown:
    """Plain words for one result (Markdown, the word as text): where self-similarity is lowest, where the baseline
    is highest, the gap."""
    lowest = int(np.argmin(result.self_similarity[1:])) + 1  # the embedding layer is not contextual
    gap = result.self_similarity - base
    smallest_gap = int(np.argmin(gap[1:])) + 1
    return markdown(
        "“{}” is least alike across these sentences at **{}** (self-similarity {:.2f}). Random tokens are most alike "
        "at **{}** ({:.2f}). Above the baseline, the word stands out least at **{}** (self-similarity minus baseline "
        "{:+.2f}): there the context shapes its vector most.",
        word, result.layers[lowest], result.self_similarity[lowest], result.layers[int(np.argmax(base))], base.max(),
        result.layers[smallest_gap], gap[smallest_gap])


def word_result(loaded: LoadedModel, word: str, sentences: tuple[str, ...]) -> WordResult:
    """The word's vectors in each sentence, compared layer by layer. Raises WordNotFoundError when a sentence lacks
    the word."""
    contexts = word_contexts(loaded.model, loaded.tokenizer, word, list(sentences))
    return WordResult(residual_names(loaded.model), contexts.self_similarity().numpy(), contexts.cosines().numpy(),
                      contexts.pieces)


def _baseline_texts() -> list[str]:
    return [s.text for s in builtin_sentences(BASELINE_SENTENCES)]


@dataclass(frozen=True)
class ContextsWork:
    word: str
    sentences: tuple[str, ...]  # 2 to MAX_SENTENCES, each using the word


@dataclass(frozen=True)
class BaselineWork:
    """Nothing but the model: the baseline is made once per model from the built-in sentences."""


CONTEXTS = Computation(
    "word_contexts.contexts", lambda work: f"The word in {len(work.sentences)} sentences",
    cost=lambda inputs, work: word_contexts_cost(inputs.loaded.tokenizer, list(work.sentences),
                                                 inputs.loaded.model.config.max_position_embeddings),
    compute=lambda inputs, work: word_result(inputs.loaded, work.word, work.sentences), per_model=True,
    work=ContextsWork)
BASELINE = Computation(
    "word_contexts.baseline", lambda work: f"The baseline on {BASELINE_SENTENCES} built-in sentences (once per model)",
    cost=lambda inputs, work: anisotropy_baseline_cost(inputs.loaded.tokenizer, _baseline_texts(),
                                                       inputs.loaded.model.config.max_position_embeddings,
                                                       BASELINE_SAMPLES, BASELINE_SEED),
    compute=lambda inputs, work: anisotropy_baseline(inputs.loaded.model, inputs.loaded.tokenizer, _baseline_texts(),
                                                     BASELINE_SAMPLES, BASELINE_SEED).numpy(), per_model=True,
    work=BaselineWork)


@dataclass(frozen=True)
class Settings:
    word: str  # stripped
    sentences: tuple[str, ...]  # the typed lines, spaces tidied
    layer: int  # 0: the embeddings, i: after layer i - 1 (residual_names)

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs) -> "Settings":
        """The settings a link or a lesson step gives; the layer within this model's (default: the last)."""
        layers = inputs.loaded.summary.layers + 1  # the embeddings, then each layer's output
        return cls(str(setting(state, "contexts_word")).strip(),
                   tuple(sentence_lines(str(setting(state, "contexts_sentences")))),
                   within(setting(state, "contexts_layer"), layers, layers - 1))

    @property
    def problem(self) -> str | None:
        """What to type before anything can run; None when the word and the sentences will do."""
        if not self.word:
            return "Type the word to follow, for example “bank”."
        if len(self.sentences) < 2:
            return "Type at least two sentences that use the word, one per line."
        if len(self.sentences) > MAX_SENTENCES:
            return f"That is {len(self.sentences)} sentences; this page compares at most {MAX_SENTENCES}. Remove some."
        return None


def computations(settings: Settings) -> Planned:
    """"contexts" (the word's sentences) and "baseline"; nothing while `settings.problem` says what to type."""
    if settings.problem:
        return {}
    return {"contexts": (CONTEXTS, ContextsWork(settings.word, settings.sentences)), "baseline": (BASELINE, BaselineWork())}


def sentence_labels(sentences: tuple[str, ...]) -> list[str]:
    """Each sentence numbered and cut to 28 characters, for the heatmap's axes."""
    return [f"{i + 1}. {s[:28]}…" if len(s) > 28 else f"{i + 1}. {s}" for i, s in enumerate(sentences)]


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"self_similarity" (with the baseline) and "cosines" (between the sentences, at settings.layer)."""
    result, base = results.get("contexts"), results.get("baseline")
    if result is None or base is None:
        return {}
    layer = min(settings.layer, len(result.layers) - 1)
    return {
        "self_similarity": self_similarity_chart(settings.word, result.layers, result.self_similarity, base),
        "cosines": token_heatmap(
            result.cosines[layer], sentence_labels(settings.sentences),
            f"Cosine similarity of '{settings.word}' between sentences, {result.layers[layer]}", "word_contexts_cosines",
            "Each cell: how alike the word's vectors in two sentences are at this layer. Sentences that use the word "
            "in the same sense should be more alike in the upper layers."),
    }
