"""DeBERTa-v3's tokenizer read from its SentencePiece unigram model (spm.model, what microsoft/deberta-v3-base ships
instead of tokenizer.json), and that repository's layout downloaded through the tests' local stand-in of the hub
(tests/hub_server.py): config.json, pytorch_model.bin, spm.model and tokenizer_config.json.

The model file is trained here with SentencePiece itself, its control pieces as deberta-v3-base's ([PAD] 0, [CLS] 1,
[SEP] 2, [UNK] 3; [MASK] not among them, so it comes after the last piece). The references: SentencePiece's own
encoder for the ids (what DeBERTa's original tokenizer calls, between special tokens), and transformers' conversion
of the same file to a `tokenizers` pipeline (DebertaV2Converter, what the hub's tokenizer.json files were made with)
for the tokens, offsets, word ids and sentence ids; and transformers 5's DebertaV2Tokenizer, built from spm.model
alone, wherever it normalises text as SentencePiece does."""
from __future__ import annotations

import json
import random
import re
import unicodedata
from types import SimpleNamespace

import pytest
import torch

import bert
from bert import hub, load_tokenizer
from bert.__main__ import main as cli
from bert.errors import CheckpointError
from hub_server import HubServer
from tokenizer_support import CONFIGS, CORPUS, INPUTS

spm = pytest.importorskip("sentencepiece")
transformers = pytest.importorskip("transformers")

REPO = "microsoft/deberta-v3-tiny"  # the local hub's copy of deberta-v3-base's layout
MORE_INPUTS = [("Paris is the [MASK] of France.", None), ("two  spaces   and a typed [mask] here", None),
               ("[MASK] [MASK]", "The [MASK] barked."), ("  Ünïcödé   ＦＵＬＬ width ①  ", "ｶﾀｶﾅ and ﬃ")]
SYLLABLES = "ka to ri mu ne sa lo pe ber ing ed un re tion th st qu éa ü ß ñ 東 京 日 本 при вет мир".split()


def _training_text(seed: int = 0) -> list[str]:
    """The test corpus and made-up words, numbers and punctuation around it: enough text for 400 pieces."""
    rng = random.Random(seed)

    def word() -> str:
        if rng.random() < 0.1:
            return str(rng.randint(0, 9999))
        made_up = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3)))
        return made_up.capitalize() if rng.random() < 0.2 else made_up

    lines = [" ".join(word() for _ in range(rng.randint(3, 12))) + rng.choice(".!?, ") for _ in range(2000)]
    return CORPUS * 5 + lines


def _spm_folder(folder, lowercase: bool = False, user_defined: tuple[str, ...] = ()):
    """spm.model trained by SentencePiece, tokenizer_config.json and config.json, as deberta-v3-base's folder;
    user_defined: pieces SentencePiece keeps whole wherever they stand (deberta-v3-base's file has none)."""
    (folder / "corpus.txt").write_text("\n".join(_training_text()), encoding="utf-8")
    spm.SentencePieceTrainer.train(
        input=str(folder / "corpus.txt"), model_prefix=str(folder / "spm"), vocab_size=400, model_type="unigram",
        character_coverage=1.0, pad_id=0, bos_id=1, eos_id=2, unk_id=3, pad_piece="[PAD]", bos_piece="[CLS]",
        eos_piece="[SEP]", unk_piece="[UNK]", user_defined_symbols=list(user_defined), minloglevel=2)
    for name in ("corpus.txt", "spm.vocab"):
        (folder / name).unlink()
    (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase, "vocab_type": "spm"}))
    (folder / "config.json").write_text(json.dumps(CONFIGS["deberta-v2"]))
    return folder


@pytest.fixture(scope="module")
def spm_folder(tmp_path_factory):
    return _spm_folder(tmp_path_factory.mktemp("deberta-spm"))


def _sentencepiece_ids(processor, text: str, mask_id: int, lowercase: bool = False) -> list[int]:
    """SentencePiece's ids of the text, a typed [MASK] (any case) standing for the mask token between its parts."""
    ids = []
    for index, part in enumerate(re.split(r"\[mask\]", text, flags=re.IGNORECASE)):
        ids += ([mask_id] if index else []) + processor.encode(part.lower() if lowercase else part)
    return ids


def _converted(folder):
    """transformers' conversion of spm.model to a `tokenizers` pipeline, the mask token added after the last piece."""
    from tokenizers import AddedToken
    from transformers.convert_slow_tokenizer import DebertaV2Converter

    processor = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    original = SimpleNamespace(vocab_file=str(folder / "spm.model"), do_lower_case=False, split_by_punct=False,
                               add_prefix_space=True, legacy=True, convert_tokens_to_ids=processor.piece_to_id)
    converted = DebertaV2Converter(original).converted()
    converted.add_special_tokens([AddedToken("[MASK]", special=True, normalized=False)])
    return converted


USER_DEFINED = ("<br>", "@@")
USER_DEFINED_INPUTS = [("kato<br>rimu", None), ("a <br> b", "<br>start"), ("x@@y @@ end<br>", None),
                       ("<br><br>@@<br>", "  <br>  ")]


@pytest.mark.parametrize("variant", ["as trained", "lowercase", "user-defined pieces"])
def test_ids_are_sentencepieces_own(tmp_path, spm_folder, variant):
    folder, lowercase, inputs = spm_folder, variant == "lowercase", INPUTS + MORE_INPUTS
    if lowercase:  # the same model file, do_lower_case true
        folder = tmp_path
        for name in ("spm.model", "config.json"):
            (folder / name).write_bytes((spm_folder / name).read_bytes())
        (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": True}))
    elif variant == "user-defined pieces":
        folder, inputs = _spm_folder(tmp_path, user_defined=USER_DEFINED), inputs + USER_DEFINED_INPUTS
    processor = spm.SentencePieceProcessor(model_file=str(folder / "spm.model"))
    ours = load_tokenizer(folder)
    assert (ours.pad_id, ours.cls_id, ours.sep_id, ours.unk_id) == (0, 1, 2, 3)
    assert ours.mask_id == processor.get_piece_size() == ours.vocab_size - 1  # after the last piece, as the hub's
    assert len(inputs) >= 60
    for text, pair in inputs:
        expected = [1] + _sentencepiece_ids(processor, text, ours.mask_id, lowercase) + [2]
        if pair is not None:
            expected += _sentencepiece_ids(processor, pair, ours.mask_id, lowercase) + [2]
        encoding = ours.encode(text, pair)
        assert encoding.input_ids == expected, (text, pair)
        assert encoding.tokens == [ours.id_to_token(i) for i in expected]


def test_tokens_offsets_and_sentences_are_transformers(spm_folder):
    ours, reference = load_tokenizer(spm_folder), _converted(spm_folder)
    assert ours.pieces.scheme == "sentencepiece" and ours.model_max_length == 512
    for text, pair in INPUTS + MORE_INPUTS:
        # "[mask]" typed in any case is the mask token here (bert/tokenizer.py); transformers knows "[MASK]"
        expected = reference.encode(*(None if t is None else re.sub(r"\[mask\]", "[MASK]", t, flags=re.I) for t in (text, pair)))
        encoding = ours.encode(text, pair)
        assert encoding.input_ids == expected.ids, (text, pair)
        assert encoding.tokens == [reference.id_to_token(i) for i in expected.ids]  # "[UNK]", not the text it stands for
        assert encoding.offsets == [tuple(o) for o in expected.offsets], (text, pair)
        assert encoding.sentences == expected.type_ids and encoding.word_ids == expected.word_ids
        assert encoding.token_type_ids == [0] * len(encoding)  # type_vocab_size 0: DeBERTa-v3 has no token types
    # the special tokens by role, as transformers' DebertaV2Tokenizer numbers them
    theirs = transformers.DebertaV2Tokenizer.from_pretrained(spm_folder)
    assert [ours.cls_id, ours.sep_id, ours.pad_id, ours.unk_id, ours.mask_id] == [
        theirs.cls_token_id, theirs.sep_token_id, theirs.pad_token_id, theirs.unk_token_id, theirs.mask_token_id]


def test_transformers_tokenizer_agrees_where_it_normalises_as_sentencepiece(spm_folder):
    """transformers 5's DebertaV2Tokenizer, built from spm.model alone, leaves out the file's character map (NFKC)
    and a "▁" typed in the text: on every other input it gives our ids, and our offsets where no sentence and no
    stretch after a [MASK] starts with a space (it keeps that space, so its "▁" covers the space, not the letter)."""
    ours, theirs = load_tokenizer(spm_folder), transformers.DebertaV2Tokenizer.from_pretrained(spm_folder)
    plain = [(text, pair) for text, pair in INPUTS + MORE_INPUTS
             if all(t is None or (unicodedata.normalize("NFKC", t) == t and "▁" not in t and "[mask]" not in t) for t in (text, pair))]
    assert len(plain) >= 50
    for text, pair in plain:
        expected = theirs(text, pair, return_offsets_mapping=True)
        encoding = ours.encode(text, pair)
        assert encoding.input_ids == expected["input_ids"], (text, pair)
        if not any(t is not None and re.search(r"(^|\[MASK\])\s", t) for t in (text, pair)):
            assert encoding.offsets == [tuple(o) for o in expected["offset_mapping"]], (text, pair)


def _tiny_repo(folder) -> tuple[dict[str, bytes], torch.nn.Module]:
    """deberta-v3-base's hub layout, tiny: config.json and pytorch_model.bin of a random transformers DeBERTa-v2
    with a masked-LM head, spm.model, tokenizer_config.json, and copies in other formats that must not be fetched.
    The .bin also holds what deberta-v3-base's holds and no transformers class reads (the original training code's
    heads, an unused position table): they are skipped, as transformers skips them."""
    from families.family_support import build_hf

    _spm_folder(folder)
    vocab_size = spm.SentencePieceProcessor(model_file=str(folder / "spm.model")).get_piece_size() + 1  # + [MASK]
    theirs = build_hf("deberta-v2", "DebertaV2ForMaskedLM", vocab_size=vocab_size).eval()
    theirs.config.save_pretrained(folder)
    hidden, vocab = theirs.config.hidden_size, theirs.config.vocab_size
    unread = {"lm_predictions.lm_head.dense.weight": (hidden, hidden), "lm_predictions.lm_head.bias": (vocab,),
              "mask_predictions.dense.weight": (hidden, hidden), "mask_predictions.classifier.weight": (1, hidden),
              "deberta.embeddings.position_embeddings.weight": (512, hidden)}
    torch.save(theirs.state_dict() | {key: torch.randn(shape) for key, shape in unread.items()}, folder / "pytorch_model.bin")
    files = {name: (folder / name).read_bytes() for name in ("config.json", "pytorch_model.bin", "spm.model", "tokenizer_config.json")}
    return files | {"tf_model.h5": b"not needed", "rust_model.ot": b"not needed", "README.md": b"a model card"}, theirs


class _RunsCode:
    """Unpickling this runs code: it creates the file `marker`."""

    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return exec, (f"open({self.marker!r}, 'w').close()",)


@pytest.fixture(scope="module")
def tiny_repo(tmp_path_factory):
    return _tiny_repo(tmp_path_factory.mktemp("deberta-repo"))


@pytest.fixture
def deberta_hub(tiny_repo, tmp_path, monkeypatch):
    files, _ = tiny_repo
    malicious = tmp_path / "malicious.bin"
    torch.save({"deberta.embeddings.word_embeddings.weight": _RunsCode(str(tmp_path / "ran"))}, malicious)
    repos = {REPO: files, "someone/deberta-runs-code": files | {"pytorch_model.bin": malicious.read_bytes()},
             "someone/deberta-safetensors-too": files | {"model.safetensors": _safetensors_of(tiny_repo[1], tmp_path)}}
    with HubServer(repos) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        yield server


def _safetensors_of(model, folder) -> bytes:
    model.save_pretrained(folder / "safetensors")
    return (folder / "safetensors" / "model.safetensors").read_bytes()


def test_download_fetches_the_bin_and_loads_transformers_logits(deberta_hub, tiny_repo, capsys):
    _, theirs = tiny_repo
    assert cli(["download", REPO]) == 0
    assert f"{REPO}: 2 layers, with a masked-LM head" in capsys.readouterr().out
    folder = hub.cached_folder(REPO)
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "pytorch_model.bin", "spm.model", "tokenizer_config.json"]
    assert not any(name in request for request in deberta_hub.requests for name in ("tf_model.h5", "rust_model.ot", "README"))

    ours, tokenizer = bert.load_pretrained(REPO)  # from the cache now
    for text, pair in [("Paris is the [MASK] of France.", None), ("Der Bär läuft.", "Le café est fermé.")]:
        input_ids, token_type_ids = tokenizer.encode(text, pair).tensors()
        with torch.no_grad():
            expected = theirs(input_ids=input_ids).logits
            torch.testing.assert_close(ours(input_ids, token_type_ids), expected, atol=1e-5, rtol=1e-5)


def test_safetensors_are_preferred_to_the_bin(deberta_hub):
    folder = hub.download("someone/deberta-safetensors-too")
    assert "pytorch_model.bin" not in {p.name for p in folder.iterdir()} and (folder / "model.safetensors").is_file()
    assert not any("pytorch_model.bin" in request for request in deberta_hub.requests)


def test_a_bin_holding_other_objects_is_refused_and_never_run(deberta_hub, tmp_path, capsys):
    folder = hub.download("someone/deberta-runs-code")  # fetched: what it holds is only known on reading
    with pytest.raises(CheckpointError, match="pytorch_model.bin was refused: it is not a plain file of tensors"):
        bert.load_pretrained(str(folder))
    assert cli(["download", "someone/deberta-runs-code"]) == 2
    assert "was refused" in capsys.readouterr().err
    assert not (tmp_path / "ran").exists()
    torch.load(folder / "pytorch_model.bin", weights_only=False)  # unpickled without weights_only, it runs its code
    assert (tmp_path / "ran").exists()


def test_sharded_bin_downloads_and_loads(tiny_repo, tmp_path, monkeypatch):
    """pytorch_model.bin.index.json naming two .bin shards, as large checkpoints without safetensors are split."""
    files, theirs = tiny_repo
    state = theirs.state_dict()
    names = sorted(state)
    shards = {"pytorch_model-00001-of-00002.bin": names[: len(names) // 2], "pytorch_model-00002-of-00002.bin": names[len(names) // 2:]}
    sharded = {name: value for name, value in files.items() if name != "pytorch_model.bin"}
    for shard, keys in shards.items():
        torch.save({key: state[key] for key in keys}, tmp_path / shard)
        sharded[shard] = (tmp_path / shard).read_bytes()
    weight_map = {key: shard for shard, keys in shards.items() for key in keys}
    sharded["pytorch_model.bin.index.json"] = json.dumps({"metadata": {}, "weight_map": weight_map}).encode()
    with HubServer({REPO: sharded}) as server:
        monkeypatch.setenv("HF_ENDPOINT", server.url)
        monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub-cache"))
        folder = hub.download(REPO)
    assert {"pytorch_model.bin.index.json", *shards} <= {p.name for p in folder.iterdir()}
    ours, tokenizer = bert.load_pretrained(str(folder))
    input_ids, token_type_ids = tokenizer.encode("Der Bär läuft.", "Le café est fermé.").tensors()
    with torch.no_grad():
        torch.testing.assert_close(ours(input_ids, token_type_ids), theirs(input_ids=input_ids).logits, atol=1e-5, rtol=1e-5)
