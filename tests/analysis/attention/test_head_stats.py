"""Corpus head statistics: a hand-set previous-token head must be found."""
import numpy as np
import torch

from bert import Bert, BertConfig
from bert.analysis.attention.head_stats import CLARK_2019, corpus_head_statistics, is_bert_base, top_heads
from bert.data import LabelledSentence, builtin_sentences

WORDS = ["the", "dog", "cat", "barked", "at", "mail", "park", "and", "her", "went", "to", "a", "is", "of"]


def tiny_sentences(count: int, seed: int) -> list[LabelledSentence]:
    rng = np.random.default_rng(seed)
    return [LabelledSentence(" ".join(rng.choice(WORDS, rng.integers(3, 9))) + ".") for _ in range(count)]


def previous_token_model(vocab_size: int) -> Bert:
    """Layer 0, head 0 attends to the previous token by construction; everything else is random.

    The input vector is position-only (token and segment embeddings are zero, position p's embedding is the one-hot
    e_p), so after the embedding LayerNorm x_p ≈ 8·e_p - 0.13. Head 0's keys read dimensions 0..31 (k_p ≈ 8·e_p)
    and its queries read dimensions 1..32 (q_p ≈ 8·e_{p-1}), times 4: q_p·k_j is largest, by far, for j = p - 1.
    """
    config = BertConfig(vocab_size=vocab_size, hidden_size=64, num_layers=2, num_heads=2, intermediate_size=64,
                        max_position_embeddings=32)
    torch.manual_seed(0)
    model = Bert(config).eval()
    attention = model.transformer[0].attention.attention
    with torch.no_grad():
        model.embedding.token_embedding.weight.zero_()
        model.embedding.token_type_embedding.weight.zero_()
        model.embedding.position_embedding.weight.copy_(torch.eye(32, 64))
        attention.project_key.weight[:32].copy_(torch.eye(32, 64))
        attention.project_query.weight[:32].copy_(4 * torch.roll(torch.eye(32, 64), 1, dims=1))  # row d reads dim d + 1
    return model


def test_hand_set_previous_token_head_is_found(tokenizer):
    model = previous_token_model(tokenizer.vocab_size)
    statistics = corpus_head_statistics(model, tokenizer, tiny_sentences(12, seed=0))
    layer, head, share = top_heads(statistics, "previous", count=1)[0]
    assert (layer, head) == (0, 0)
    assert share > 0.9
    assert statistics["previous"][0, 1] < 0.5  # the random head is no previous-token head
    assert statistics["next"][0, 0] < 0.05


def test_statistics_are_shares_and_cover_every_head(tokenizer):
    model = previous_token_model(tokenizer.vocab_size)
    statistics = corpus_head_statistics(model, tokenizer, tiny_sentences(6, seed=1), pairs=False)
    assert statistics.shape == (2, 2)
    for name in ("cls", "sep", "punctuation", "previous", "next", "self"):
        assert np.all((statistics[name] >= 0) & (statistics[name] <= 1 + 1e-9)), name
    # every query of every sentence: tokens of each sentence alone, [CLS] and [SEP] included
    assert statistics.counts["entropy"] == sum(len(tokenizer.encode(s.text)) for s in tiny_sentences(6, seed=1))


def test_published_findings_apply_to_bert_base_only(tokenizer):
    assert not is_bert_base(previous_token_model(tokenizer.vocab_size))
    with torch.device("meta"):  # built without memory or values: only its shape is read
        assert is_bert_base(Bert(BertConfig(), mlm_head=False))  # BertConfig() is BERT-base


def test_the_papers_layers_are_converted_to_count_from_0():
    """Clark et al. 2019 count layers from 1: their "layers 6-10" (the [SEP] finding) are layers 5-9 here, and the
    shaded region and the published table follow (checked against the digitised figure, read here on its own)."""
    import csv

    from bert.analysis.attention.head_stats import CLARK_2019_FILE, clark_2019_reference
    from viz_app.charts.head_statistics import statistic_by_layer_chart
    from viz_app.charts.published import published_table

    sep = next(f for f in CLARK_2019 if f.statistic == "sep")
    assert sep.paper_layers == (6, 7, 8, 9, 10) and sep.layers == (5, 6, 7, 8, 9)
    assert "layers 5-9" in sep.claim and "the paper's layers 6-10, counted from 1" in sep.claim
    assert all([layer - 1 for layer in f.paper_layers] == list(f.layers) for f in CLARK_2019)
    shaded = statistic_by_layer_chart(np.zeros((12, 12)), "sep", [sep]).figure.layout.shapes[0]
    assert (shaded.x0, shaded.x1) == (4.5, 9.5)  # around layers 5 .. 9 on an axis that starts at layer 0
    with CLARK_2019_FILE.open(encoding="utf-8") as file:
        rows = {(r["statistic"], r["measure"]): r for r in csv.DictReader(line for line in file if not line.startswith("#"))}
    table = published_table(clark_2019_reference()["sep"])
    assert table["layer"].tolist() == list(range(12))
    assert table.loc[table["layer"] == 5, "published layer mean"].item() == float(rows[("sep", "layer_mean")]["L6"])


def test_builtin_sentences_run_through(tokenizer):
    """The shipped sentence set tokenizes and runs (tiny model, the first 20 sentences)."""
    model = previous_token_model(tokenizer.vocab_size)
    statistics = corpus_head_statistics(model, tokenizer, builtin_sentences(20), max_tokens=32)
    assert np.isfinite(statistics["entropy"]).all()
