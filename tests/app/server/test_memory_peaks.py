"""Memory priced for what a computation holds, checked against what it holds: one student's largest allowed
circuits (EAP-IG), value zeroing and probe runs at 512 tokens on a model of BERT-base's shape (random weights, built
here: no download) each stay within the peak they were priced at (bert/costs.py: Cost.peak), or are refused with
the numbers under the server's default memory budget (viz_app/server/settings.py).

Each computation runs in a fresh process of its own, as a server's heavy job runs in a process that holds the
model already: its peak is the rise of the resident memory's high-water mark (VmHWM in /proc/self/status, reset to
the resident memory just before the computation starts by writing 5 to /proc/self/clear_refs) over the resident
memory at that moment, with the model and the input loaded and the same computation run once on 8 tokens (the
libraries' code a first pass pages in is the process's, not the computation's: a server's process has run pages
before), under a fixed mmap threshold (the fixture says why).
One PyTorch thread, as the server sets it on 2 cores.

The three run at once, and to stay near a minute on two cores each stops where its peak has been reached (a watcher, bert/stopping.py,
as a closed tab stops it): the later passes repeat the same shapes, so they hold no more.
- EAP-IG at 512 tokens is refused (its backward pass keeps gigabytes of receiver streams); its largest allowed
  pair is priced at 50 integration steps and run at one: each step's autograd graph is freed before the next, so
  the price does not depend on the steps (asserted). It runs its step, then the first faithfulness curve, whose
  batch of circuit sizes patches every receiver's stream, and stops at the second curve.
- Value zeroing at 512 tokens is refused by its passes (a row per token through every layer); the longest input a
  student may run records every layer's pattern, then runs batches of zeroed rows, each as wide as
  value_zeroing.ROWS_BUDGET allows, through the first layers; it stops after a few batches.
- The probes at 512 tokens: the fewest sentences a run splits (10, each 510 words), read and probed to the end.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
pytestmark = [pytest.mark.slow, pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="reads /proc")]
TOKENS = 512
VOCAB_SIZE = 30_522  # BERT-base's (bert-base-uncased): the output head's logits are as wide as there


def _vocabulary_file(folder: Path) -> Path:
    """The tests' tiny vocabulary, padded with unused tokens to BERT-base's size."""
    from bert_test_support import TINY_VOCAB

    path = folder / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB + [f"[unused{i}]" for i in range(VOCAB_SIZE - len(TINY_VOCAB))]))
    return path


def _status(field: str) -> int:
    line = next(line for line in open("/proc/self/status") if line.startswith(field + ":"))
    return int(line.split()[1]) * 1024


def _planned(what: str, loaded):
    """(computation, work, inputs, rows after which it stops) for `what`, at the largest size a student may run."""
    from bert.analysis.circuits.tasks import PairText
    from viz_app.specs import circuits, mixing, probes
    from viz_app.specs.base import Inputs
    from viz_app.specs.probes import runs
    from bert.data import LabelledSentence

    def words(count: int) -> str:
        return " ".join(["the"] * count)

    if what == "circuits":
        def work(tokens: int, steps: int = circuits.MAX_STEPS):  # [CLS] the ... dog [MASK] . [SEP]
            return circuits.ScoreWork(PairText(f"{words(tokens - 5)} dog [MASK] .", f"{words(tokens - 5)} cat [MASK] .",
                                               "is", "at"), "eap-ig", steps)
        return circuits.SCORES, work, lambda prepared: Inputs(loaded), 2 + 1 + 2 + 9
    if what == "value-zeroing":
        def work(tokens: int, steps: int = 0):
            return mixing.MethodWork("value-zeroing")
        inputs = lambda prepared: Inputs(loaded, prepared)  # noqa: E731
        return mixing.METHOD, work, inputs, 1 + 3
    def work(tokens: int, steps: int = 0):  # ten sentences of `tokens` - 2 words: the fewest a run splits
        sentences = [LabelledSentence(words(tokens - 4) + f" {word} .") for word in ("dog", "cat") * 5]
        return probes.RunWork(runs.text_data(sentences, "ten long sentences"), ("position",))
    return probes.RUN, work, lambda prepared: Inputs(loaded), 10**9


MEASURE = """
import json, sys
sys.path[:0] = ["tests", "tests/app/server"]
import torch
from test_memory_peaks import measure
torch.set_num_threads(1)
print(json.dumps(measure(sys.argv[1], sys.argv[2])))
"""


def measure(what: str, vocabulary: str) -> dict:
    """In a fresh process: the computation's verdict at TOKENS tokens under the default settings, and the largest
    size a student may run: its priced peak and the peak it reached."""
    import gc

    import torch

    from bert import Bert, BertConfig, BertTokenizer
    from bert.stopping import watching
    from viz_app.app.forward import prepare_input
    from viz_app.app.models import LoadedModel, ModelKey, summarize
    from viz_app.server.access import Role
    from viz_app.server.budget import Verdict, decide
    from viz_app.server.heavy_jobs import release_freed_memory
    from viz_app.server.settings import ServerSettings

    tokenizer = BertTokenizer.from_vocab(vocabulary)
    torch.manual_seed(0)
    model = Bert(BertConfig(vocab_size=VOCAB_SIZE)).eval()
    loaded = LoadedModel(ModelKey("bert-base-shape"), model, tokenizer, summarize(model))
    computation, work, inputs_of, stop_after = _planned(what, loaded)
    settings = ServerSettings()

    def prepared_input(tokens: int):  # the sentence box's input of `tokens` tokens (value zeroing reads it)
        return prepare_input(tokenizer, " ".join(["the"] * (tokens - 2)), "", [], False, TOKENS)

    def decision(tokens: int):
        cost = computation.cost(inputs_of(prepared_input(tokens)), work(tokens))
        return cost, decide(cost, model.config, Role.STUDENT, settings)

    at_512, verdict = decision(TOKENS)
    tokens, refused = TOKENS, TOKENS + 1
    if verdict.verdict is not Verdict.START:  # the largest input a student may run (the peak grows with the tokens)
        tokens, refused = 8, TOKENS
        while refused - tokens > 1:
            middle = (tokens + refused) // 2
            tokens, refused = (middle, refused) if decision(middle)[1].verdict is Verdict.START else (tokens, middle)
    cost, _ = decision(tokens)
    inputs, run = inputs_of(prepared_input(tokens)), work(tokens, 1)
    assert computation.cost(inputs, run).peak(model.config) == cost.peak(model.config)  # EAP-IG: whatever the steps
    rows = [0]

    def stop_when_the_peak_is_reached(count: int) -> None:
        rows[0] += count
        if rows[0] > stop_after:
            raise StopIteration

    try:  # a server's process has run pages before: the same code, on 8 tokens, as far as the measured run goes
        with watching(stop_when_the_peak_is_reached):
            computation.compute(inputs_of(prepared_input(8)), work(8, 1))
    except StopIteration:
        pass
    rows[0] = 0
    gc.collect()
    release_freed_memory()
    before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as clear:
        clear.write("5")  # the high-water mark starts again from the resident memory now
    try:
        with watching(stop_when_the_peak_is_reached):
            computation.compute(inputs, run)
    except StopIteration:
        pass
    return {"what": what, "verdict_at_512": verdict_name(decide(at_512, model.config, Role.STUDENT, settings)),
            "message_at_512": decide(at_512, model.config, Role.STUDENT, settings).message,
            "peak_at_512": at_512.peak(model.config), "tokens": tokens, "priced": cost.peak(model.config),
            "held": _status("VmHWM") - before, "budget": settings.memory_budget * 1_000_000, "rows": rows[0]}


def verdict_name(decision) -> str:
    return decision.verdict.value


WHAT = ("circuits", "value-zeroing", "probes")


@pytest.fixture(scope="module")
def measuring(tmp_path_factory) -> dict[str, subprocess.Popen]:
    """The three measurements, started at once (one thread each: two cores run two at a time)."""
    vocabulary = _vocabulary_file(tmp_path_factory.mktemp("vocabulary"))
    environment = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    environment.pop("BERT_INSIDE_MEMORY_BUDGET", None)  # the default setting
    # a fixed mmap threshold (as bench/forward.py measures): big blocks come from the kernel and go back to it when
    # freed, so the resident memory follows what the computation holds, not the heap glibc keeps after the
    # recorded pass's freed activations (with glibc's sliding threshold value zeroing's batches grew the heap by
    # about a third more than they held, and a second run grew it again)
    environment["MALLOC_MMAP_THRESHOLD_"] = "65536"
    started = {what: subprocess.Popen([sys.executable, "-c", MEASURE, what, str(vocabulary)], cwd=ROOT, env=environment,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for what in WHAT}
    yield started
    for process in started.values():
        if process.poll() is None:
            process.kill()
            process.wait()


@pytest.mark.parametrize("what", WHAT)
def test_the_largest_computation_a_student_may_run_stays_within_its_price(what, measuring):
    stdout, stderr = measuring[what].communicate(timeout=900)
    assert measuring[what].returncode == 0, stderr[-3000:]
    result = json.loads(stdout.strip().splitlines()[-1])
    if result["verdict_at_512"] == "refuse":  # refused with the numbers: what it would hold, or cost
        assert result["tokens"] < TOKENS
        if result["peak_at_512"] > result["budget"]:
            assert f"holding up to {result['peak_at_512'] / 1e6:,.0f} MB while it runs" in result["message_at_512"]
            assert f"a computation may hold {result['budget'] // 1_000_000:,} MB" in result["message_at_512"]
        else:  # value zeroing: 513 rows through every layer cost more than one computation of a student may
            assert "a computation may cost" in result["message_at_512"]
    else:
        assert result["tokens"] == TOKENS
    assert result["priced"] <= result["budget"], result
    assert 0 < result["held"] <= result["priced"], result
