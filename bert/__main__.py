"""Command line: `python -m bert predict "The [MASK] barked." --model minilm`, `python -m bert pretrain ...`,
`python -m bert finetune --train-file questions.csv --out out/trec`, `python -m bert probe --data ud-ewt`,
`python -m bert patch --clean ... --corrupted ... --answer he --foil she`,
`python -m bert mixing --text "The [MASK] barked." --method alti`,
`python -m bert das --task number-pp --layer 0 --method das`,
`python -m bert circuit --clean ... --corrupt ... --answer are --foil is --method eap-ig`,
`python -m bert transcoders train --data ... --features 4096 --k 32 --out out/transcoders`,
`python -m bert graph --transcoders out/transcoders --text "..." --target are --foil is --json out/graph.json`, `python -m bert erase --data ud-ewt --task upos --hidden-states-index 3`,
and `python -m bert download bert-base-uncased` (once, while online: the app then offers it first)."""
from __future__ import annotations

import argparse
import json
import logging
import sys
from dataclasses import asdict

from .devices import DTYPES, add_device_argument, log_device, resolve_device
from .errors import BertError
from .cli_arguments import add_model_argument


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bert", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    predict = commands.add_parser("predict", help="top predictions for every [MASK] in a sentence")
    predict.add_argument("text", help='a sentence with [MASK] in it, e.g. "The [MASK] barked at the mailman."')
    predict.add_argument("--pair", help="an optional second sentence (segment B)")
    add_model_argument(predict)
    predict.add_argument("--top-k", type=int, default=5)
    predict.add_argument("--json", action="store_true", help="machine-readable output")
    predict.add_argument("--dtype", choices=DTYPES, help="bfloat16 or float16: reduced-precision inference (default float32)")
    download = commands.add_parser("download", help="fetch a BERT from the Hugging Face hub into the local cache")
    download.add_argument("repo_id", help="e.g. bert-base-uncased, roberta-base, answerdotai/ModernBERT-base, microsoft/deberta-v3-base")
    for command in (predict, download):
        add_device_argument(command)
    from .pretraining.cli import add_arguments

    add_arguments(commands.add_parser("pretrain", help="pre-train or fine-tune with MLM (and NSP or SOP), or ELECTRA's replaced-token detection"))
    from .finetuning.cli import add_arguments as add_finetune_arguments

    add_finetune_arguments(commands.add_parser("finetune", help="train a classifier, regressor or token tagger on labelled data"))
    from .analysis.corpus import index_cli

    index_cli.add_arguments(commands.add_parser("index", help="index every token of a corpus for corpus search"))
    from .analysis.probing import probe_cli

    probe_cli.add_arguments(commands.add_parser("probe", help="probe every layer on a treebank: tags, arcs, structural probes"))
    from .analysis.features import features_cli

    features_cli.add_neuron_arguments(commands.add_parser("neurons", help="an MLP neuron's top-activating tokens over a corpus"))
    features_cli.add_sae_arguments(commands.add_parser("sae", help="sparse autoencoders: sae train, measure, label"))
    from .analysis.causal import causal_cli

    causal_cli.add_patch_arguments(commands.add_parser("patch", help="activation patching: which layer and position restore the answer"))
    causal_cli.add_erase_arguments(commands.add_parser("erase", help="amnesic probing: erase a property from a layer with LEACE"))
    from .analysis.causal import alignment_cli

    alignment_cli.add_arguments(commands.add_parser("das", help="where a variable lives: interchange interventions, DAS and baselines"))
    from .analysis.attention import mixing_cli

    mixing_cli.add_arguments(commands.add_parser("mixing", help="what each token takes from the others, by one context-mixing method"))
    from .analysis.circuits import circuit_cli

    circuit_cli.add_arguments(commands.add_parser("circuit", help="circuits: which edges between heads and MLPs carry the answer"))
    from .analysis.tracing import tracing_cli

    tracing_cli.add_transcoders_arguments(commands.add_parser("transcoders", help="transcoders, one per layer: transcoders train, measure"))
    tracing_cli.add_graph_arguments(commands.add_parser("graph", help="the attribution graph of one [MASK] guess, through transcoders"))
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    from .finetuning.cli import run as finetune
    from .pretraining.cli import run as pretrain

    run = {"predict": _predict, "download": _download, "pretrain": pretrain, "finetune": finetune, "index": index_cli.run,
           "probe": probe_cli.run, "neurons": features_cli.run_neurons, "sae": features_cli.run_sae,
           "mixing": mixing_cli.run, "circuit": circuit_cli.run, "patch": causal_cli.run_patch,
           "erase": causal_cli.run_erase, "das": alignment_cli.run, "transcoders": tracing_cli.run_transcoders,
           "graph": tracing_cli.run_graph}[args.command]  # the subcommands above, each to its runner
    try:
        return run(args)
    except BertError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _download(args) -> int:
    """Fetch (with huggingface_hub's progress bars), then load once to check the files are whole.
    Exit status 3 when the hub cannot be reached, so scripts can go on offline."""
    from . import hub
    from .errors import DownloadError
    from .pretrained import load_folder

    try:
        folder = hub.download(args.repo_id)
    except DownloadError as error:
        print(f"{'offline' if error.reason == 'offline' else 'error'}: {error}", file=sys.stderr)
        return 3 if error.reason == "offline" else 2
    model, _ = load_folder(folder)
    log_device(model.to(resolve_device(args.device)))
    with_mlm = "with" if model.lm_head is not None else "without"
    print(f"{args.repo_id}: {model.config.num_layers} layers, {with_mlm} a masked-LM head, in the local Hugging Face cache ({folder})")
    return 0


def _predict(args) -> int:
    from .predict import predict_masks
    from .pretrained import load_pretrained

    model, tokenizer = load_pretrained(args.model, device=args.device, dtype=args.dtype, pack_for_cpu=True)
    log_device(model)
    encoding = tokenizer.encode(args.text, args.pair)
    predictions = predict_masks(model, tokenizer, encoding, args.top_k)
    if args.json:
        print(json.dumps([asdict(p) for p in predictions], indent=2))
        return 0
    if not predictions:
        print("no [MASK] in the text: type [MASK] where a word should be predicted")
    for number, prediction in enumerate(predictions, 1):
        print(f"[MASK] #{number} (token {prediction.position}):")
        for c in prediction.candidates:
            print(f"  {c.token:<15} {c.probability:7.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
