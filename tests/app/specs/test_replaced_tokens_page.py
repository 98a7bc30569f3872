"""The prediction page with ELECTRA's discriminator (AppTest through Home.py): "Which words look replaced?" instead of
guesses. Its chart draws what bert/replaced_tokens.py computes on the same folder (itself tested against
transformers in tests/families/test_replaced_tokens.py); a generator is offered from the visitor's own models (the
teacher's folders here, viz_app/server/settings.py), only an ELECTRA generator with the discriminator's vocabulary,
and a student sees no folder box."""
from __future__ import annotations

import secrets

import numpy as np
import pytest

import bert
from app_helpers import array, figures, no_exception, texts
from bert.replaced_tokens import fill_and_detect, replaced_token_scores
from families.family_support import build_hf, write_tiny_tokenizer
from viz_app.server import visitor

pytestmark = pytest.mark.slow  # every test here runs the app

TYPED = "the dog barked at the cat."
BLANKS = "the dog [MASK] at the [MASK]."


@pytest.fixture(scope="module")
def electra(tmp_path_factory, tiny_vocab_file):
    """name -> folder: the discriminator, a narrower generator with the same vocabulary, one whose vocabulary has
    two pieces swapped (same size), and one that reads at most 6 tokens."""
    folders = {}
    for name, architecture, fields, seed in (("discriminator", "ElectraForPreTraining", {}, 3),
                                             ("generator", "ElectraForMaskedLM", {"hidden_size": 16, "intermediate_size": 24}, 5),
                                             ("other", "ElectraForMaskedLM", {"hidden_size": 16, "intermediate_size": 24}, 6),
                                             ("short", "ElectraForMaskedLM", {"hidden_size": 16, "intermediate_size": 24,
                                                                              "max_position_embeddings": 6}, 5)):
        folder = tmp_path_factory.mktemp(name)
        build_hf("electra", architecture, seed=seed, **fields).save_pretrained(folder)
        write_tiny_tokenizer(folder, tiny_vocab_file)
        folders[name] = folder
    vocab = (folders["other"] / "vocab.txt").read_text().splitlines()
    dog, cat = vocab.index("dog"), vocab.index("cat")
    vocab[dog], vocab[cat] = vocab[cat], vocab[dog]
    (folders["other"] / "vocab.txt").write_text("\n".join(vocab) + "\n")
    return folders


@pytest.fixture
def offered(electra, tmp_path, monkeypatch):
    """The teacher offers the discriminator and two generators by name (the settings file)."""
    settings = tmp_path / "settings.yaml"
    settings.write_text("folders:\n" + "".join(f"  electra-{name}: {electra[name]}\n" for name in ("discriminator", "generator", "other")))
    monkeypatch.setenv("BERT_INSIDE_SETTINGS", str(settings))


def drawn(at) -> tuple[list[int], np.ndarray, list[bool]]:
    """The replaced-token chart's bars as drawn: (positions, probabilities, filled by the generator), in order."""
    chart = [figure for figure in figures(at) if "replaced" in figure["layout"]["title"]["text"]]
    assert len(chart) == 1
    bars = []
    for trace in chart[0]["data"]:
        for label, probability in zip(trace["x"], array(trace["y"])):
            bars.append((int(label.split()[0]), float(probability), trace["name"] == "filled by the generator"))
    bars.sort()
    return [b[0] for b in bars], np.array([b[1] for b in bars]), [b[2] for b in bars]


def generator_picker(at):
    return [box for box in at.selectbox if box.key == "generator"]


def test_the_discriminator_scores_the_typed_sentence(open_app, electra):
    at = open_app(model=str(electra["discriminator"]), text=TYPED)
    no_exception(at)
    assert "Which words look replaced?" in texts(at) and not at.warning
    model, tokenizer = bert.load_pretrained(str(electra["discriminator"]))
    encoding = tokenizer.encode(TYPED)
    words = [i for i, special in enumerate(encoding.special) if not special]
    positions, probabilities, filled = drawn(at)
    assert positions == words and not any(filled)
    np.testing.assert_allclose(probabilities, replaced_token_scores(model, encoding).numpy()[words], atol=1e-6)
    picker = generator_picker(at)  # the person at the server may type a generator's folder
    assert picker and picker[0].options == ["None: leave the blanks as typed", "A local Hugging Face folder…"]


def test_an_offered_generator_fills_the_blanks_and_the_discriminator_scores_them(open_app, electra, offered):
    at = open_app(model="electra-discriminator", text=BLANKS)
    no_exception(at)
    picker = generator_picker(at)[0]
    assert picker.value == "electra-generator"  # the other vocabulary and the discriminator are not offered
    assert [o for o in picker.options if "electra" in o] == ["electra-generator (offered on this server)"]
    generator, _ = bert.load_pretrained(str(electra["generator"]))
    discriminator, tokenizer = bert.load_pretrained(str(electra["discriminator"]))
    report = fill_and_detect(generator, discriminator, tokenizer, BLANKS)
    assert len(report.filled) == 2
    words = [i for i, special in enumerate(report.encoding.special) if not special]
    positions, probabilities, filled = drawn(at)
    assert positions == words and filled == [i in report.filled for i in words]
    np.testing.assert_allclose(probabilities, report.probabilities.numpy()[words], atol=1e-6)
    shown = texts(at)
    assert "The generator's words, filled in:" in shown
    assert all(report.encoding.tokens[p] in shown for p in report.filled)


def test_no_generator_leaves_the_blanks_as_typed(open_app, electra, offered):
    at = open_app(model="electra-discriminator", text=BLANKS)
    at.selectbox(key="generator").set_value("(none)").run()
    no_exception(at)
    model, tokenizer = bert.load_pretrained(str(electra["discriminator"]))
    encoding = tokenizer.encode(BLANKS)
    words = [i for i, special in enumerate(encoding.special) if not special]
    positions, probabilities, filled = drawn(at)
    assert not any(filled) and "The blanks stay as typed" in texts(at)
    np.testing.assert_allclose(probabilities, replaced_token_scores(model, encoding).numpy()[words], atol=1e-6)


def test_a_generator_folder_with_another_vocabulary_is_refused_in_one_line(open_app, electra):
    at = open_app(model=str(electra["discriminator"]), text=BLANKS, generator="folder",
                  generator_folder=str(electra["other"]))
    no_exception(at)
    assert [e.value for e in at.error if "different vocabularies" in str(e.value)]
    assert "The blanks stay as typed" in texts(at)
    _, _, filled = drawn(at)
    assert not any(filled)


def test_a_generator_too_short_for_the_input_is_one_line(open_app, electra):
    at = open_app(model=str(electra["discriminator"]), text=BLANKS, generator="folder",
                  generator_folder=str(electra["short"]))
    no_exception(at)
    assert [e.value for e in at.error if "The generator cannot read this input" in str(e.value)]
    assert "Traceback" not in texts(at)


def test_a_student_picks_among_the_offered_generators_only(open_app, electra, offered, monkeypatch):
    monkeypatch.setenv("BERT_INSIDE_CLASS", "1")
    monkeypatch.setenv("BERT_INSIDE_PRESENTER_KEY", secrets.token_urlsafe(12))
    monkeypatch.setattr(visitor, "address", lambda: "192.168.1.20")
    at = open_app(model="electra-discriminator", text=BLANKS, generator="folder",
                  generator_folder=str(electra["other"]))
    no_exception(at)
    assert generator_picker(at)[0].options == ["None: leave the blanks as typed", "electra-generator (offered on this server)"]
    assert not [box for box in at.text_input if box.key == "generator_folder"]
    assert str(electra["other"]) not in texts(at)
    _, _, filled = drawn(at)
    assert sum(filled) == 2


def test_an_electra_generator_predicts_as_a_masked_lm(open_app, electra):
    at = open_app(model=str(electra["generator"]), text=BLANKS)
    no_exception(at)
    assert "Which words look replaced?" not in texts(at) and not generator_picker(at)
    assert len([f for f in figures(at) if "[MASK]" in f["layout"]["title"]["text"]]) == 2


def test_the_page_counts_one_pass_or_two_at_the_larger_models_size(electra):
    from bert.costs import relative_size
    from viz_app.app import models
    from viz_app.app.forward import prepare_input
    from viz_app.specs import prediction
    from viz_app.specs.base import Inputs

    discriminator, generator = (models.load(models.ModelKey.of(str(electra[name]), str(electra[name])))
                                for name in ("discriminator", "generator"))
    assert relative_size(discriminator.model.config) > relative_size(generator.model.config)  # hidden 32 and 16

    def priced(text: str, model):
        prepared = prepare_input(discriminator.tokenizer, text, "", (), False, discriminator.summary.max_positions)
        inputs = Inputs(discriminator, prepared, load={generator.key: generator}.__getitem__)
        work = prediction.ReplacedWork(None if model is None else model.key)
        return prediction.REPLACED.cost(inputs, work), prediction.REPLACED.counted_at(inputs, work), len(prepared.masked)

    cost, config, tokens = priced(BLANKS, generator)
    assert (cost.forward_passes, cost.tokens, config) == (2, tokens, discriminator.model.config)
    for text, model in ((TYPED, generator), (BLANKS, None)):  # nothing to fill, or nothing to fill with
        cost, config, tokens = priced(text, model)
        assert (cost.forward_passes, cost.tokens, config) == (1, tokens, discriminator.model.config)
