"""Per-position edge scores, and where the agreement circuit's edges start: at the subject's position in the early
layers, at the [MASK]'s in the late ones (Hao & Linzen 2023, on bert-base-uncased: subject number at the subject
early, at the verb late). bert-base-uncased runs where it is in the local Hugging Face cache (skipped otherwise,
with the reason); the built-in MiniLM always."""
from __future__ import annotations

import pytest
import torch

import bert
from bert.analysis.circuits.edge_scores import edge_scores
from bert.analysis.circuits.tasks import PairText, builtin_pairs, contrasts
from bert.errors import InvalidInputError


def _subject_and_mask(contrast) -> tuple[int, int]:
    """The one position where the clean and counterfactual sentences differ (the subject), and the [MASK]'s."""
    differing = [i for i, (a, b) in enumerate(zip(contrast.clean.input_ids, contrast.corrupted.input_ids)) if a != b]
    assert len(differing) == 1
    return differing[0], contrast.mask_position


def _check_subject_early_mask_late(model, tokenizer, pairs: int = 3) -> None:
    layers = model.config.num_layers
    early, late = range(0, 1 + layers // 6), range(1 + layers - layers // 6 - 1, layers + 1)  # columns: 0 embeddings, l + 1 layer l
    for contrast in contrasts(tokenizer, builtin_pairs("agreement-pp")[:pairs]):
        shares = edge_scores(model, [contrast], "eap-ig", steps=5, per_position=True).position_shares()
        subject, mask = _subject_and_mask(contrast)
        assert shares[list(early), subject].min() > 0.5, (contrast.clean.tokens, shares[list(early)])
        assert shares[list(late), mask].min() > 0.5, (contrast.clean.tokens, shares[list(late)])


def test_position_scores_sum_to_the_edge_scores(tiny_mlm_folder):
    model, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    [contrast] = contrasts(tokenizer, [PairText("the dog [MASK] at the park .", "her cat [MASK] to the mail .", "barked", "mail")])
    whole = edge_scores(model, [contrast], "eap")
    split = edge_scores(model, [contrast], "eap", per_position=True)
    assert split.positions.shape == (len(whole.graph), len(contrast.clean))
    torch.testing.assert_close(split.positions.sum(-1), whole.scores, atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(split.position_shares().sum(-1), torch.ones(model.config.num_layers + 1))
    with pytest.raises(InvalidInputError, match="per-position scores come from EAP or EAP-IG"):
        edge_scores(model, [contrast], "exact", per_position=True)


def test_minilm_agreement_edges_start_at_the_subject_early_and_the_mask_late(minilm_path):
    _check_subject_early_mask_late(*bert.load_pretrained("minilm"))


def test_bert_base_agreement_edges_start_at_the_subject_early_and_the_mask_late():
    from bert.hub import cached_folder

    if cached_folder("bert-base-uncased") is None:
        pytest.skip("bert-base-uncased is not in the local Hugging Face cache (python -m bert download bert-base-uncased)")
    _check_subject_early_mask_late(*bert.load_pretrained("bert-base-uncased"))
