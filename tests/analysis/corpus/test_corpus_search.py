"""Corpus search: cases known by construction, transformers' hidden states as the reference for the vectors,
save/load and shards round trips, faiss against exact search, stale indexes and bad input refused."""
import copy

import pytest
import torch
import torch.nn.functional as F

from bert.__main__ import main
from bert.analysis.corpus.corpus_search import CorpusIndex, Entries, build_index
from bert.data import LabelledSentence
from bert.errors import CorpusIndexError, InvalidInputError, StaleIndexError
from bert_test_support import SENTENCES, float32_tolerance

pytestmark = pytest.mark.slow  # every test here builds a corpus index with a model: seconds

TINY_SENTENCES = ["the dog barked at the mailman.", "her cat went to the park.", "the cat is a dog of the park!",
                  "kroxldyphivc and the dog.", "at the park, her dog barked at a cat."]


@pytest.fixture(scope="module")
def minilm_index(minilm):
    model, tokenizer = minilm
    return build_index(model, tokenizer, SENTENCES, batch_size=4)


def test_vectors_are_transformers_hidden_states_normalised(minilm, minilm_path, minilm_index):
    from transformers import BertModel

    model, tokenizer = minilm
    reference = BertModel.from_pretrained(minilm_path).eval()
    number = 16  # "In 1969, Neil Armstrong became the first person to walk on the Moon."
    input_ids, token_type_ids = tokenizer.encode(SENTENCES[number]).tensors()
    with torch.no_grad():
        hidden = reference(input_ids=input_ids, token_type_ids=token_type_ids, output_hidden_states=True).hidden_states
    rows = list(minilm_index.entries.rows(number))
    assert len(rows) == input_ids.shape[1] and minilm_index.layers == tuple(range(model.config.num_layers + 1))
    for layer in minilm_index.layers:
        expected = F.normalize(hidden[layer][0], dim=-1)
        torch.testing.assert_close(minilm_index.vectors[layer][rows], expected, atol=2e-5, rtol=0)


def test_head_vectors_are_transformers_self_attention_outputs_normalised(minilm, minilm_path):
    """Head h of layer n (both from 0): columns h*64 .. (h+1)*64 of encoder.layer[n]'s BertSelfAttention output (before
    the output projection)."""
    from transformers import BertModel

    model, tokenizer = minilm
    heads = [(0, 0), (3, 7), (5, 11)]
    index = build_index(model, tokenizer, SENTENCES[:6], layers=[], heads=heads, batch_size=4)
    assert index.layers == () and index.heads == tuple(heads) and index.keys == tuple(heads)
    reference = BertModel.from_pretrained(minilm_path).eval()
    size = model.config.hidden_size // model.config.num_heads
    for number in (0, 5):
        outputs = {}
        hooks = [reference.encoder.layer[layer].attention.self.register_forward_hook(
                 lambda module, args, output, layer=layer: outputs.__setitem__(layer, output[0][0])) for layer, _ in heads]
        input_ids, token_type_ids = tokenizer.encode(SENTENCES[number]).tensors()
        with torch.no_grad():
            reference(input_ids=input_ids, token_type_ids=token_type_ids)
        for hook in hooks:
            hook.remove()
        rows = list(index.entries.rows(number))
        for layer, head in heads:
            expected = F.normalize(outputs[layer][:, head * size : (head + 1) * size], dim=-1)
            torch.testing.assert_close(index.vectors[(layer, head)][rows], expected, atol=2e-5, rtol=0)


def test_a_heads_exact_copy_comes_first_and_survives_save_and_load(tiny_model, tokenizer, tmp_path):
    index = build_index(tiny_model, tokenizer, TINY_SENTENCES, layers=[2], heads=[(0, 3), (2, 0)])
    loaded = CorpusIndex.load(index.save(tmp_path / "index"), model=tiny_model)
    assert loaded.heads == ((0, 3), (2, 0)) and loaded.layers == (2,)
    for layer, head in loaded.heads:
        hits = loaded.search_token(tiny_model, tokenizer, TINY_SENTENCES[2], 4, layer, k=3, head=head)
        assert (hits[0].sentence_index, hits[0].position) == (2, 4) and abs(hits[0].cosine - 1) < 1e-5
        before = index.search_token(tiny_model, tokenizer, TINY_SENTENCES[2], 4, layer, k=3, head=head)
        assert [(h.sentence_index, h.position) for h in hits] == [(h.sentence_index, h.position) for h in before]
        assert [h.cosine for h in hits] == pytest.approx([h.cosine for h in before], abs=1e-6)
        torch.testing.assert_close(loaded.vectors[(layer, head)], index.vectors[(layer, head)], atol=0, rtol=0)
    every = loaded.token_vectors(tiny_model, tokenizer, TINY_SENTENCES[2], 4)  # one pass, every matrix
    assert list(every) == [2, (0, 3), (2, 0)]
    encoded = tokenizer.encode(TINY_SENTENCES[2], "a second sentence").first_sentence()
    for key, vector in loaded.encoding_vectors(tiny_model, tokenizer, encoded, 4).items():
        torch.testing.assert_close(vector, every[key], atol=0, rtol=0)
    # the index ran the sentence in a batch of another shape: unit vectors, each layer's sums added in other orders
    atol = float32_tolerance(1.0, tiny_model.config.hidden_size, sums=tiny_model.config.num_layers)
    for key, vector in every.items():
        torch.testing.assert_close(F.normalize(vector, dim=0), index.vectors[key][index.entries.rows(2)[4]], atol=atol, rtol=0)
    with pytest.raises(InvalidInputError, match="layer 1, head 1 is not in this index"):
        loaded.search(1, torch.ones(8), 3, head=1)


def test_an_exact_copy_of_the_query_comes_first_with_cosine_one_at_every_layer(minilm, minilm_index):
    model, tokenizer = minilm
    number, position = 11, 9  # "##x" of "kroxldyphivc": no other token is "##x" at position 9
    entries = minilm_index.entries
    row = entries.rows(number)[position]
    pairs = list(zip(entries.token, entries.position))
    assert pairs.count(pairs[row]) == 1, "at the embedding layer only (token, position) tells vectors apart"
    for layer in minilm_index.layers:
        hits = minilm_index.search_token(model, tokenizer, SENTENCES[number], position, layer, k=3)
        assert (hits[0].sentence_index, hits[0].position, hits[0].token) == (number, position, entries.token[row])
        assert abs(hits[0].cosine - 1) < 1e-5 and hits[1].cosine < hits[0].cosine
        assert hits[0].word == entries.word[row]


def test_entries_keep_whole_words_and_the_headwords_part_of_speech(tiny_model, tokenizer):
    text = "kroxldyphivc and the dog barked."
    sentences = [LabelledSentence(text, "bark", "v", text.index("barked"), text.index("barked") + 6), "the cat."]
    index = build_index(tiny_model, tokenizer, sentences, layers=[0, 3], parts_of_speech=[None, [(4, 7, "noun")]])
    first = [(index.entries.token[r], index.entries.word[r], index.entries.part_of_speech[r]) for r in index.entries.rows(0)]
    assert first[0] == ("[CLS]", "", None) and first[-1] == ("[SEP]", "", None)
    assert [w for t, w, _ in first if t.startswith("##") or t == "k"][0] == "kroxldyphivc"
    assert {w for _, w, p in first if p == "verb"} == {"barked"}
    second = [(index.entries.word[r], index.entries.part_of_speech[r]) for r in index.entries.rows(1)]
    assert second == [("", None), ("the", None), ("cat", "noun"), (".", None), ("", None)]
    assert index.layers == (0, 3) and len(index) == len(first) + 5 and index.sentences[1] == "the cat."


def test_save_and_load_give_identical_results(tiny_model, tokenizer, tmp_path):
    index = build_index(tiny_model, tokenizer, TINY_SENTENCES, batch_size=2)
    loaded = CorpusIndex.load(index.save(tmp_path / "index"), model=tiny_model)
    assert loaded.sentences == index.sentences and loaded.entries == index.entries and loaded.layers == index.layers
    for layer in index.layers:
        assert torch.equal(loaded.vectors[layer], index.vectors[layer])
        query = index.vectors[layer][7] + 0.1
        assert loaded.search(layer, query, 5) == index.search(layer, query, 5)


def test_float16_index_is_half_the_size_and_finds_the_same_neighbours(tiny_model, tokenizer):
    full = build_index(tiny_model, tokenizer, TINY_SENTENCES)
    half = build_index(tiny_model, tokenizer, TINY_SENTENCES, dtype=torch.float16)
    assert half.vectors[3].dtype == torch.float16 and half.vectors[3].nbytes * 2 == full.vectors[3].nbytes
    query = full.vectors[3][4]
    assert [h.cosine for h in half.search(3, query, 4)] == pytest.approx([h.cosine for h in full.search(3, query, 4)], abs=2e-3)


def test_approximate_top_10_agrees_with_exact_search_above_95_percent_recall():
    """Clustered unit vectors (like a corpus: many tokens of few kinds); queries are fresh points near them."""
    generator = torch.Generator().manual_seed(0)
    centres = torch.randn(300, 64, generator=generator)
    points = F.normalize(centres[torch.randint(0, 300, (30_000,), generator=generator)] + 1.2 * torch.randn(30_000, 64, generator=generator), dim=1)
    rows = len(points)
    entries = Entries([0] * rows, list(range(rows)), ["t"] * rows, ["w"] * rows, [None] * rows)
    index = CorpusIndex(["s"], (0,), entries, {0: points}, fingerprint="synthetic")
    queries = centres[torch.randint(0, 300, (200,), generator=generator)] + 1.2 * torch.randn(200, 64, generator=generator)
    found = 0
    for query in queries:
        exact = {h.position for h in index.search(0, query, 10, method="exact")}
        found += len(exact & {h.position for h in index.search(0, query, 10, method="approximate")})
    assert found / (10 * len(queries)) >= 0.95  # 99.75% when written


def test_an_index_of_another_model_is_refused(tiny_model, tokenizer, tmp_path):
    folder = build_index(tiny_model, tokenizer, TINY_SENTENCES[:2]).save(tmp_path / "index")
    other = copy.deepcopy(tiny_model)
    with torch.no_grad():
        other.transformer[1].residual.mlp2.bias[0] += 1e-3
    CorpusIndex.load(folder, model=tiny_model)  # the same model: fine
    with pytest.raises(StaleIndexError, match="another model"):
        CorpusIndex.load(folder, model=other)
    with pytest.raises(StaleIndexError):
        CorpusIndex.load(folder).search_token(other, tokenizer, "the dog.", 1, 0, 3)


def test_shards_of_a_torchrun_job_load_as_the_unsharded_index(tiny_mlm_folder, tmp_path, monkeypatch):
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(TINY_SENTENCES * 2) + "\n\n")
    arguments = ["index", "--model", str(tiny_mlm_folder), "--sentences", str(corpus), "--batch-size", "3", "--heads", "1.1"]
    assert main(arguments + ["--out", str(tmp_path / "whole")]) == 0
    for rank in range(3):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "3")
        assert main(arguments + ["--out", str(tmp_path / "sharded")]) == 0
    whole = CorpusIndex.load(tmp_path / "whole")
    shards = sorted((tmp_path / "sharded").iterdir())
    for joined in (CorpusIndex.load(tmp_path / "sharded"), CorpusIndex.load_shards(reversed(shards))):
        assert [s.shard for s in map(CorpusIndex.load, shards)] == [(0, 3), (1, 3), (2, 3)]
        assert joined.sentences == whole.sentences == TINY_SENTENCES * 2 and joined.entries == whole.entries
        assert joined.heads == whole.heads == ((1, 1),)
        for key in whole.keys:  # unit vectors of sentences batched otherwise, through the tiny model's 2 layers of 64
            atol = float32_tolerance(1.0, 64, sums=2)
            torch.testing.assert_close(joined.vectors[key], whole.vectors[key], atol=atol, rtol=0)
    with pytest.raises(CorpusIndexError, match="ranks"):
        CorpusIndex.load_shards(shards[:2])


def test_bad_input_gives_typed_errors(tiny_model, tokenizer, tmp_path):
    index = build_index(tiny_model, tokenizer, TINY_SENTENCES[:2], layers=[0, 2])
    cases = [
        lambda: build_index(tiny_model, tokenizer, []),
        lambda: build_index(tiny_model, tokenizer, ["the dog.", "  "]),
        lambda: build_index(tiny_model, tokenizer, "the dog."),
        lambda: build_index(tiny_model, tokenizer, ["the dog."], layers=[4]),
        lambda: build_index(tiny_model, tokenizer, ["the dog " * 40]),  # 82 tokens, 64 positions
        lambda: index.search(1, torch.ones(32), 3),  # layer 1 was not indexed
        lambda: index.search(0, torch.ones(31), 3),
        lambda: index.search(0, torch.ones(32), 0),
        lambda: index.search(0, torch.ones(32), 3, method="fast"),
        lambda: index.search_token(tiny_model, tokenizer, "the dog.", 5, 0, 3),  # [CLS] the dog . [SEP]: 0 .. 4
        lambda: index.search_token(tiny_model, tokenizer, "the dog.", -1, 0, 3),
        lambda: build_index(tiny_model, tokenizer, ["the dog."], layers=[]),  # nothing to index
        lambda: build_index(tiny_model, tokenizer, ["the dog."], heads=[(3, 1)]),  # 3 layers: 0 .. 2
        lambda: build_index(tiny_model, tokenizer, ["the dog."], heads=[(1, 4)]),  # 4 heads: 0 .. 3
        lambda: build_index(tiny_model, tokenizer, ["the dog."], heads=[(1, 2), (1, 2)]),
        lambda: build_index(tiny_model, tokenizer, ["the dog."], heads="1.2"),
        lambda: index.search(2, torch.ones(32), 3, head=0),  # no head was indexed
    ]
    for case in cases:
        with pytest.raises(InvalidInputError):
            case()
    with pytest.raises(CorpusIndexError):
        CorpusIndex.load(tmp_path)
    (tmp_path / "index.json").write_text("{}")
    with pytest.raises(CorpusIndexError, match="lacks"):
        CorpusIndex.load(tmp_path)


def test_progress_reports_every_sentence(tiny_model, tokenizer):
    calls = []
    build_index(tiny_model, tokenizer, TINY_SENTENCES, batch_size=2, progress=lambda done, total: calls.append((done, total)))
    assert calls == [(2, 5), (4, 5), (5, 5)]


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_indexing_on_the_gpu_matches_the_cpu(tiny_model, tokenizer):
    on_gpu = build_index(copy.deepcopy(tiny_model).cuda(), tokenizer, TINY_SENTENCES)
    on_cpu = build_index(tiny_model, tokenizer, TINY_SENTENCES)
    for layer in on_cpu.layers:
        torch.testing.assert_close(on_gpu.vectors[layer], on_cpu.vectors[layer], atol=1e-5, rtol=0)


def test_the_file_format_module_does_not_import_the_search_module():
    """corpus_index_files sits below corpus_search: no import circle between the two."""
    import subprocess
    import sys

    code = "import sys, bert.analysis.corpus.corpus_index_files; print('bert.analysis.corpus.corpus_search' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"
