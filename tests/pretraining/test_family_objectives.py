"""Each family pre-trains from a fresh config with its own objective, through the project's trainer: RoBERTa's
full sentences with dynamic masks (Liu et al. 2019), ALBERT's n-grams with sentence order (Lan et al. 2020) and
ELECTRA's generator and discriminator (Clark et al. 2020). A few steps on a tiny corpus lower the held-out loss
(here the same text, masked the same way before and after: the loss the evaluation reports)."""
from __future__ import annotations

import json
import math

import pytest
import torch
from safetensors.torch import load_file

from bert import Bert, BertConfig
from bert.pretraining.data import DataConfig, batches
from bert.pretraining.electra import Electra
from bert.pretraining.trainer import TrainConfig, evaluate, train

from .helpers import write_corpus

DOCUMENTS = [["the dog barked at the mailman .", "then the dog ran to the park .", "the park was full of dogs ."],
             ["she bought milk at the store .", "then she walked home in the rain .", "the rain stopped at noon ."],
             ["the cat sat on the mat .", "the mat was red and warm .", "then the cat fell asleep ."]]
RECIPES = {
    "roberta": (dict(), dict(full_sentences=True)),
    "albert": (dict(max_ngram=3), dict(sentence_order=True)),
    "electra": (dict(mask_share=1.0), dict()),
}


def held_out_loss(model, tokenizer, path, train_config: TrainConfig, data: DataConfig) -> float:
    """The evaluation's masked-LM loss, plus λ x the discriminator's for ELECTRA (what its training lowers)."""
    metrics = evaluate(model, tokenizer, list(batches(path, tokenizer, data, 0, 0)), train_config)
    return math.log(metrics["perplexity"]) + (model.discriminator_weight * metrics["replaced_loss"] if isinstance(model, Electra) else 0.0)


@pytest.mark.slow  # three short training runs
@pytest.mark.parametrize("family", list(RECIPES))
def test_a_few_steps_lower_the_held_out_loss(family, tmp_path, tokenizer):
    torch.manual_seed(0)
    config = BertConfig.of_family(family, vocab_size=tokenizer.vocab_size, hidden_size=32, num_layers=2, num_heads=4,
                                  intermediate_size=64, max_position_embeddings=64, pad_token_id=tokenizer.pad_id, hidden_dropout=0.0,
                                  attention_dropout=0.0)
    model = Electra.from_config(config) if family == "electra" else Bert(config, nsp_head=family == "albert")
    train_fields, data_fields = RECIPES[family]
    train_config = TrainConfig(steps=40, warmup_steps=0, learning_rate=3e-3, eval_every=40, checkpoint_every=40, **train_fields)
    data = DataConfig(max_length=32, batch_size=4, **data_fields)
    path = write_corpus(tmp_path / "train.txt", DOCUMENTS)
    before = held_out_loss(model, tokenizer, path, train_config, data)
    metrics = train(model, tokenizer, path, path, tmp_path / "run", train_config, data)
    after = held_out_loss(model, tokenizer, path, train_config, data)
    assert after < before, f"{family}: held-out loss {before:.3f} -> {after:.3f}"
    assert math.log(metrics["perplexity"]) + (50 * metrics["replaced_loss"] if family == "electra" else 0) == pytest.approx(after, rel=1e-5)


def test_cli_pretrains_electra_from_scratch(tmp_path, tokenizer):
    from bert.__main__ import main

    corpus = write_corpus(tmp_path / "corpus.txt", DOCUMENTS)
    out = tmp_path / "run"
    code = main(["pretrain", "--train-file", corpus, "--heldout-file", corpus, "--out", str(out), "--steps", "2",
                 "--family", "electra", "--layers", "1", "--hidden", "16", "--heads", "4", "--batch-size", "4", "--eval-every", "1"])
    assert code == 0
    rows = [json.loads(line) for line in (out / "log.jsonl").read_text().splitlines()]
    assert [row["step"] for row in rows] == [1, 2] and all(math.isfinite(row["replaced_loss"]) for row in rows)
    weights = load_file(str(out / "checkpoint" / "model.safetensors"))
    assert "generator.lm_head.mlp.weight" in weights and "discriminator.discriminator.prediction.weight" in weights
    assert "discriminator.embedding.token_embedding.weight" not in weights, "the shared embedding is saved once"
    query = "transformer.0.attention.attention.project_query.weight"
    assert weights[f"generator.{query}"].shape == (4, 4) and weights[f"discriminator.{query}"].shape == (16, 16)  # a quarter as wide


def test_cli_pretrains_roberta_and_albert_with_their_objectives(tmp_path, tokenizer):
    from bert.__main__ import main

    corpus = write_corpus(tmp_path / "corpus.txt", DOCUMENTS)
    for family, extra in (("roberta", ["--full-sentences"]), ("albert", ["--sop", "--max-ngram", "3"])):
        out = tmp_path / family
        code = main(["pretrain", "--train-file", corpus, "--out", str(out), "--steps", "2", "--family", family, "--layers", "1",
                     "--hidden", "16", "--heads", "2", "--batch-size", "4", "--eval-every", "1", *extra])
        assert code == 0
        state = json.loads((out / "checkpoint" / "state.json").read_text())
        assert state["config"]["max_ngram"] == (3 if family == "albert" else 1)
