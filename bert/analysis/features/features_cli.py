"""`python -m bert neurons ...` and `python -m bert sae train ...`.

    python -m bert neurons --model minilm --layer 3 --neuron 812 --data ud-ewt --top 20 --json out/neuron.json
    python -m bert sae train --model minilm --layer 3 --data data/corpus/train.txt --features 4096 --k 32 --out out/sae
    python -m bert sae measure --sae out/sae --model minilm --data data/corpus/heldout.txt --json out/figures.json
    python -m bert sae label --sae out/sae --feature 3123 --text "the suffix -ness"   # kept in out/sae/labels.json
    torchrun --nproc_per_node 4 -m bert sae train ...      # data-parallel: each rank reads every 4th line

neurons writes {"model", "layer", "neuron", "top": [{"sentence", "position", "token", "activation"}, ...]}: every
token of every sentence (each encoded alone) counts, [CLS] and [SEP] included; `position` counts word pieces from
[CLS] = 0; layers count from 0. sae train writes DIR/sae.safetensors and DIR/config.json with the held-out figures
(on UD English EWT test unless --measure says otherwise). Bad input: one line on stderr, exit status 2.
"""
from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

from ...devices import add_device_argument, log_device
from ...errors import InvalidInputError
from ...cli_arguments import add_model_argument

log = logging.getLogger(__name__)
DATA_HELP = ("a UTF-8 text file (one sentence per line), a .conllu treebank, a corpus-index folder, builtin "
             "(the 992 WordNet sentences) or ud-ewt")


def add_neuron_arguments(parser) -> None:
    add_model_argument(parser)
    parser.add_argument("--layer", type=int, required=True, help="0-based layer whose MLP neuron to read")
    parser.add_argument("--neuron", type=int, required=True, help="0-based neuron of the MLP's GELU output")
    parser.add_argument("--data", default="ud-ewt", help=DATA_HELP + " (dev + test; default)")
    parser.add_argument("--top", type=int, default=20, help="how many top-activating tokens")
    parser.add_argument("--json", type=Path, help="write the result as JSON here")
    parser.add_argument("--batch-size", type=int, default=32)
    add_device_argument(parser)


def run_neurons(args) -> int:
    from ...pretrained import load_pretrained
    from .corpora import load_corpus
    from .neurons import check_layer, check_neuron, scan_neurons, top_examples

    if args.top < 1:
        raise InvalidInputError(f"--top must be 1 or more, not {args.top}")
    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    log_device(model)
    layer, neuron = check_layer(model, args.layer), check_neuron(model, args.neuron)
    corpus = load_corpus(args.data, tokenizer, model, model.config.max_position_embeddings)
    scan = scan_neurons(model, corpus, layer, tokenizer.pad_id, k=args.top, batch_size=args.batch_size)
    result = {"model": args.model, "layer": layer, "neuron": neuron,
              "top": [example.as_json() for example in top_examples(scan, corpus, neuron)]}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    print(f"neuron {neuron} of layer {layer} over {corpus.name} ({corpus.num_tokens} tokens):")
    for example in result["top"]:
        print(f"  {example['activation']:8.3f}  {example['token']:<14} (position {example['position']}) {example['sentence']}")
    return 0


def add_sae_arguments(parser) -> None:
    actions = parser.add_subparsers(dest="sae_action", required=True)
    train = actions.add_parser("train", help="train a TopK sparse autoencoder on one layer's residual stream")
    add_model_argument(train)
    train.add_argument("--hidden-states-index", type=int, required=True, metavar="I",
                       help="the residual stream it reads, hidden_states[I]: 0 = embeddings, i = after layer i-1 (bert/layers.py)")
    train.add_argument("--data", required=True, help="a UTF-8 text file (one sentence per line), builtin, or ud-ewt "
                                                     "(EWT dev; EWT test stays for measuring)")
    train.add_argument("--features", type=int, required=True, help="dictionary size F")
    train.add_argument("--k", type=int, required=True, help="features kept per token")
    train.add_argument("--out", type=Path, required=True, help="folder for sae.safetensors, config.json, checkpoint.pt")
    train.add_argument("--steps", type=int, default=2000)
    train.add_argument("--batch-tokens", type=int, default=2048, help="vectors per step (per rank under torchrun)")
    train.add_argument("--lr", type=float, default=5e-4)
    train.add_argument("--no-special-tokens", action="store_true", help="leave [CLS] and [SEP] out of training")
    train.add_argument("--measure", default="ud-ewt-test",
                       help="held-out text for the figures in config.json: a text file, a .conllu file, builtin or ud-ewt-test")
    train.add_argument("--float16", action="store_true", help="store the weights in half precision (half the size)")
    train.add_argument("--buffer-tokens", type=int, default=65_536, help="vectors mixed before they are drawn")
    train.add_argument("--repeats", type=int, default=1, help="times each vector is drawn (fewer model passes per step)")
    train.add_argument("--checkpoint-every", type=int, default=200)
    train.add_argument("--seed", type=int, default=0)
    add_device_argument(train)
    measure = actions.add_parser("measure", help="the held-out figures of a trained SAE on other text")
    measure.add_argument("--sae", type=Path, required=True, help="a folder written by sae train")
    add_model_argument(measure, help="the model it was trained on")
    measure.add_argument("--data", required=True, help="a text file, a .conllu file, builtin or ud-ewt-test")
    measure.add_argument("--json", type=Path, help="write the figures as JSON here")
    add_device_argument(measure)
    label = actions.add_parser("label", help="label a feature of a trained SAE (kept in its labels.json)")
    label.add_argument("--sae", type=Path, required=True, help="a folder written by sae train")
    label.add_argument("--feature", type=int, required=True, help="the feature's number")
    label.add_argument("--text", required=True, help='the label ("" removes it)')


def run_sae(args) -> int:
    if args.sae_action == "measure":
        return _measure(args)
    if args.sae_action == "label":
        return _label(args)
    import torch

    from ...pretrained import load_pretrained
    from ...pretraining.distributed import on_ranks
    from .corpora import BUILTIN_CORPORA, load_corpus
    from .sae_measures import measure_sae
    from .sae_train import SaeSettings, train_sae

    settings = SaeSettings(features=args.features, k=args.k, steps=args.steps, batch_tokens=args.batch_tokens,
                           learning_rate=args.lr, special_tokens=not args.no_special_tokens,
                           buffer_tokens=args.buffer_tokens, repeats=args.repeats, checkpoint_every=args.checkpoint_every, seed=args.seed)
    settings.check()
    lines, data_name = training_lines(args.data, args.measure)
    if args.measure not in BUILTIN_CORPORA and not Path(args.measure).exists():
        raise InvalidInputError(f"--measure {args.measure}: no such file; give a text or .conllu file, builtin or ud-ewt-test")

    def work(ranks, device) -> int:
        model, tokenizer = load_pretrained(args.model, device=device, pack_for_cpu=True)
        if not 0 <= args.hidden_states_index <= model.config.num_layers:
            raise InvalidInputError(f"--hidden-states-index must lie in 0 .. {model.config.num_layers} (0 = embeddings), "
                                    f"not {args.hidden_states_index}")
        if ranks.main:
            log_device(model)
        sae, config = train_sae(model, tokenizer, lines, args.hidden_states_index, settings, args.out, args.model, data_name, ranks)
        if ranks.main:
            corpus = load_corpus(args.measure, tokenizer, model, model.config.max_position_embeddings)
            figures = measure_sae(model, tokenizer, sae, corpus)
            sae.save(args.out, replace(config, held_out=figures), torch.float16 if args.float16 else torch.float32)
            print(json.dumps({"out": str(args.out), "steps": config.steps, "tokens": config.tokens, "held_out": figures}, indent=1))
        return 0  # rank 0 reports for all

    return on_ranks(args.device, work)


def training_lines(data: str, measure: str) -> tuple[list[str], str]:
    """(training sentences, how config.json names them); the measuring text is never the training text."""
    from ...data import builtin_sentences
    from ..corpus.index_cli import read_lines
    from ..probing.treebank import builtin_treebank

    if data == measure or (data == "ud-ewt" and measure in ("ud-ewt", "ud-ewt-dev")):
        raise InvalidInputError(f"--data and --measure are the same text ({data}): measure on text the SAE never saw")
    if data == "builtin":
        return [s.text for s in builtin_sentences()], "builtin: the 992 WordNet example sentences"
    if data == "ud-ewt":
        return [s.text for s in builtin_treebank("dev").sentences], "UD English EWT dev"
    return read_lines(Path(data)), str(data)


def _measure(args) -> int:
    from ...pretrained import load_pretrained
    from .corpora import load_corpus
    from .sae import load_sae
    from .sae_measures import measure_sae

    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    sae = load_sae(args.sae, model)
    corpus = load_corpus(args.data, tokenizer, model, model.config.max_position_embeddings)
    figures = measure_sae(model, tokenizer, sae, corpus)
    print(json.dumps(figures, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    return 0


def _label(args) -> int:
    from .feature_labels import set_label
    from .sae import read_config

    path = set_label(args.sae, args.feature, args.text, read_config(args.sae).features)
    print(f"feature {args.feature}: {args.text.strip() or '(label removed)'} ({path})")
    return 0
