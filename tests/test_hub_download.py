"""Downloading a BERT from the hub, against a local stand-in of the hub (tests/hub_server.py) so the real
huggingface_hub code runs: HF_ENDPOINT points at 127.0.0.1, HF_HUB_CACHE at a temporary folder. No test touches
the internet."""
from __future__ import annotations

import pytest
import torch

import bert
from bert import hub
from bert.__main__ import main as cli
from bert.errors import DownloadError

pytest.importorskip("huggingface_hub", reason="downloads need huggingface_hub")
REPO = "org/bert-tiny"  # the tiny BERT that the local_hub fixture serves


def test_download_lands_in_the_cache_and_loads_with_the_same_logits(local_hub, tmp_path, tiny_mlm_folder, tiny_batch):
    from transformers import BertForMaskedLM

    folder = hub.download(REPO)
    assert folder.is_relative_to(tmp_path / "hub-cache")
    assert sorted(p.name for p in folder.iterdir()) == ["config.json", "model.safetensors", "vocab.txt"]
    assert not any("pytorch_model.bin" in r or "msgpack" in r or "README" in r for r in local_hub.requests)

    model, _ = bert.load_pretrained(REPO)  # from the cache now, no download allowed
    reference = BertForMaskedLM.from_pretrained(tiny_mlm_folder, attn_implementation="eager").eval()
    input_ids, token_type_ids, attention_mask = tiny_batch
    with torch.no_grad():
        expected = reference(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).logits
        ours = model(input_ids, token_type_ids, attention_mask)
    torch.testing.assert_close(ours, expected, atol=1e-5, rtol=1e-4)


def test_a_cached_model_is_not_fetched_again(local_hub):
    first = hub.download(REPO)
    asked = len(local_hub.requests)
    assert hub.download(REPO) == first
    assert len(local_hub.requests) == asked


def test_cli_download(local_hub, capsys):
    assert cli(["download", REPO]) == 0
    assert "org/bert-tiny: 2 layers, with a masked-LM head, in the local Hugging Face cache" in capsys.readouterr().out
    assert hub.cached_folder(REPO) is not None


@pytest.mark.slow
@pytest.mark.parametrize(("repo_id", "reason", "message"), [
    ("nobody/no-such-model", "unknown", "no model 'nobody/no-such-model' on the Hugging Face hub"),
    ("gpt-like", "not_bert", "'gpt-like' is not a BERT-family encoder (its config.json says model_type 'gpt2')"),
    ("no-config", "not_bert", "'no-config' is not a BERT-family encoder (it has no config.json)"),
    ("bert-without-weights", "not_bert", "has no weights this project loads"),
    ("not a valid id!", "unknown", "check the spelling"),
])
def test_failures_are_one_line_messages(local_hub, repo_id, reason, message, capsys):
    with pytest.raises(DownloadError, match=message.replace("(", r"\(").replace(")", r"\)")) as caught:
        hub.download(repo_id)
    assert caught.value.reason == reason
    assert "\n" not in str(caught.value)
    assert cli(["download", repo_id]) == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == f"error: {caught.value}"  # after any progress bars


def test_an_unreachable_hub_is_reported_as_offline(unreachable_hub, capsys):
    assert not hub.reachable()
    with pytest.raises(DownloadError, match="cannot reach the Hugging Face hub") as caught:
        hub.download("bert-base-uncased")
    assert caught.value.reason == "offline"
    assert cli(["download", "bert-base-uncased"]) == 3
    err = capsys.readouterr().err
    assert err.startswith("offline: cannot reach the Hugging Face hub (http://127.0.0.1:") and err.count("\n") == 1


def test_load_pretrained_without_download_says_how_to_get_the_model(unreachable_hub):
    with pytest.raises(bert.ModelNotFoundError, match="python -m bert download bert-base-uncased"):
        bert.load_pretrained("bert-base-uncased")


def test_progress_for_the_app_follows_huggingface_hubs_bars(local_hub, hub_repos):
    from viz_app.server.downloads import ProgressTally, download_with_progress

    tally = ProgressTally()
    hub.download(REPO, tqdm_class=tally.tqdm_class())
    fraction, text = tally.state()
    assert fraction == 1.0
    weights = len(hub_repos[REPO]["model.safetensors"]) + len(hub_repos[REPO]["vocab.txt"])
    assert text == f"{weights / 1e6:.1f} of {weights / 1e6:.1f} MB"  # config.json came first, on its own

    seen = []
    download_with_progress(REPO, lambda done, text: seen.append((done, text)))  # cached: returns at once
    assert seen[-1] == (1.0, "done")
