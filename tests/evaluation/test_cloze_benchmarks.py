"""The published cloze benchmarks (bert/evaluation): loaders, skip rules, and scoring against independent references.

References: the published per-item files (Goldberg's logits, Ettinger's top-5 lists and accuracies; docs/benchmarks.md
says where each comes from) in the folder BERT_INSIDE_EXTERNAL names, and `transformers` BertForMaskedLM + its own
tokenizer on the same tiny random weights. Without that data the tests that need it skip.
"""
from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest
import torch

from bert.evaluation import agreement, benchmark_sentences, ettinger
from bert.pretraining.cloze_eval import read_cloze
from bert_test_support import run_bench

ROOT = Path(__file__).resolve().parents[2]
EXTERNAL = Path(os.environ.get("BERT_INSIDE_EXTERNAL") or ROOT / ".." / "shared" / "external")
needs_external = pytest.mark.skipif(
    not (EXTERNAL / agreement.FOLDER).is_dir() or not (EXTERNAL / ettinger.FOLDER).is_dir(),
    reason=f"the published benchmark data is not at {EXTERNAL} (set BERT_INSIDE_EXTERNAL to its folder)",
)
GOLDBERG, ETTINGER = EXTERNAL / agreement.FOLDER, EXTERNAL / ettinger.FOLDER
BERT_BASE = "bert-base-uncased"


def published_top(test: ettinger.Test, model: str) -> list[list[str]]:
    """The published top-5 list of each probe (outputs/<model>/modelpreds-<key>: one space-separated line per context)."""
    lines = (ETTINGER / "outputs" / model / f"modelpreds-{test.key}").read_text(encoding="utf-8").splitlines()
    return [line.split() for line in lines[::test.lines_per_item]]


@pytest.fixture(scope="module")
def minilm_tokenizer(minilm_path):
    from bert import BertTokenizer

    return BertTokenizer.from_folder(minilm_path)


@pytest.fixture(scope="module")
def tiny(tiny_mlm_folder):
    """(our model, our tokenizer, transformers' model, transformers' tokenizer) on the same random weights."""
    from transformers import BertForMaskedLM, BertTokenizer as HFTokenizer

    import bert

    ours, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    return ours, tokenizer, reference, HFTokenizer(str(tiny_mlm_folder / "vocab.txt"), do_lower_case=True)


# --- Goldberg 2019 agreement ---

def write_pairs(folder: Path, pairs: list[tuple[str, int, str, str]]) -> Path:
    """A generated.tab in the published layout: (sentence with <eos>, verb index, correct form, wrong form) per pair."""
    columns = ["pattern", "constr_id", "sent_id", "correct_number", "form", "class", "type", "prefix", "n_attr",
               "punct", "freq", "len_context", "len_prefix", "sent"]
    with (folder / agreement.STIMULI).open("w", encoding="utf-8", newline="") as file:
        writer = csv.DictWriter(file, columns, delimiter="\t")
        writer.writeheader()
        for sentence, index, correct, wrong in pairs:
            for form, cls in ((correct, "correct"), (wrong, "wrong")):
                writer.writerow({c: "x" for c in columns} | {"form": form, "class": cls, "type": "generated",
                                                             "n_attr": 0, "len_prefix": index, "sent": sentence})
    return folder


HAND_MADE = [
    ("The dog barked at the Mail man . <eos>", 2, "barked", "went"),  # scored; capitals are lower-cased
    ("The cat is at the park <eos>", 2, "is", "of"),  # correct form is/are: skipped
    ("The dog barks at her <eos>", 2, "barks", "barked"),  # "barks" is several word pieces here: skipped
    ("The dog went to the park <eos>", 2, "went", "wenty"),  # the wrong form is not one token: skipped
]


def test_agreement_skip_rules_on_hand_made_pairs(tmp_path, tiny):
    _, tokenizer, _, _ = tiny
    pairs = agreement.read_pairs(write_pairs(tmp_path, HAND_MADE))
    assert [agreement.skip_reason(p, tokenizer) for p in pairs] == [
        None, "is/are", "a form is not one vocabulary token", "a form is not one vocabulary token"]
    assert pairs[0].words == ("the", "dog", "[MASK]", "at", "the", "mail", "man", ".")  # <eos> dropped, verb masked


def test_agreement_rejects_rows_that_are_not_pairs(tmp_path):
    write_pairs(tmp_path, HAND_MADE[:1])
    lines = (tmp_path / agreement.STIMULI).read_text().splitlines()
    (tmp_path / agreement.STIMULI).write_text("\n".join([lines[0], lines[2], lines[1]]) + "\n")  # wrong row first
    with pytest.raises(ValueError, match="correct, then wrong"):
        agreement.read_pairs(tmp_path)


def test_agreement_logits_match_transformers_on_a_tiny_model(tmp_path, tiny):
    """Our masked-verb logits against transformers' BertForMaskedLM and BertTokenizer on the same random weights."""
    ours, tokenizer, reference, hf_tokenizer = tiny
    pairs = agreement.read_pairs(write_pairs(tmp_path, [HAND_MADE[0], ("her cat went to the dog park <eos>", 1, "dog", "the")]))
    rows = agreement.score_pairs(ours, tokenizer, pairs)
    for pair, row in zip(pairs, rows):
        tokens = (["[CLS]"] + hf_tokenizer.tokenize(" ".join(pair.words[:pair.mask_index])) + ["[MASK]"]
                  + hf_tokenizer.tokenize(" ".join(pair.words[pair.mask_index + 1:])) + ["[SEP]"])
        ids = torch.tensor([hf_tokenizer.convert_tokens_to_ids(tokens)])
        assert agreement.input_ids(pair, tokenizer) == ids[0].tolist()
        with torch.no_grad():
            logits = reference(input_ids=ids).logits[0, tokens.index("[MASK]")]
        expected = [float(logits[hf_tokenizer.convert_tokens_to_ids(w)]) for w in (pair.correct, pair.wrong)]
        assert [row["correct_logit"], row["wrong_logit"]] == pytest.approx(expected, abs=1e-4)
        assert row["agrees"] == (expected[0] > expected[1])


@needs_external
def test_goldberg_pairs_scored_with_the_bert_base_vocabulary(minilm_tokenizer):
    """410 pairs; minilm's vocabulary (bert-base-uncased's) scores 383, and skips exactly the pairs Goldberg skipped."""
    # bert-base-uncased's vocabulary: 30,522 pieces, [CLS] [SEP] [MASK] at 101-103, "the" at 1996
    assert minilm_tokenizer.vocab_size == 30522
    assert [minilm_tokenizer.token_to_id(t) for t in ("[CLS]", "[SEP]", "[MASK]", "the")] == [101, 102, 103, 1996]
    pairs = agreement.read_pairs(GOLDBERG)
    published = agreement.read_published(GOLDBERG, BERT_BASE)
    reasons = [agreement.skip_reason(p, minilm_tokenizer) for p in pairs]
    assert len(pairs) == len(published) == 410
    assert sum(r is None for r in reasons) == 383
    assert reasons.count("is/are") == 14
    assert [r is None for r in reasons] == [row["skipped"] is None for row in published]
    assert [(p.correct, p.wrong) for p, row in zip(pairs, published) if row["skipped"] is None] == [
        (row["correct"], row["wrong"]) for row in published if row["skipped"] is None]
    assert agreement.accuracy(published) == (319, 383)  # SOURCE.md: 0.8329 (319)


# --- Ettinger 2020 ---

@needs_external
def test_ettinger_loaders_read_the_papers_item_counts():
    counts = {test.name: len(ettinger.read_test(ETTINGER, test)) for test in ettinger.TESTS}
    assert counts == {"CPRAG-34": 34, "ROLE-88": 88, "NEG-136-SIMP": 18}
    role = ettinger.read_test(ETTINGER, ettinger.TESTS[1])
    assert all(p.context.endswith("[MASK]") for p in role)
    assert any(len(p.expected) > 1 for p in role)  # "avoided|hated|read|met": any of them counts


@needs_external
@pytest.mark.parametrize("model", ["bert-base-uncased", "bert-large-uncased", "distilbert-base-uncased"])
@pytest.mark.parametrize("test", ettinger.TESTS, ids=[t.name for t in ettinger.TESTS])
def test_our_top5_scoring_of_the_published_lists_gives_the_published_accuracy(test, model):
    probes = ettinger.read_test(ETTINGER, test)
    top = published_top(test, model)
    assert (ettinger.hits(probes, top), len(probes)) == ettinger.read_published_accuracy(ETTINGER, test, model)


def test_top5_matches_transformers_on_a_tiny_model(tiny):
    ours, tokenizer, reference, hf_tokenizer = tiny
    for context in ["the dog barked at the [MASK]", "Her cat went to the dog [MASK]"]:
        encoded = hf_tokenizer(context + ".", return_tensors="pt")
        with torch.no_grad():
            logits = reference(**encoded).logits[0, encoded["input_ids"][0].tolist().index(hf_tokenizer.mask_token_id)]
        assert ettinger.top_k_tokens(ours, tokenizer, context) == hf_tokenizer.convert_ids_to_tokens(logits.topk(5).indices)


def test_a_model_without_a_masked_lm_head_is_refused(tiny_mlm_folder):
    import bert
    from bert.errors import InvalidInputError

    encoder, tokenizer = bert.load_pretrained(str(tiny_mlm_folder))
    encoder = bert.Bert(encoder.config, mlm_head=False)
    with pytest.raises(InvalidInputError, match="no masked-LM head"):
        ettinger.top_k_tokens(encoder, tokenizer, "the dog [MASK]")


@needs_external
def test_every_benchmark_input_is_tokenized_as_transformers_does_with_the_bert_base_vocabulary(minilm_path, minilm_tokenizer):
    """The published runs tokenized with bert-base-uncased's tokenizer (Goldberg word by word around the [MASK],
    Ettinger the whole string): our token ids for all 410 pairs and every context line must be the same as
    transformers' BertTokenizer on the same vocabulary (minilm's, which is bert-base-uncased's)."""
    from transformers import BertTokenizer as HFTokenizer

    reference = HFTokenizer(str(minilm_path / "vocab.txt"), do_lower_case=True)
    for pair in agreement.read_pairs(GOLDBERG):
        tokens = (["[CLS]"] + reference.tokenize(" ".join(pair.words[:pair.mask_index])) + ["[MASK]"]
                  + reference.tokenize(" ".join(pair.words[pair.mask_index + 1:])) + ["[SEP]"])
        assert agreement.input_ids(pair, minilm_tokenizer) == reference.convert_tokens_to_ids(tokens), pair.sentence
    for test in ettinger.TESTS:
        for context in (ETTINGER / "inputs" / f"{test.key}-contextlist").read_text(encoding="utf-8").splitlines():
            ours = minilm_tokenizer.encode(context + ".").input_ids
            assert ours == reference(context + ".")["input_ids"], context


# --- every benchmark sentence, for keeping them out of training text ---

@needs_external
def test_benchmark_sentences_hold_every_scored_sentence_once():
    sentences = benchmark_sentences(EXTERNAL)
    assert len(sentences) == len(set(sentences))
    assert all(s.count("[MASK]") == 1 for s in sentences)
    assert {item.sentence for item in read_cloze()} <= set(sentences)
    assert {p.sentence for p in agreement.read_pairs(GOLDBERG)} <= set(sentences)
    negated = "A trout is not a [MASK]."
    assert negated in sentences and "A trout is a [MASK]." in sentences
    assert "With proper equipment, scuba-diving isn't very [MASK]." in sentences  # NEG-136-NAT, not scored
    assert len(benchmark_sentences(EXTERNAL / "absent")) == len(read_cloze())  # only the everyday set


# --- the bench script, end to end on a tiny model ---

@pytest.mark.slow
@needs_external
def test_bench_script_prints_ours_beside_the_published_figures(save_hf_model):
    """A tiny random model with 512 positions (its vocabulary spells words letter by letter, so it has no verb
    forms: every agreement pair is skipped)."""
    from transformers import BertForMaskedLM

    from bert_test_support import hf_config

    config = hf_config(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                       max_position_embeddings=512)
    folder = save_hf_model(BertForMaskedLM(config))
    result = run_bench("cloze_benchmarks", "--model", str(folder), "--external", str(EXTERNAL))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "| Goldberg 2019 subject-verb agreement | correct verb form's logit higher | 0.0% (0/0) | 83.3% (319/383) |" in out
    assert "52.9% (18/34)" in out and "27.3% (24/88)" in out and "100.0% (18/18)" in out


@pytest.mark.slow
def test_bench_script_says_when_the_data_is_missing(tmp_path):
    result = run_bench("cloze_benchmarks", "--external", str(tmp_path / "nowhere"))
    assert result.returncode == 2
    assert "is not a folder" in result.stderr


# --- bert-base-uncased itself, when it is in the local Hugging Face cache ---

@pytest.fixture(scope="module")
def bert_base():
    import bert
    from bert.errors import ModelNotFoundError

    try:
        return bert.load_pretrained(BERT_BASE)
    except ModelNotFoundError as error:
        pytest.skip(f"bert-base-uncased is not in the local Hugging Face cache ({error}); "
                    f"run `python -m bert download bert-base-uncased` once online")


@needs_external
def test_bert_base_reproduces_goldbergs_per_pair_logits(bert_base):
    model, tokenizer = bert_base
    rows = agreement.score_pairs(model, tokenizer, agreement.read_pairs(GOLDBERG))
    published = agreement.read_published(GOLDBERG, BERT_BASE)
    assert [r["skipped"] is None for r in rows] == [p["skipped"] is None for p in published]
    ours = [(r["correct_logit"], r["wrong_logit"]) for r in rows if r["skipped"] is None]
    theirs = [(p["correct_logit"], p["wrong_logit"]) for p in published if p["skipped"] is None]
    assert torch.tensor(ours) == pytest.approx(torch.tensor(theirs), abs=1e-3)
    assert agreement.accuracy(rows) == (319, 383)


@needs_external
@pytest.mark.parametrize("key", ["cprag", "role", "negsimp", "negnat"])
def test_bert_base_reproduces_ettingers_top5_lists(bert_base, key):
    """Every context line of the published inputs (not only the scored ones) gives the published top 5."""
    model, tokenizer = bert_base
    contexts = (ETTINGER / "inputs" / f"{key}-contextlist").read_text(encoding="utf-8").splitlines()
    published = (ETTINGER / "outputs" / BERT_BASE / f"modelpreds-{key}").read_text(encoding="utf-8").splitlines()
    assert [ettinger.top_k_tokens(model, tokenizer, c) for c in contexts] == [line.split() for line in published]
