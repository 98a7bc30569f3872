"""`python -m bert transcoders ...` and `python -m bert graph ...`.

    python -m bert transcoders train --model minilm --data data/corpus/train.txt --features 4096 --k 32 --out out/transcoders
    python -m bert transcoders measure --transcoders out/transcoders --model minilm --data ud-ewt-test --json out/card.json
    python -m bert transcoders label --transcoders out/transcoders --model minilm --data data/corpus/train.txt --lines 2000
    torchrun --nproc_per_node 4 -m bert transcoders train ...      # data-parallel: each rank reads every 4th line
    python -m bert graph --model minilm --transcoders out/transcoders --text "the keys to the cabinet [MASK] on the table ." \
        --target are --foil is --json out/graph.json

transcoders train writes DIR/transcoders.safetensors and DIR/config.json with the held-out figures (the model
card; on UD English EWT test unless --measure says otherwise), and DIR/checkpoint.pt as it goes (a second run with
the same DIR resumes). transcoders label writes DIR/feature_labels.json, each feature's top word pieces on the
first --lines lines of --data (transcoder_labels.py). graph prints the graph's size, its replacement and completeness scores and the strongest
edges into the target, and writes circuit-tracer's graph JSON (bert/analysis/tracing/graph_json.py). Bad input: one
line on stderr, exit status 2.
"""
from __future__ import annotations

import json
import logging
from dataclasses import replace
from pathlib import Path

from ...cli_arguments import add_model_argument
from ...devices import add_device_argument, log_device
from ...errors import InvalidInputError

log = logging.getLogger(__name__)


def add_transcoders_arguments(parser) -> None:
    actions = parser.add_subparsers(dest="transcoders_action", required=True)
    train = actions.add_parser("train", help="train one TopK transcoder per layer (what each MLP reads -> what it writes)")
    add_model_argument(train)
    train.add_argument("--data", required=True, help="a UTF-8 text file (one sentence per line), builtin, or ud-ewt "
                                                     "(EWT dev; EWT test stays for measuring)")
    train.add_argument("--features", type=int, required=True, help="features per layer F")
    train.add_argument("--k", type=int, required=True, help="features kept per token")
    train.add_argument("--out", type=Path, required=True, help="folder for transcoders.safetensors, config.json, checkpoint.pt")
    train.add_argument("--steps", type=int, default=2000)
    train.add_argument("--batch-tokens", type=int, default=1024, help="tokens per step (per rank under torchrun)")
    train.add_argument("--lr", type=float, default=5e-4)
    train.add_argument("--buffer-tokens", type=int, default=8192, help="tokens mixed before they are drawn")
    train.add_argument("--measure", default="ud-ewt-test",
                       help="held-out text for the model card: a text file, a .conllu file, builtin or ud-ewt-test")
    train.add_argument("--checkpoint-every", type=int, default=200)
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--aux-k", type=int, default=256, help="dead features the auxiliary loss (AuxK) uses per token; 0: none")
    train.add_argument("--dead-after-tokens", type=int, default=100_000,
                       help="a feature silent for this many tokens counts as dead and is trained by the auxiliary loss")
    train.add_argument("--init", choices=("random", "neurons"), default="random",
                       help="neurons: each feature starts as one of the MLP's neurons (--features = the MLP's width)")
    train.add_argument("--float16", action="store_true", help="store the weights in float16 (half the file; loaded as float32)")
    add_device_argument(train)
    measure = actions.add_parser("measure", help="the held-out figures of trained transcoders on other text")
    measure.add_argument("--transcoders", type=Path, required=True, help="a folder written by transcoders train")
    add_model_argument(measure, help="the model they were trained on")
    measure.add_argument("--data", required=True, help="a text file, a .conllu file, builtin or ud-ewt-test")
    measure.add_argument("--json", type=Path, help="write the figures as JSON here")
    add_device_argument(measure)
    label = actions.add_parser("label", help="label each feature by the word pieces it fires on most (feature_labels.json)")
    label.add_argument("--transcoders", type=Path, required=True, help="a folder written by transcoders train")
    add_model_argument(label, help="the model they were trained on")
    label.add_argument("--data", required=True, help="a UTF-8 text file, one sentence per line")
    label.add_argument("--lines", type=int, default=2000, help="read the first this many lines (2000)")
    add_device_argument(label)


def run_transcoders(args) -> int:
    if args.transcoders_action == "measure":
        return _measure(args)
    if args.transcoders_action == "label":
        return _label(args)
    import torch

    from ...pretrained import load_pretrained
    from ...pretraining.distributed import on_ranks
    from ..features.corpora import BUILTIN_CORPORA, load_corpus
    from ..features.features_cli import training_lines
    from .transcoder_measures import measure_transcoders
    from .transcoder_train import TranscoderSettings, train_transcoders

    settings = TranscoderSettings(features=args.features, k=args.k, steps=args.steps, batch_tokens=args.batch_tokens,
                                  learning_rate=args.lr, buffer_tokens=args.buffer_tokens,
                                  checkpoint_every=args.checkpoint_every, seed=args.seed, aux_k=args.aux_k,
                                  dead_after_tokens=args.dead_after_tokens, init=args.init)
    settings.check()
    lines, data_name = training_lines(args.data, args.measure)
    if args.measure not in BUILTIN_CORPORA and not Path(args.measure).exists():
        raise InvalidInputError(f"--measure {args.measure}: no such file; give a text or .conllu file, builtin or ud-ewt-test")

    def work(ranks, device) -> int:
        model, tokenizer = load_pretrained(args.model, device=device, pack_for_cpu=True)
        if ranks.main:
            log_device(model)
        transcoders, config = train_transcoders(model, tokenizer, lines, settings, args.out, args.model, data_name, ranks)
        if ranks.main:
            corpus = load_corpus(args.measure, tokenizer, model, model.config.max_position_embeddings)
            figures = measure_transcoders(model, tokenizer, transcoders, corpus)
            transcoders.save(args.out, replace(config, held_out=figures), torch.float16 if args.float16 else torch.float32)
            print(json.dumps({"out": str(args.out), "steps": config.steps, "tokens": config.tokens, "held_out": figures}, indent=1))
        return 0

    return on_ranks(args.device, work)


def _measure(args) -> int:
    from ...pretrained import load_pretrained
    from ..features.corpora import load_corpus
    from .transcoder import load_transcoders
    from .transcoder_measures import measure_transcoders

    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    transcoders = load_transcoders(args.transcoders, model)
    corpus = load_corpus(args.data, tokenizer, model, model.config.max_position_embeddings)
    figures = measure_transcoders(model, tokenizer, transcoders, corpus)
    print(json.dumps(figures, indent=1))
    _write_json(args.json, figures)
    return 0


def _label(args) -> int:
    from ...pretrained import load_pretrained
    from ..corpus.index_cli import read_lines
    from .transcoder import load_transcoders, read_config
    from .transcoder_labels import top_token_labels, write_feature_labels

    if args.lines < 1:
        raise InvalidInputError(f"--lines must be 1 or more, not {args.lines}")
    read_config(args.transcoders)  # a bad folder is refused before the model loads
    sentences = read_lines(Path(args.data))[: args.lines]
    model, tokenizer = load_pretrained(args.model, device=args.device, pack_for_cpu=True)
    transcoders = load_transcoders(args.transcoders, model)
    labels = top_token_labels(model, tokenizer, transcoders, sentences)
    path = write_feature_labels(args.transcoders, labels, transcoders.config)
    print(f"{len(labels)} of {transcoders.config.layers * transcoders.config.features} features labelled from "
          f"{len(sentences)} lines: {path}")
    return 0


def add_graph_arguments(parser) -> None:
    add_model_argument(parser)
    parser.add_argument("--transcoders", type=Path, required=True, help="a folder written by `python -m bert transcoders train`")
    parser.add_argument("--text", required=True, help='the sentence, with one [MASK]: "the keys to the cabinet [MASK] on the table ."')
    parser.add_argument("--target", required=True, help="the word whose logit at the [MASK] is explained (one vocabulary token)")
    parser.add_argument("--foil", help="explain logit(target) − logit(foil) instead (one vocabulary token)")
    parser.add_argument("--node-threshold", type=float, default=0.8, help="keep the nodes carrying this share of the influence (0.8)")
    parser.add_argument("--edge-threshold", type=float, default=0.98, help="keep the edges carrying this share of the influence (0.98)")
    parser.add_argument("--max-features", type=int, help="keep at most this many active features, the most influential; "
                                                         "the others go into the error nodes (default: every one)")
    parser.add_argument("--json", type=Path, help="write circuit-tracer's graph JSON here")
    add_device_argument(parser)


def run_graph(args) -> int:
    from ...pretrained import load_pretrained
    from .attribution_graph import attribution_graph, graph_cost
    from .graph_json import graph_json
    from .graph_pruning import graph_scores, prune
    from .transcoder import load_transcoders, read_config
    from .transcoder_labels import read_feature_labels

    for name in ("node_threshold", "edge_threshold"):
        if not 0.0 <= getattr(args, name) <= 1.0:
            raise InvalidInputError(f"--{name.replace('_', '-')} must lie between 0 and 1, not {getattr(args, name)}")
    if args.max_features is not None and args.max_features < 0:
        raise InvalidInputError(f"--max-features must be 0 or more, not {args.max_features}")
    read_config(args.transcoders)  # a bad folder is refused before the model loads
    model, tokenizer = load_pretrained(args.model, device=args.device)
    transcoders = load_transcoders(args.transcoders, model)
    log_device(model)
    tokens = len(tokenizer.encode(args.text, max_length=model.config.max_position_embeddings))
    log.info("cost: %s", graph_cost(model.config, tokens, transcoders.config.k, max_features=args.max_features).describe())
    graph = attribution_graph(model, tokenizer, transcoders, args.text, args.target, args.foil, max_features=args.max_features)
    pruned = prune(graph, args.node_threshold, args.edge_threshold)
    replacement_score, completeness_score = graph_scores(graph)
    target = graph.target_index
    print(f"{graph.target_label} at token {graph.target.position}: {float(graph.inputs[target]):.4f} = edges "
          f"{float(graph.adjacency[target].sum()):.4f} + biases {float(graph.bias[target]):.4f}")
    folded = f" ({graph.folded} more folded into the error nodes)" if graph.folded else ""
    print(f"{graph.num_features} active features{folded}, {graph.num_nodes} nodes; kept {int(pruned.nodes.sum())} nodes, "
          f"{int(pruned.edges.sum())} edges; replacement score {replacement_score:.3f}, completeness score {completeness_score:.3f}")
    for source in graph.adjacency[target].abs().argsort(descending=True)[:10].tolist():
        info = graph.describe(source)
        where = f"{info['kind']} layer {info['layer']}" if info["layer"] is not None else info["kind"]
        feature = f" feature {info['feature']}" if info["feature"] is not None else ""
        print(f"  {where}{feature} at {graph.tokens[info['position']]!r} ({info['position']}): {float(graph.adjacency[target, source]):+.4f}")
    if args.json is not None:
        slug = "bert-" + "-".join(t for t in (args.target, args.foil) if t)
        labels = read_feature_labels(args.transcoders, transcoders.config)
        _write_json(args.json, graph_json(graph, pruned, model.config.vocab_size, slug, args.model, args.node_threshold, labels))
    return 0


def _write_json(path: Path | None, value: dict) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=1) + "\n", encoding="utf-8")
