"""Pre-training and fine-tuning take every family (ModernBERT too): one short run from a fresh config of each (the family's
pre-training heads), and fine-tuning from a transformers checkpoint of each, through the project's own loops."""
from __future__ import annotations

import random

import pytest
import torch

import bert
from bert import Bert, BertConfig
from bert.finetuning.data import Example
from bert.finetuning.train import FinetuneConfig, finetune
from bert.pretraining.data import DataConfig
from bert.pretraining.trainer import TrainConfig, train
from bert_test_support import TINY_VOCAB
from family_support import FAMILIES, PRETRAINING, build_hf

WORDS = ["the", "dog", "cat", "barked", "at", "mail", "park", "and", "her", "went", "to", "is", "of"]


def corpus(path, documents: int = 6, seed: int = 0):
    rng = random.Random(seed)
    lines = ["\n".join(" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 7))) for _ in range(4)) for _ in range(documents)]
    path.write_text("\n\n".join(lines) + "\n")
    return path


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES + ("modernbert",))
def test_pretraining_from_a_fresh_config_updates_every_part(family, tmp_path, tokenizer):
    torch.manual_seed(0)
    sizes = dict(vocab_size=len(TINY_VOCAB), hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32,
                 max_position_embeddings=32, pad_token_id=tokenizer.pad_id)
    config = BertConfig.of_family(family, **sizes, **({"embedding_size": 8} if family in ("albert", "electra") else {}))
    sentence_order = family == "albert"  # ALBERT's second task (Lan et al. 2020); RoBERTa drops next-sentence pairs
    model = Bert(config, mlm_head=True, nsp_head=sentence_order)
    before = {name: p.detach().clone() for name, p in model.named_parameters()}
    metrics = train(model, tokenizer, corpus(tmp_path / "train.txt"), None, tmp_path / "run",
                    TrainConfig(steps=2, warmup_steps=0, learning_rate=1e-2, eval_every=2, checkpoint_every=2),
                    DataConfig(max_length=16, batch_size=4, sentence_order=sentence_order))
    assert metrics["step"] == 2 and torch.isfinite(torch.tensor(metrics["train_loss"]))
    unchanged = [name for name, p in model.named_parameters() if torch.equal(p, before[name])]
    assert unchanged == []  # the shared ALBERT layer and the projections learn too
    if family == "albert":
        assert len(list(model.transformer.parameters())) == 16  # one layer's tensors, however deep


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES + ("modernbert",))
def test_finetuning_a_checkpoint_of_each_family(family, save_hf_model, tmp_path, tokenizer):
    ours, _ = bert.load_pretrained(str(save_hf_model(build_hf(family, PRETRAINING[family][0]))))
    ours.add_output_heads(classifier_labels=["pet", "place"])
    rng = random.Random(1)
    examples = [Example(" ".join(rng.choice(WORDS) for _ in range(4)) + f" {key}", None, label, f"toy:{i}")
                for i, (key, label) in enumerate([("dog", "pet"), ("park", "place")] * 6)]
    best = finetune(ours, tokenizer, examples, examples[:4], tmp_path / "out",
                    FinetuneConfig(epochs=1, batch_size=4, max_length=16, learning_rate=1e-3, patience=0))
    assert 0.0 <= best["accuracy"] <= 1.0
    reloaded, _ = bert.load_pretrained(str(tmp_path / "out" / "model"))
    assert reloaded.config.family == family and reloaded.labels == ["pet", "place"]
    ids = torch.tensor([tokenizer.encode("the dog went to the park").input_ids])
    types = torch.zeros_like(ids)
    with torch.no_grad():
        torch.testing.assert_close(reloaded(ids, types, output="classifier"), ours.eval()(ids, types, output="classifier"))


def test_electra_pretraining_from_a_checkpoint_keeps_its_discriminator(save_hf_model, tmp_path, tokenizer):
    """A checkpoint holds the discriminator only: the CLI trains it beside a fresh generator (Clark et al. 2020)."""
    from safetensors.torch import load_file

    from bert.__main__ import main

    folder = save_hf_model(build_hf("electra", "ElectraForPreTraining"))
    loaded, _ = bert.load_pretrained(str(folder))
    out = tmp_path / "run"
    code = main(["pretrain", "--init", str(folder), "--train-file", str(corpus(tmp_path / "train.txt")), "--out", str(out),
                 "--steps", "1", "--batch-size", "4", "--max-length", "16", "--learning-rate", "0"])
    assert code == 0
    weights = load_file(str(out / "checkpoint" / "model.safetensors"))
    mine = {f"discriminator.{name}": tensor for name, tensor in loaded.state_dict().items()}
    for name, tensor in mine.items():  # a learning rate of 0: the checkpoint's discriminator, unchanged
        # the shared token and position embeddings are saved once, under the generator's names
        saved = weights.get(name, weights.get(name.replace("discriminator.embedding.", "generator.embedding.")))
        assert saved is not None and torch.equal(saved, tensor), name
    assert any(name.startswith("generator.lm_head.") for name in weights)
