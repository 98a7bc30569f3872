"""`python -m bert download` for the BERT families, against the tests' local stand-in of the hub
(tests/hub_server.py): a RoBERTa-shaped, an ELECTRA-shaped and a ModernBERT-shaped repository, tiny, built here with transformers' own
classes, as the hub's roberta-base and google/electra-small-discriminator hold them (weights in several formats, the
tokenizer as tokenizer.json and as the older vocabulary files). The download fetches what the family's tokenizer
needs and nothing else, the tokenizer read from the cache equals transformers' tokenizer of the same files, and the
app's model picker lists the downloads."""
from __future__ import annotations

import json

import pytest

import bert
from bert import hub, load_tokenizer
from hub_server import HubServer, repo_from_folder
from tokenizer_support import INPUTS, build_tokenizer

pytest.importorskip("huggingface_hub", reason="downloads need huggingface_hub")
transformers = pytest.importorskip("transformers")

TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37)
# repository id -> (family, the files its download must hold)
REPOS = {
    "FacebookAI/roberta-tiny": ("roberta", ["config.json", "merges.txt", "model.safetensors", "tokenizer.json",
                                            "tokenizer_config.json", "vocab.json"]),
    "google/electra-tiny-discriminator": ("electra", ["config.json", "model.safetensors", "tokenizer.json",
                                                      "tokenizer_config.json", "vocab.txt"]),
    "answerdotai/ModernBERT-tiny": ("modernbert", ["config.json", "model.safetensors", "tokenizer.json",
                                                   "tokenizer_config.json"]),
    # its SentencePiece model (sentencepiece.bpe.model) is not fetched: tokenizer.json holds the same
    "FacebookAI/xlm-roberta-tiny": ("xlm-roberta", ["config.json", "model.safetensors", "tokenizer.json",
                                                    "tokenizer_config.json"]),
    "facebook/esm2-tiny": ("esm", ["config.json", "model.safetensors", "tokenizer_config.json", "vocab.txt"]),
}
SLOW_TOKENIZERS = ("esm",)  # transformers has ESM's in Python only: ids, no offsets or word ids


def _tiny_folder(family: str, folder):
    reference = build_tokenizer(family, folder)
    if family == "roberta":
        config = transformers.RobertaConfig(vocab_size=len(reference), max_position_embeddings=514, type_vocab_size=1,
                                            pad_token_id=reference.pad_token_id, **TINY)
        model = transformers.RobertaForMaskedLM(config)
    elif family == "modernbert":
        config = transformers.ModernBertConfig(vocab_size=len(reference), max_position_embeddings=8192, local_attention=8,
                                               pad_token_id=reference.pad_token_id, cls_token_id=reference.cls_token_id,
                                               sep_token_id=reference.sep_token_id, **TINY)
        model = transformers.ModernBertForMaskedLM(config)
    elif family == "xlm-roberta":
        config = transformers.XLMRobertaConfig(vocab_size=len(reference), max_position_embeddings=514, type_vocab_size=1,
                                               pad_token_id=reference.pad_token_id, **TINY)
        model = transformers.XLMRobertaForMaskedLM(config)
    elif family == "esm":
        config = transformers.EsmConfig(vocab_size=len(reference), max_position_embeddings=1026, position_embedding_type="rotary",
                                        token_dropout=True, pad_token_id=reference.pad_token_id,
                                        mask_token_id=reference.mask_token_id, **TINY)
        model = transformers.EsmForMaskedLM(config)
    else:
        config = transformers.ElectraConfig(vocab_size=len(reference), embedding_size=16, max_position_embeddings=512,
                                            pad_token_id=reference.pad_token_id, **TINY)
        model = transformers.ElectraForPreTraining(config)
        vocab = sorted(reference.get_vocab().items(), key=lambda item: item[1])
        (folder / "vocab.txt").write_text("".join(token + "\n" for token, _ in vocab), encoding="utf-8")
    model.save_pretrained(folder)
    return reference


@pytest.fixture(scope="module")
def family_repos(tmp_path_factory):
    repos, references = {}, {}
    for repo_id, (family, _) in REPOS.items():
        folder = tmp_path_factory.mktemp(family)
        references[repo_id] = _tiny_folder(family, folder)
        # the hub's copies in other formats must not be fetched
        repos[repo_id] = repo_from_folder(folder) | {"pytorch_model.bin": b"not needed", "tf_model.h5": b"not needed",
                                                     "README.md": b"a model card", "sentencepiece.bpe.model": b"not needed"}
    return repos, references


@pytest.fixture
def family_hub(family_repos, tmp_path, monkeypatch):
    with HubServer(family_repos[0]) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        yield server


@pytest.mark.parametrize("repo_id", REPOS)
def test_download_fetches_what_the_familys_tokenizer_needs(family_hub, family_repos, repo_id, tmp_path):
    family, expected_files = REPOS[repo_id]
    folder = hub.download(repo_id)
    assert folder.is_relative_to(tmp_path / "hub-cache")
    assert sorted(p.name for p in folder.iterdir()) == expected_files
    assert not any(name in request for request in family_hub.requests
                   for name in ("pytorch_model.bin", "tf_model.h5", "README", "sentencepiece.bpe.model"))
    assert json.loads((folder / "config.json").read_text())["model_type"] == family

    ours, reference = load_tokenizer(folder), transformers.AutoTokenizer.from_pretrained(folder)
    for text, pair in INPUTS:
        if family in SLOW_TOKENIZERS:
            assert ours.encode(text, pair).input_ids == reference(text, pair)["input_ids"], (text, pair)
            continue
        expected = reference(text, pair, return_offsets_mapping=True)
        encoding = ours.encode(text, pair)
        assert encoding.input_ids == expected["input_ids"] and encoding.word_ids == expected.word_ids()
        assert encoding.offsets == [tuple(o) for o in expected["offset_mapping"]]
    # RoBERTa, XLM-RoBERTa: 514 positions, numbered from the padding index + 1; ModernBERT: 8,192; ESM-2: 1,026 less 2
    assert ours.model_max_length == {"modernbert": 8192, "esm": 1024}.get(family, 512)
    assert ours.mask_token == {"electra": "[MASK]", "modernbert": "[MASK]"}.get(family, "<mask>")
    model, _ = bert.load_pretrained(str(folder))  # the weights load too
    assert model.config.family == family
    assert (hub.cached_folder(repo_id), hub.download(repo_id)) == (folder, folder)  # cached now: not fetched again


def test_the_app_lists_the_downloaded_families(family_hub):
    from viz_app.app.models import cached_bert_models

    for repo_id in REPOS:
        hub.download(repo_id)
    assert sorted(choice.source for choice in cached_bert_models()) == sorted(REPOS)


def test_other_model_types_are_refused_with_the_families_named(family_repos, tmp_path, monkeypatch):
    from bert.errors import DownloadError

    gpt = {"config.json": b'{"model_type": "gpt2"}', "model.safetensors": b"weights"}
    with HubServer({"openai/gpt-tiny": gpt}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        with pytest.raises(DownloadError, match="model_type 'gpt2'.*bert, roberta, distilbert, albert, electra") as caught:
            hub.download("openai/gpt-tiny")
    assert caught.value.reason == "not_bert"
