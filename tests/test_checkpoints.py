"""Bad checkpoints fail loudly, with an error that names what is wrong; good ones load from folders and the hub cache."""
from __future__ import annotations

import json
import os
import shutil

import pytest
import torch
from safetensors.torch import load_file, save_file

import bert
from bert import CheckpointError, ModelNotFoundError
from bert.__main__ import main as cli_main
from bert_test_support import hf_config, randomize_


@pytest.fixture
def folder(tmp_path, tiny_mlm_folder):
    """A private copy of the tiny BertForMaskedLM folder, free to damage."""
    return shutil.copytree(tiny_mlm_folder, tmp_path / "model")


def rewrite(folder, change) -> None:
    """Apply change(state) to the folder's model.safetensors (Hugging Face names, `bert.` prefix)."""
    path = folder / "model.safetensors"
    state = load_file(path)
    change(state)
    save_file(state, path)


def test_the_undamaged_copy_loads(folder):
    model, tokenizer = bert.load_pretrained(str(folder))
    assert model.has_mlm_head and tokenizer.vocab_size == model.config.vocab_size


def test_loading_draws_no_random_weights_and_fills_every_one(tiny_mlm_folder, monkeypatch):
    """Built on the meta device, the model has shapes and no memory: loading must not move the caller's random
    number generator nor run an initialiser on a real tensor (it drew every weight at random before copying the
    checkpoint over them), and what comes out must be the checkpoint's tensors, every one, none left on the meta
    device, the decoder still tied (the tests against transformers check the numbers)."""
    from bert.checkpoint import to_hf_state_dict

    initialised = []
    for name in ("normal_", "uniform_", "kaiming_uniform_", "zeros_", "ones_"):
        original = getattr(torch.nn.init, name)

        def watched(tensor, *args, _original=original, **kwargs):
            initialised.append(tensor.device.type)
            return _original(tensor, *args, **kwargs)

        monkeypatch.setattr(torch.nn.init, name, watched)
    torch.manual_seed(123)
    state = torch.random.get_rng_state()
    model, _ = bert.load_pretrained(str(tiny_mlm_folder))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert initialised and set(initialised) == {"meta"}  # the initialisers ran on shapes only
    tensors = dict(model.named_parameters(remove_duplicate=False)) | dict(model.named_buffers())
    assert not [name for name, tensor in tensors.items() if tensor.is_meta]
    assert model.lm_head.unembedding.weight is model.embedding.token_embedding.weight
    assert len(list(model.parameters())) == len(tensors) - 1  # the tie is one parameter, as an optimizer must see it
    theirs = load_file(tiny_mlm_folder / "model.safetensors")
    for key, tensor in to_hf_state_dict(model).items():
        assert torch.equal(tensor, theirs[key]), key


def test_a_key_table_without_an_entry_is_refused_not_left_uninitialised(folder, monkeypatch):
    """Should the key table ever miss one of our tensors (and the checkpoint lack it too), loading must fail:
    the tensor would otherwise keep whatever memory it was given."""
    from bert import checkpoint

    complete = checkpoint.key_table
    monkeypatch.setattr(checkpoint, "key_table", lambda *a, **k: {o: t for o, t in complete(*a, **k).items() if o != "transformer.0.residual.mlp1.bias"})
    rewrite(folder, lambda state: state.pop("bert.encoder.layer.0.intermediate.dense.bias"))
    with pytest.raises(CheckpointError, match="no entry for .transformer.0.residual.mlp1.bias."):
        bert.load_pretrained(str(folder))


def test_missing_tensor_names_the_key_and_the_file(folder):
    rewrite(folder, lambda state: state.pop("bert.encoder.layer.1.attention.self.key.bias"))
    with pytest.raises(CheckpointError, match="missing") as error:
        bert.load_pretrained(str(folder))
    assert "encoder.layer.1.attention.self.key.bias" in str(error.value)
    assert str(folder / "model.safetensors") in str(error.value)


def test_unexpected_tensor_names_the_key(folder):
    rewrite(folder, lambda state: state.update({"bert.encoder.layer.0.attention.self.rotary.weight": torch.zeros(3)}))
    with pytest.raises(CheckpointError, match="unexpected") as error:
        bert.load_pretrained(str(folder))
    assert "encoder.layer.0.attention.self.rotary.weight" in str(error.value)


def test_misshaped_tensor_names_the_key_and_both_shapes(folder):
    rewrite(folder, lambda state: state.update({"bert.encoder.layer.0.intermediate.dense.weight": torch.zeros(127, 64)}))
    with pytest.raises(CheckpointError, match="encoder.layer.0.intermediate.dense.weight") as error:
        bert.load_pretrained(str(folder))
    assert "(127, 64)" in str(error.value) and "(128, 64)" in str(error.value)


def test_nsp_head_without_pooler_is_a_missing_tensor_not_a_random_pooler(tmp_path, save_hf_model):
    """The NSP head reads the pooler: a checkpoint with one but not the other must not load a random pooler."""
    from transformers import BertForPreTraining

    folder = save_hf_model(randomize_(BertForPreTraining(hf_config(num_hidden_layers=1, hidden_size=32, num_attention_heads=2)), seed=7))
    rewrite(folder, lambda state: [state.pop(k) for k in ("bert.pooler.dense.weight", "bert.pooler.dense.bias")])
    with pytest.raises(CheckpointError, match="pooler.dense"):
        bert.load_pretrained(str(folder))


def test_truncated_safetensors(folder):
    path = folder / "model.safetensors"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(CheckpointError, match="corrupt or truncated"):
        bert.load_pretrained(str(folder))


def test_corrupt_bin(folder):
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"PK\x03\x04" + os.urandom(4096))
    with pytest.raises(CheckpointError, match="pytorch_model.bin"):
        bert.load_pretrained(str(folder))


class RunsCode:
    """Unpickling this calls os.system: what a malicious .bin does."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return os.system, (self.command,)


def test_bin_that_carries_code_is_refused_and_the_code_does_not_run(folder, tmp_path):
    marker = tmp_path / "the_code_ran"
    state = load_file(folder / "model.safetensors")
    state["bert.embeddings.LayerNorm.weight"] = RunsCode(f"touch {marker}")
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="refused"):
        bert.load_pretrained(str(folder))
    assert not marker.exists(), "loading the checkpoint ran the code in it"


def test_bin_with_non_tensor_values_is_refused(folder):
    (folder / "model.safetensors").unlink()
    torch.save({"bert.embeddings.word_embeddings.weight": [1, 2, 3]}, folder / "pytorch_model.bin")
    with pytest.raises(CheckpointError, match="not a state dict of tensors"):
        bert.load_pretrained(str(folder))


def test_folder_without_weights(folder):
    (folder / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match="no weights file"):
        bert.load_pretrained(str(folder))


def test_folder_without_config_json(folder):
    (folder / "config.json").unlink()
    with pytest.raises(ModelNotFoundError, match="config.json"):
        bert.load_pretrained(str(folder))


def test_config_json_that_is_not_json(folder):
    (folder / "config.json").write_text("{not json")
    with pytest.raises(CheckpointError, match="config.json"):
        bert.load_pretrained(str(folder))


@pytest.mark.parametrize(
    "change, message",
    [
        (dict(model_type="gpt2"), "model_type is 'gpt2'; supported: bert, roberta"),
        (dict(model_type="roberta"), "missing tensor 'embeddings.word_embeddings.weight'.*model_type is 'roberta'"),
        (dict(position_embedding_type="relative_key"), "position_embedding_type"),
        (dict(hidden_act="tanh"), "hidden_act"),
        (dict(num_attention_heads=5), "not divisible"),
    ],
    ids=["gpt2", "bert-weights-named-roberta", "relative-positions", "tanh", "heads-do-not-divide"],
)
def test_config_we_cannot_run(folder, change, message):
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps(config | change))
    with pytest.raises(CheckpointError, match=message):
        bert.load_pretrained(str(folder))


def test_untied_decoder_is_refused(tmp_path, save_hf_model):
    """transformers with tie_word_embeddings=False stores a decoder of its own: we only run tied ones."""
    from transformers import BertForMaskedLM

    config = hf_config(num_hidden_layers=1, hidden_size=32, num_attention_heads=2, tie_word_embeddings=False)
    theirs = randomize_(BertForMaskedLM(config), seed=8)
    assert theirs.cls.predictions.decoder.weight.data_ptr() != theirs.bert.embeddings.word_embeddings.weight.data_ptr()
    folder = save_hf_model(theirs)
    assert "cls.predictions.decoder.weight" in load_file(folder / "model.safetensors")
    with pytest.raises(CheckpointError, match="untied"):
        bert.load_pretrained(str(folder))


def test_sharded_safetensors(tmp_path, tiny_mlm_folder, tiny_vocab_file):
    """A checkpoint split into shards with an index, as large models are saved."""
    from transformers import BertForMaskedLM

    theirs = BertForMaskedLM.from_pretrained(tiny_mlm_folder)
    folder = tmp_path / "sharded"
    theirs.save_pretrained(folder, max_shard_size="50KB")
    (folder / "vocab.txt").write_bytes(tiny_vocab_file.read_bytes())
    assert (folder / "model.safetensors.index.json").is_file() and len(list(folder.glob("*.safetensors"))) > 1
    ours, _ = bert.load_pretrained(str(folder))
    reference, _ = bert.load_pretrained(str(tiny_mlm_folder))
    for (name, mine), (_, expected) in zip(ours.state_dict().items(), reference.state_dict().items()):
        assert torch.equal(mine, expected), name


def test_shard_index_without_weight_map(tmp_path, tiny_mlm_folder):
    folder = shutil.copytree(tiny_mlm_folder, tmp_path / "sharded")
    (folder / "model.safetensors").unlink()
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}}))
    with pytest.raises(CheckpointError, match="weight_map"):
        bert.load_pretrained(str(folder))


def make_hub_cache(cache, repo_id: str, source_folder, commit: str = "0123456789abcdef0123456789abcdef01234567"):
    """The layout huggingface_hub keeps: models--org--name/{refs/main, snapshots/<commit>/...}."""
    repo = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = repo / "snapshots" / commit
    shutil.copytree(source_folder, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    return snapshot


@pytest.fixture
def hub_cache(tmp_path, monkeypatch):
    """An empty, offline Hugging Face cache. huggingface_hub reads HF_HUB_CACHE when imported, so its
    constant is pointed at the folder too."""
    huggingface_hub = pytest.importorskip("huggingface_hub")
    cache = tmp_path / "hf_cache"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    return cache


def test_hub_id_from_the_local_cache(hub_cache, tiny_mlm_folder):
    make_hub_cache(hub_cache, "someone/tiny-bert", tiny_mlm_folder)
    model, _ = bert.load_pretrained("someone/tiny-bert")
    reference, _ = bert.load_pretrained(str(tiny_mlm_folder))
    input_ids = torch.tensor([[2, 10, 11, 3]])
    with torch.no_grad():
        assert torch.equal(model(input_ids, torch.zeros_like(input_ids)), reference(input_ids, torch.zeros_like(input_ids)))


def test_hub_id_not_in_the_cache_offline(hub_cache):
    with pytest.raises(ModelNotFoundError, match="no-such-org/no-such-bert"):
        bert.load_pretrained("no-such-org/no-such-bert")
    with pytest.raises(ModelNotFoundError, match="HF_HUB_OFFLINE is set, so nothing is downloaded"):
        bert.load_pretrained("no-such-org/no-such-bert", allow_download=True)  # HF_HUB_OFFLINE: no request made


def test_download_command(hub_cache, tiny_mlm_folder, capsys):
    make_hub_cache(hub_cache, "someone/tiny-bert", tiny_mlm_folder)
    assert cli_main(["download", "someone/tiny-bert"]) == 0  # already cached: nothing to fetch
    assert "someone/tiny-bert: 2 layers, with a masked-LM head" in capsys.readouterr().out
    assert cli_main(["download", "no-such-org/no-such-bert"]) == 3  # offline (HF_HUB_OFFLINE)
    assert capsys.readouterr().err.startswith("offline: HF_HUB_OFFLINE is set")


def test_hub_id_cached_with_a_bin_and_no_safetensors(hub_cache, tiny_mlm_folder, tmp_path, tiny_batch):
    """pytorch_model.bin without safetensors (what `download` fetches from such a repository) loads from the cache
    with transformers' logits; a snapshot without weights is named."""
    from transformers import BertForMaskedLM

    bin_only = tmp_path / "bin_only"
    shutil.copytree(tiny_mlm_folder, bin_only)
    torch.save(load_file(bin_only / "model.safetensors"), bin_only / "pytorch_model.bin")
    (bin_only / "model.safetensors").unlink()
    make_hub_cache(hub_cache, "someone/old-bert", bin_only)
    model, _ = bert.load_pretrained("someone/old-bert")
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    input_ids, token_type_ids, attention_mask = tiny_batch
    with torch.no_grad():
        expected = reference(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).logits
        torch.testing.assert_close(model(input_ids, token_type_ids, attention_mask), expected, atol=1e-5, rtol=1e-4)
    (bin_only / "pytorch_model.bin").unlink()
    make_hub_cache(hub_cache, "someone/no-weights", bin_only)
    with pytest.raises(ModelNotFoundError, match="without weights"):
        bert.load_pretrained("someone/no-weights")


def test_path_that_does_not_exist(tmp_path, hub_cache):
    with pytest.raises(ModelNotFoundError, match="neither a folder nor in the local"):
        bert.load_pretrained(str(tmp_path / "nowhere"))


def test_shapes_only_skips_the_initialisers_for_its_own_thread_only():
    """A model built under shapes_only() has every tensor on the meta device; a model another thread builds at the
    same time draws its random numbers as ever (torch.nn.init's normal_ from a seed: the same as a build alone)."""
    import threading

    from bert.checkpoint import shapes_only

    config = bert.BertConfig(vocab_size=40, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32)
    torch.manual_seed(3)
    alone = bert.Bert(config).state_dict()
    inside, beside = threading.Event(), {}

    def build_beside() -> None:
        inside.wait(timeout=30)
        torch.manual_seed(3)
        beside.update(bert.Bert(config).state_dict())

    thread = threading.Thread(target=build_beside)
    thread.start()
    with shapes_only():
        inside.set()
        thread.join(timeout=60)  # the other thread builds while this one is inside
        shaped = bert.Bert(config)
    assert all(tensor.is_meta for tensor in shaped.state_dict().values())
    assert {key: tensor.shape for key, tensor in shaped.state_dict().items()} == {key: t.shape for key, t in alone.items()}
    assert beside.keys() == alone.keys() and all(torch.equal(beside[key], alone[key]) for key in alone)
    assert not any(tensor.is_meta for tensor in beside.values())
