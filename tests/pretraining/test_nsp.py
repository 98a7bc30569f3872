"""Next-sentence pairs (Devlin et al. 2019): B is the true next segment half of the time, a segment of another document
otherwise; a collated pair reads [CLS] A [SEP] -> segment 0, B [SEP] -> segment 1."""
from __future__ import annotations

import random

import pytest

from bert.pretraining.data import DataConfig, batches
from bert.pretraining.nsp import IN_ORDER, IS_NEXT, IS_RANDOM, SWAPPED, make_pairs

from .helpers import write_corpus


def numbered_documents(num_documents: int, segments: int) -> list[list[list[int]]]:
    """Segment s of document d is the token ids [d, s], so a pair says where its halves came from."""
    return [[[d, s] for s in range(segments)] for d in range(num_documents)]


def test_pairs_are_half_next_half_random():
    pairs = make_pairs(numbered_documents(200, 21), random.Random(0))
    assert len(pairs) == 200 * 20  # every adjacent (A, B) of every document
    share_next = sum(p.label == IS_NEXT for p in pairs) / len(pairs)
    assert abs(share_next - 0.5) < 0.03  # 4000 fair coin flips: sd 0.008


def test_is_next_is_adjacent_and_is_random_comes_from_another_document():
    for pair in make_pairs(numbered_documents(30, 10), random.Random(1)):
        (doc_a, seg_a), (doc_b, seg_b) = pair.first, pair.second
        if pair.label == IS_NEXT:
            assert (doc_b, seg_b) == (doc_a, seg_a + 1)
        else:
            assert pair.label == IS_RANDOM and doc_b != doc_a


def test_random_segments_can_come_from_every_other_document():
    rng = random.Random(2)
    sources = {0: set(), 2: set()}
    for _ in range(200):
        for pair in make_pairs(numbered_documents(3, 3), rng):
            if pair.label == IS_RANDOM and pair.first[0] in sources:
                sources[pair.first[0]].add(pair.second[0])
    assert sources == {0: {1, 2}, 2: {0, 1}}  # the first and the last document are reachable too


def test_one_document_is_an_error():
    with pytest.raises(ValueError, match="two documents"):
        make_pairs(numbered_documents(1, 5), random.Random(0))


# --- the same, through the data pipeline: text file -> collated batches -------------------------------------

ANIMALS = ["cat", "dog", "horse", "cow", "sheep", "goat", "pig", "duck", "mouse", "bird", "fish", "bear"]
NUMBERS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]


def test_collated_pairs_have_the_right_segments_and_labels(tmp_path, tokenizer):
    # Document "cat" is the lines "cat one", "cat two", ...: every word is one token, so a row tells its story.
    documents = [[f"{animal} {number}" for number in NUMBERS] for animal in ANIMALS]
    corpus = write_corpus(tmp_path / "docs.txt", documents)
    animal_of = {tokenizer.token_to_id(a): a for a in ANIMALS}
    number_of = {tokenizer.token_to_id(n): i for i, n in enumerate(NUMBERS)}
    labels = []
    for epoch in range(20):
        for batch in batches(corpus, tokenizer, DataConfig(batch_size=8, next_sentence=True), seed=0, epoch=epoch):
            assert batch.nsp_labels is not None
            for ids, types, mask, label in zip(batch.input_ids.tolist(), batch.token_type_ids.tolist(), batch.attention_mask.tolist(), batch.nsp_labels.tolist()):
                real = sum(mask)
                cls, a_animal, a_number, sep1, b_animal, b_number, sep2 = ids[:real]
                assert (cls, sep1, sep2) == (tokenizer.cls_id, tokenizer.sep_id, tokenizer.sep_id)
                assert types[:real] == [0, 0, 0, 0, 1, 1, 1]  # [CLS] A [SEP] -> 0; B [SEP] -> 1
                assert all(t == 0 for t in types[real:]) and all(i == tokenizer.pad_id for i in ids[real:])
                same_document = animal_of[a_animal] == animal_of[b_animal]
                if label == IS_NEXT:
                    assert same_document and number_of[b_number] == number_of[a_number] + 1
                else:
                    assert label == IS_RANDOM and not same_document
                labels.append(label)
    assert len(labels) == 20 * len(ANIMALS) * (len(NUMBERS) - 1)
    assert abs(labels.count(IS_NEXT) / len(labels) - 0.5) < 0.05  # 2160 pairs: sd 0.011


def test_long_pairs_are_cut_to_max_length_keeping_both_segments(tmp_path, tokenizer):
    long_line = " ".join(["word"] * 100)
    documents = [[long_line, "short one", long_line], [long_line, long_line]]
    corpus = write_corpus(tmp_path / "long.txt", documents)
    config = DataConfig(max_length=32, batch_size=2, next_sentence=True)
    for batch in batches(corpus, tokenizer, config, seed=0, epoch=0):
        assert batch.input_ids.shape[1] <= 32
        for ids, types in zip(batch.input_ids.tolist(), batch.token_type_ids.tolist()):
            seps = [i for i, t in enumerate(ids) if t == tokenizer.sep_id]
            assert len(seps) == 2 and seps[0] > 1 and seps[1] > seps[0] + 1, "a segment was cut away entirely"
            assert types[: seps[0] + 1] == [0] * (seps[0] + 1) and types[seps[0] + 1 : seps[1] + 1] == [1] * (seps[1] - seps[0])


def test_single_sentences_are_segment_zero_without_nsp_labels(tmp_path, tokenizer):
    corpus = write_corpus(tmp_path / "plain.txt", [["the cat sat on the mat", "a dog"]])
    (batch,) = list(batches(corpus, tokenizer, DataConfig(batch_size=4), seed=0, epoch=0))
    assert batch.nsp_labels is None
    assert (batch.token_type_ids == 0).all()
    assert batch.input_ids[:, 0].eq(tokenizer.cls_id).all()
    assert not batch.maskable[:, 0].any()
    assert (batch.maskable.sum(1) == batch.attention_mask.sum(1) - 2).all()  # all but [CLS] and [SEP]


def test_a_chunk_holding_a_single_document_does_not_stop_the_epoch(tmp_path, tokenizer):
    # 3 documents of 3 lines: with 8 lines a chunk, the second chunk holds only the last document.
    documents = [[f"{animal} {number}" for number in NUMBERS[:3]] for animal in ANIMALS[:3]]
    corpus = write_corpus(tmp_path / "docs.txt", documents)
    config = DataConfig(batch_size=2, next_sentence=True, chunk_lines=8)
    rows = sum(len(batch.input_ids) for batch in batches(corpus, tokenizer, config, seed=0, epoch=0))
    assert rows == 4  # the pairs of the first two documents; the lone one has nothing to draw random B from


# --- sentence-order prediction (ALBERT, Lan et al. 2020): the same two sentences, in order or swapped ----------------


def test_order_pairs_are_half_in_order_half_swapped():
    pairs = make_pairs(numbered_documents(200, 21), random.Random(0), task="sop")
    assert len(pairs) == 200 * 20
    share_in_order = sum(p.label == IN_ORDER for p in pairs) / len(pairs)
    assert abs(share_in_order - 0.5) < 0.03  # 4000 fair coin flips: sd 0.008


def test_swapped_pairs_are_the_same_two_sentences_in_reverse_order():
    for pair in make_pairs(numbered_documents(30, 10), random.Random(1), task="sop"):
        (doc_a, seg_a), (doc_b, seg_b) = pair.first, pair.second
        assert doc_a == doc_b  # never another document: topic cannot give the answer away
        if pair.label == IN_ORDER:
            assert seg_b == seg_a + 1
        else:
            assert pair.label == SWAPPED and seg_a == seg_b + 1


def test_order_pairs_are_seeded_and_need_only_one_document():
    documents = numbered_documents(1, 40)
    assert make_pairs(documents, random.Random(7), task="sop") == make_pairs(documents, random.Random(7), task="sop")
    assert make_pairs(documents, random.Random(7), task="sop") != make_pairs(documents, random.Random(8), task="sop")


def test_unknown_pair_task_is_an_error():
    with pytest.raises(ValueError, match="task must be one of"):
        make_pairs(numbered_documents(2, 2), random.Random(0), task="xyz")


def test_collated_order_pairs_swap_the_segments(tmp_path, tokenizer):
    documents = [[f"{animal} {number}" for number in NUMBERS] for animal in ANIMALS[:4]]
    corpus = write_corpus(tmp_path / "docs.txt", documents)
    number_of = {tokenizer.token_to_id(n): i for i, n in enumerate(NUMBERS)}
    labels = []
    for epoch in range(10):
        for batch in batches(corpus, tokenizer, DataConfig(batch_size=8, sentence_order=True), seed=0, epoch=epoch):
            for ids, types, label in zip(batch.input_ids.tolist(), batch.token_type_ids.tolist(), batch.nsp_labels.tolist()):
                _, a_animal, a_number, _, b_animal, b_number, _ = ids[:7]
                assert a_animal == b_animal and types[:7] == [0, 0, 0, 0, 1, 1, 1]
                step = number_of[b_number] - number_of[a_number]
                assert step == (1 if label == IN_ORDER else -1)
                labels.append(label)
    assert len(labels) == 10 * 4 * (len(NUMBERS) - 1)
    assert abs(labels.count(SWAPPED) / len(labels) - 0.5) < 0.08  # 360 pairs: sd 0.026


def test_next_sentence_and_sentence_order_together_are_refused():
    with pytest.raises(ValueError, match="not both"):
        DataConfig(next_sentence=True, sentence_order=True)
