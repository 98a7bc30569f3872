"""Plain data and helpers shared by the bert tests: the sample inputs (bert/data/sample_inputs.py), a tiny
vocabulary, tiny model configs.

Tests import from here (`from bert_test_support import ...`), not from conftest: several folders under tests/
have a conftest.py, and `import conftest` would find whichever was loaded first. Fixtures live in conftest.py.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import torch

from bert.data.sample_inputs import PAIRS, SENTENCES  # noqa: F401 (the tests import them from here)

# A tiny uncased WordPiece vocabulary: every lower-case word can be spelled with it.
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
LETTERS = "abcdefghijklmnopqrstuvwxyz"
TINY_VOCAB = (
    SPECIAL_TOKENS
    + list(LETTERS)
    + ["##" + c for c in LETTERS]
    + list(".,!?'$") + list("0123456789")
    + ["the", "dog", "cat", "barked", "at", "mail", "##man", "park", "and", "her", "went", "to", "is", "of"]
)
assert len(set(TINY_VOCAB)) == len(TINY_VOCAB), "a repeated token would make the vocabulary shorter than its file"

# Hugging Face config fields for tiny random models: 1-4 layers, hidden 32-128, 2-4 heads.
TINY_CONFIGS = {
    "1layer-h32-2heads": dict(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64),
    "2layers-h64-4heads-gelu_new": dict(
        num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128, hidden_act="gelu_new"
    ),
    "3layers-h48-3heads-eps1e-5": dict(
        num_hidden_layers=3, hidden_size=48, num_attention_heads=3, intermediate_size=80, layer_norm_eps=1e-5
    ),
    "4layers-h128-4heads": dict(
        num_hidden_layers=4, hidden_size=128, num_attention_heads=4, intermediate_size=96, max_position_embeddings=40
    ),
}


FLOAT32_EPS = 2.0 ** -23  # the spacing of float32 numbers at 1 (np.finfo(np.float32).eps)


def float32_tolerance(magnitude: float, terms: int, sums: int = 1) -> float:
    """An absolute tolerance for two float32 computations of one value that add their terms in different orders
    (AVX2 against AVX-512 kernels, a batch of another shape): a sum of `terms` products of size about `magnitude`
    is rounded by at most terms · eps/2 of it (Higham 2002, "Accuracy and Stability of Numerical Algorithms", §3.1),
    and `sums` such sums in a row (layers, a softmax after a dot product) add theirs. A property of float32, not of one
    CPU."""
    return sums * terms * FLOAT32_EPS / 2 * max(magnitude, 1.0)


def hf_config(**fields):
    """A transformers BertConfig for the tiny vocabulary, eager attention (so attentions can be returned)."""
    from transformers import BertConfig as HFBertConfig

    defaults = dict(vocab_size=len(TINY_VOCAB), max_position_embeddings=64, attn_implementation="eager")
    return HFBertConfig(**{**defaults, **fields})


def randomize_(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Random values in every parameter, LayerNorms and biases included, so that no part can hide behind
    an identity or zero initialisation. Tied parameters are one tensor and stay tied."""
    generator = torch.Generator().manual_seed(seed)
    norms = {f"{module_name}.{param}".lstrip(".") for module_name, module in model.named_modules()
             if isinstance(module, torch.nn.LayerNorm) for param in ("weight", "bias")}  # any family's names
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if name in norms:
                parameter.copy_(1 + 0.1 * noise if name.endswith("weight") else 0.1 * noise)
            else:
                parameter.copy_(0.1 * noise)
    return model.eval()


def small_bert(vocab_size: int, seed: int = 0, max_positions: int = 64, **heads):
    """A random two-layer `bert.Bert` (hidden 32, 4 heads, MLP 48) at BERT's initialisation, built after
    `torch.manual_seed(seed)`, in eval mode; `heads` as Bert's own (mlm_head=False, classifier_labels=..., ...)."""
    from bert import Bert, BertConfig

    config = BertConfig(vocab_size=vocab_size, hidden_size=32, num_layers=2, num_heads=4, intermediate_size=48,
                        max_position_embeddings=max_positions)
    torch.manual_seed(seed)
    return Bert(config, **heads).eval()


def random_rows(vocab_size: int, layout: list[tuple[int, int]], seed: int) -> list[tuple[list[int], list[int]]]:
    """Rows of (input_ids, token_type_ids) shaped like real inputs: [CLS] A [SEP] (B [SEP]).
    layout: (tokens in A, tokens in B) per row, B = 0 for a single sentence."""
    cls, sep, first_word = TINY_VOCAB.index("[CLS]"), TINY_VOCAB.index("[SEP]"), len(SPECIAL_TOKENS)
    generator = torch.Generator().manual_seed(seed)
    rows = []
    for a, b in layout:
        words = torch.randint(first_word, vocab_size, (a + b,), generator=generator).tolist()
        ids = [cls] + words[:a] + [sep] + (words[a:] + [sep] if b else [])
        rows.append((ids, [0] * (a + 2) + [1] * (b + 1 if b else 0)))
    return rows


def pad_rows(rows, pad_id: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, token_type_ids, attention_mask), each [batch, longest], padded on the right."""
    longest = max(len(ids) for ids, _ in rows)
    input_ids = torch.full((len(rows), longest), pad_id)
    token_type_ids = torch.zeros((len(rows), longest), dtype=torch.long)
    attention_mask = torch.zeros((len(rows), longest), dtype=torch.long)
    for row, (ids, types) in enumerate(rows):
        input_ids[row, : len(ids)] = torch.tensor(ids)
        token_type_ids[row, : len(ids)] = torch.tensor(types)
        attention_mask[row, : len(ids)] = 1
    return input_ids, token_type_ids, attention_mask


# A batch with padding and sentence pairs: (tokens in A, tokens in B) per row.
TINY_LAYOUT = [(9, 0), (3, 0), (5, 6), (14, 0), (2, 3)]


def free_port() -> int:
    """A TCP port no one listens on now, for a process group's rendezvous."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def spawn_two_gloo_ranks(job, specs: list[tuple]) -> None:
    """Two processes in one gloo group (CPU), each calling `job(rank, *spec)` for every spec in turn, with a
    barrier between specs. One spawn for all the runs a test module needs: the start-up cost is paid once.
    `job` must be a module-level function (the processes are started afresh and import it)."""
    import torch.multiprocessing as mp

    mp.spawn(_gloo_rank, args=(free_port(), job, specs), nprocs=2, join=True)


def _gloo_rank(rank: int, port: int, job, specs: list[tuple]) -> None:
    import torch.distributed as dist

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=2)
    try:
        for spec in specs:
            job(rank, *spec)
            dist.barrier()
    finally:
        dist.destroy_process_group()
    sys.stdout.flush()
    sys.stderr.flush()
    # done: PyTorch's teardown at interpreter exit can abort a rank (SIGABRT), see bert.pretraining.distributed.on_ranks
    os._exit(0)


class Interrupted(Exception):
    """Raised in place of a training step, to stand for a run killed there."""


def killed_at(module, step_function: str, stop_at: int | None):
    """Context manager: while inside, `module.<step_function>` (a training loop's step, whose last argument is
    the number of steps done) raises Interrupted when that number reaches `stop_at`, and the run ends quietly
    there, its last checkpoint on disk. stop_at None: the run is not interrupted."""
    import contextlib

    @contextlib.contextmanager
    def patched():
        real_step = getattr(module, step_function)

        def step_or_stop(*args):
            if args[-1] == stop_at:
                raise Interrupted
            return real_step(*args)

        setattr(module, step_function, step_or_stop)
        try:
            yield
        except Interrupted:
            pass
        finally:
            setattr(module, step_function, real_step)

    return patched()


_NOUNS, _VERBS = ["dog", "cat", "park", "mailman"], ["barked", "went"]


# Two hand-tagged sentences in CoNLL-U, for tag mixes over a treebank.
TWO_SENTENCE_CONLLU = """# sent_id = 1
1\tthe\tthe\tDET\t_\t_\t2\tdet\t_\t_
2\tdog\tdog\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\tbarked\tbark\tVERB\t_\t_\t0\troot\t_\t_

# sent_id = 2
1\ther\ther\tPRON\t_\t_\t2\tnmod:poss\t_\t_
2\tcat\tcat\tNOUN\t_\t_\t3\tnsubj\t_\t_
3\twent\tgo\tVERB\t_\t_\t0\troot\t_\t_
4\tto\tto\tADP\t_\t_\t6\tcase\t_\t_
5\tthe\tthe\tDET\t_\t_\t6\tdet\t_\t_
6\tpark\tpark\tNOUN\t_\t_\t3\tobl\t_\t_

"""


def synthetic_conllu(num_sentences: int, seed: int = 0) -> str:
    """CoNLL-U text for treebank tests: sentences "the NOUN VERB at the NOUN ." with their tree (the verb is the
    root), in words the tiny vocabulary spells."""
    import numpy as np

    rng = np.random.default_rng(seed)
    blocks = []
    for number in range(num_sentences):
        subject, verb, place = rng.choice(_NOUNS), rng.choice(_VERBS), rng.choice(_NOUNS)
        rows = [("the", "DET", 2, "det"), (subject, "NOUN", 3, "nsubj"), (verb, "VERB", 0, "root"),
                ("at", "ADP", 6, "case"), ("the", "DET", 6, "det"), (place, "NOUN", 3, "obl"), (".", "PUNCT", 3, "punct")]
        lines = [f"# sent_id = {number}"] + [
            f"{i}\t{form}\t{form}\t{upos}\t_\t_\t{head}\t{deprel}\t_\t_" for i, (form, upos, head, deprel) in enumerate(rows, 1)
        ]
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def called(main, capsys, *args: str) -> subprocess.CompletedProcess:
    """A command line through its `main(argv)` in this process: its exit code and what it printed (pytest's
    `capsys`), as subprocess.run would give them from a fresh interpreter."""
    code = main(list(args))
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, printed.out, printed.err)


def run_bench(module: str, *args: str, timeout: float = 1800) -> subprocess.CompletedProcess:
    """`python -m bench.MODULE ARGS` in a fresh interpreter, from the repository root (tests never import bench/)."""
    root = Path(__file__).resolve().parents[1]
    return subprocess.run([sys.executable, "-m", f"bench.{module}", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=root, env={**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(root)})


def recheck_with_pages_swapped(run: dict, folder: Path) -> subprocess.CompletedProcess:
    """`python -m bench.classroom --recheck` on a class's record (its --json) in which each student's page shows the
    next student's predictions: the check must tell the sentences apart and fail every page."""
    shown = [student["shown"] for student in run["students"]]
    swapped = folder / "swapped.json"
    swapped.write_text(json.dumps({**run, "students": [{**student, "shown": shown[(i + 1) % len(shown)]}
                                                       for i, student in enumerate(run["students"])]}))
    return run_bench("classroom", "--recheck", str(swapped))


def required_under_ci(reason: str | None, tests: str) -> None:
    """Skip when a tool the tests need is missing (`reason` says which), except under CI=true, where the README's
    test command has installed it, so that its absence fails `tests` instead of hiding them."""
    import pytest

    if reason:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(f"{tests} cannot run under CI=true: {reason}")
        pytest.skip(reason)
