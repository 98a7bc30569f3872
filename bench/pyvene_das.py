"""DAS trained by pyvene's recipe against ours, on the built-in model: the held-out IIA of each (docs/causal.md).

    OMP_NUM_THREADS=1 python -m bench.pyvene_das [--task number-pp] [--layer 0] [--steps 50] [--max-pairs 128] \\
        [--loss vocabulary|answers] [--json out/pyvene_das.json]

pyvene's recipe (Wu et al. 2024): its IntervenableModel around transformers' BertForMaskedLM (the built-in model
written in Hugging Face layout, bert/checkpoint.py's save_hf_folder), a LowRankRotatedSpaceIntervention of one
dimension at the subject's position of the layer's output, Adam on the rotation alone with the model's gradients
off, cross-entropy of the intervened [MASK]'s logits over the vocabulary against the source's answer. Ours:
`train_rotation` (bert/analysis/causal/alignment.py), whose loss compares the two answers. Same pairs (the task's
held-out split, seed 0), starting rotation, batches, steps and learning rate; both scored by the same held-out IIA.
`pyvene_rotation` is also what tests/analysis/causal/test_alignment_pyvene_training.py runs on a tiny model.
"""
from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Sequence

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch  # noqa: E402

from bert.analysis.causal.alignment import AlignmentSettings, prepare_split, train_rotation  # noqa: E402
from bert.analysis.causal.interchange import PreparedPair, evaluate, interchange_accuracy  # noqa: E402
from bert.analysis.corpus.batching import pad  # noqa: E402


def starting_rotation(hidden: int, settings: AlignmentSettings) -> torch.Tensor:
    """train_rotation's start: torch's orthogonal init of a [hidden, dims] matrix from the seed's own generator."""
    start = torch.empty(hidden, settings.dims)
    torch.nn.init.orthogonal_(start, generator=torch.Generator().manual_seed(settings.seed))
    return start


def pyvene_rotation(theirs, layer: int, pad_id: int, train: Sequence[PreparedPair], start: torch.Tensor,
                    settings: AlignmentSettings, loss_over: str = "vocabulary") -> torch.Tensor:
    """pyvene's DAS training on transformers' BertForMaskedLM `theirs`, at the subject's position of layer `layer`'s
    output, from `start` ([hidden, dims]), the batches drawn as train_rotation draws them: the learned basis.
    loss_over "vocabulary": pyvene's tutorials' cross-entropy over every word; "answers": over the two answers
    only, as train_rotation."""
    import pyvene

    intervention = pyvene.LowRankRotatedSpaceIntervention(embed_dim=start.shape[0], low_rank_dimension=start.shape[1])
    intervention.rotate_layer.weight = start  # through the orthogonal parametrisation's right inverse
    config = pyvene.IntervenableConfig(representations=[pyvene.RepresentationConfig(
        component=f"bert.encoder.layer[{layer}].output", unit="pos", max_number_of_units=1, intervention=intervention)])
    model = pyvene.IntervenableModel(config, theirs)
    model.disable_model_gradients()
    optimizer = torch.optim.Adam(intervention.rotate_layer.parameters(), lr=settings.learning_rate)
    batches = torch.Generator().manual_seed(settings.seed)
    for _ in range(settings.steps):
        batch = [train[i] for i in torch.randperm(len(train), generator=batches)[: min(settings.batch_size, len(train))]]
        inputs = {}
        for side in ("base", "source"):
            ids, types, attention = pad([getattr(p, side) for p in batch], pad_id, torch.device("cpu"))
            inputs[side] = {"input_ids": ids, "token_type_ids": types, "attention_mask": attention}
        at = [[[p.subject] for p in batch]]
        _, out = model(inputs["base"], [inputs["source"]], unit_locations={"sources->base": (at, at)})
        logits = out.logits[torch.arange(len(batch)), [p.mask for p in batch]]  # [batch, vocab]
        if loss_over == "answers":
            logits = logits.gather(1, torch.tensor([[p.base_answer_id, p.source_answer_id] for p in batch]))
            target = torch.ones(len(batch), dtype=torch.long)
        else:
            target = torch.tensor([p.source_answer_id for p in batch])
        loss = torch.nn.functional.cross_entropy(logits, target)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    return intervention.rotate_layer.weight.detach().clone()


def main() -> None:
    from transformers import BertForMaskedLM

    from bert import load_pretrained
    from bert.checkpoint import save_hf_folder
    from bert.data.variable_tasks import task_pairs
    from bert.hooks import hook_name

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--task", default="number-pp")
    parser.add_argument("--layer", type=int, default=0)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--max-pairs", type=int, default=128)
    parser.add_argument("--loss", choices=("vocabulary", "answers"), default="vocabulary",
                        help="pyvene's loss: over the vocabulary (its tutorials') or over the two answers (ours)")
    parser.add_argument("--json", type=Path, default=Path("out/pyvene_das.json"))
    args = parser.parse_args()
    torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))
    ours, tokenizer = load_pretrained("minilm")
    settings = AlignmentSettings(method="das", dims=1, steps=args.steps, max_pairs=args.max_pairs, seed=0)
    site = (hook_name("layer_out", args.layer), "subject")
    split, recorded = prepare_split(ours, tokenizer, task_pairs(args.task), settings, [site])
    with tempfile.TemporaryDirectory() as folder:
        theirs = BertForMaskedLM.from_pretrained(save_hf_folder(ours, folder)).eval()
    expected_train, expected_test = (torch.ones(len(part), dtype=torch.bool) for part in (split.train, split.test))
    started = time.perf_counter()
    ours_basis, _ = train_rotation(ours, tokenizer.pad_id, split.train, recorded["train"][1][site], expected_train, *site, settings)
    ours_seconds = time.perf_counter() - started
    start = starting_rotation(ours.config.hidden_size, settings)
    started = time.perf_counter()
    theirs_basis = pyvene_rotation(theirs, args.layer, tokenizer.pad_id, split.train, start, settings, args.loss)
    theirs_seconds = time.perf_counter() - started
    scores = {name: interchange_accuracy(evaluate(ours, tokenizer.pad_id, split.test, *site, recorded["test"][1][site], basis),
                                         expected_test)
              for name, basis in (("start", start), ("ours", ours_basis), ("pyvene", theirs_basis))}
    report = {"task": args.task, "pyvene_loss": args.loss, "layer": args.layer, "position": "subject", "steps": args.steps, "batch_size": settings.batch_size,
              "learning_rate": settings.learning_rate, "pairs": {"train": len(split.train), "test": len(split.test)},
              "iia": scores, "seconds": {"ours": ours_seconds, "pyvene": theirs_seconds}, "load": os.getloadavg()}
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
