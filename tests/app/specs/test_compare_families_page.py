"""AppTest of Compare two models across BERT's family, each model with its family's own tokenizer (WordPiece,
byte-level BPE, SentencePiece; tests/tokenizer_support.py), built by transformers' classes into temporary folders:
the page compares them word by word, says so in one line with the sentences skipped, and draws a rectangular
CKA matrix when the depths differ."""
from __future__ import annotations

import numpy as np
import pytest

from app_helpers import array, figures, no_exception, open_page, texts
from tokenizer_support import family_folder

pytestmark = pytest.mark.slow  # five folders built, then the page run over 20 sentences per pair (the fast run
# covers the page's word-by-word comparison in tests/app/specs/test_sentence_pages.py)
COUNT = 20  # built-in sentences
TEXT = "the dog [MASK] at the cat."


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """name -> a folder. ALBERT applies its one layer three times (3 layers); DistilBERT has 2, ELECTRA 2 and
    BERT 4 here, RoBERTa 2, so most pairs differ in depth."""
    root = tmp_path_factory.mktemp("compare_families")
    return {"bert": family_folder("bert", root / "bert", num_hidden_layers=4),
            "roberta": family_folder("roberta", root / "roberta", seed=4),
            "distilbert": family_folder("distilbert", root / "distilbert", seed=5),
            "albert": family_folder("albert", root / "albert", seed=6),
            "electra": family_folder("electra", root / "electra", seed=7)}


def compare(folder_a, folder_b):
    at = open_page("compare_models", {"model": str(folder_a), "compare_with": "folder", "compare_count": COUNT,
                                      "text": TEXT})
    at.text_input(key="compare_folder").set_value(str(folder_b)).run()
    no_exception(at)
    return at


def library_result(folder_a, folder_b):
    from bert import load_pretrained
    from bert.analysis.representations.compare import compare_models
    from bert.data import builtin_sentences

    (model_a, tokenizer_a), (model_b, tokenizer_b) = load_pretrained(str(folder_a)), load_pretrained(str(folder_b))
    return compare_models(model_a, model_b, tokenizer_a, [s.text for s in builtin_sentences(COUNT)], tokenizer_b=tokenizer_b)


def test_bert_and_roberta_are_compared_word_by_word(folders):
    at = compare(folders["bert"], folders["roberta"])
    shown = texts(at)
    expected = library_result(folders["bert"], folders["roberta"])
    assert expected.unit == "word"
    assert "aligned by words: a word's vector is the mean of its pieces' vectors" in shown
    skipped = f"{expected.skipped} sentence{'' if expected.skipped == 1 else 's'} skipped"
    assert skipped in shown and f"{expected.num_examples:,} words in {expected.num_sentences} sentences" in shown
    assert "cannot be paired up head by head" in shown and "Merchant et al." not in shown
    assert "cannot be compared" not in shown
    matrix = figures(at)[-1]
    z = array(matrix["data"][0]["z"])
    assert z.shape == (5, 3)  # BERT: embeddings + 4 layers; RoBERTa: embeddings + 2 layers
    np.testing.assert_allclose(z, expected.cka, atol=1e-9)
    # the typed [MASK] is paired across the two tokenizers, each reading the text in its own tokens
    table = at.dataframe[0].value
    assert table["what"].tolist()[0].startswith("[MASK] number 1 (position ")


@pytest.mark.parametrize("other", ["distilbert", "albert", "electra"])
def test_roberta_against_the_other_families(folders, other):
    at = compare(folders["roberta"], folders[other])
    assert "aligned by words" in texts(at)
    depth = {"distilbert": 2, "albert": 3, "electra": 2}[other]
    matrix = figures(at)[-1]
    assert array(matrix["data"][0]["z"]).shape == (3, depth + 1)
    if depth == 2:  # the same depth: the same-layer line too
        assert len(figures(at)) == 2 and len(array(figures(at)[0]["data"][0]["y"])) == 3


def test_two_folders_with_one_tokenizer_are_compared_token_by_token(folders, tmp_path):
    """A copy of the BERT folder with other weights (its tokenizer files kept): one vocabulary, so token by token
    and head by head, as for a fine-tuned model and its base. (Two WordPiece vocabularies trained apart number
    their pieces differently, so those are compared by words.)"""
    import shutil

    import transformers

    from bert_test_support import randomize_

    tuned = tmp_path / "tuned"
    shutil.copytree(folders["bert"], tuned)
    model = transformers.BertForMaskedLM(transformers.BertConfig.from_pretrained(tuned))
    randomize_(model, seed=9).save_pretrained(tuned)
    at = compare(folders["bert"], tuned)
    shown = texts(at)
    assert "every token of every sentence" in shown and "aligned by words" not in shown and "skipped" not in shown
    line, matrix, heads = figures(at)
    assert array(matrix["data"][0]["z"]).shape == (5, 5) and array(heads["data"][0]["z"]).shape == (4, 2)
    assert at.dataframe[0].value["what"].tolist()[0].startswith("[MASK] at position ")
