"""One tensor, one label: the residual stream's hidden_states[i] is called the same on the probes page, on the causal
tracing page, in `python -m bert probe --json` and in `python -m bert patch`'s text, for the same (tiny) model; and
that label names the tensor Hugging Face's `transformers` returns as hidden_states[i] (docs/library.md's first table).
That no page shows a layer the model lacks is checked on every render of the every-page sweep
(tests/app/app/test_every_page.py)."""
from __future__ import annotations

import json

import pytest
import torch

from app_helpers import figures, no_exception, open_page
from bert import load_pretrained
from bert.__main__ import main
from bert.layers import layer_labels, residual_labels
from bert_test_support import synthetic_conllu

CLEAN, CORRUPTED = "the dog [MASK] at the park .", "her cat [MASK] to the mail ."


@pytest.fixture(scope="module")
def conllu_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("one_numbering") / "synthetic.conllu"
    path.write_text(synthetic_conllu(30))
    return path


def test_each_label_names_the_tensor_transformers_calls_hidden_states_of_that_index(tiny_mlm_folder):
    """The independent reference: "embeddings" is transformers' hidden_states[0], "after layer i" its [i + 1]."""
    from transformers import BertModel

    model, tokenizer = load_pretrained(str(tiny_mlm_folder))
    input_ids, token_type_ids = tokenizer.encode("the dog barked at her cat .").tensors()
    with torch.no_grad():
        theirs = BertModel.from_pretrained(tiny_mlm_folder).eval()(input_ids=input_ids, token_type_ids=token_type_ids,
                                                                   output_hidden_states=True).hidden_states
        _, cache = model.run_with_cache(input_ids, token_type_ids)
    ours = cache.residual_stream()  # [hidden_states index, batch, seq, hidden]
    labels = residual_labels(model.config.num_layers)
    assert len(labels) == len(theirs) == len(ours) == 3
    for index, label in enumerate(labels):
        tensor = cache["embedding_out"] if label == "embeddings" else cache["layer_out", int(label.removeprefix("after layer "))]
        torch.testing.assert_close(tensor, theirs[index], atol=1e-5, rtol=1e-5)
        torch.testing.assert_close(ours[index], theirs[index], atol=1e-5, rtol=1e-5)


@pytest.mark.slow  # two pages and two commands on the tiny model: about 12 s
def test_the_probes_page_the_causal_page_and_the_command_line_label_hidden_states_alike(
        tiny_mlm_folder, conllu_file, tmp_path, capsys):
    num_layers = 2  # tiny_mlm_folder
    out = tmp_path / "probes.json"
    assert main(["probe", "--data", str(conllu_file), "--model", str(tiny_mlm_folder), "--tasks", "upos",
                 "--json", str(out), "--device", "cpu"]) == 0
    probe_json = json.loads(out.read_text())
    from_json = probe_json["residual_names"]  # indexed by each row's hidden_states_index
    assert [row["hidden_states_index"] for row in probe_json["tasks"]["upos"]["layers"]] == [0, 1, 2]
    assert main(["patch", "--model", str(tiny_mlm_folder), "--clean", CLEAN, "--corrupted", CORRUPTED,
                 "--answer", "barked", "--foil", "mail", "--device", "cpu"]) == 0
    patch_text = capsys.readouterr().out

    causal = open_page("causal_tracing", dict(model=str(tiny_mlm_folder), causal_mode="two", patch_clean=CLEAN,
                                              patch_corrupted=CORRUPTED, patch_answer="barked", patch_foil="mail"))
    charts = figures(causal)
    residual_rows, attention_rows = list(charts[0]["data"][0]["y"]), list(charts[1]["data"][0]["y"])

    probes = open_page("probes", dict(model=str(tiny_mlm_folder), probes_source="labelled"))
    probes.file_uploader(key="probes_labelled_file").set_value(
        ("mine.conllu", conllu_file.read_bytes(), "application/octet-stream")).run()
    probes.multiselect(key="probe_treebank_tasks").set_value(["upos"])
    probes.toggle(key="probe_run").set_value(True).run()
    no_exception(probes)
    curve_points = list(figures(probes)[0]["data"][0]["x"])
    best_shown = probes.dataframe[0].value["best hidden state"].tolist()

    expected = ["embeddings", "after layer 0", "after layer 1"]  # docs/library.md's first table, written out
    assert from_json == residual_rows == curve_points == residual_labels(num_layers) == expected
    assert best_shown[0] in expected
    assert attention_rows == layer_labels(num_layers) == ["layer 0", "layer 1"]  # a block's own output: layer i
    for index, label in enumerate(expected):  # the patch command names the index and the label together
        if f"hidden_states[{index}]" in patch_text:
            assert f"hidden_states[{index}] ({label})" in patch_text
    assert "hidden_states[" in patch_text
