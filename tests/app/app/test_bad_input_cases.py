"""Every bad input a link or the sentence box can bring, without Streamlit: `forward.prepare_input` (what every page
reads) either prepares the tokens `transformers`' own BertTokenizer makes of the same text with the same vocabulary,
or raises `InputProblem` of the kind that gives the page its one-line message. The tiny vocabulary of
tests/bert_test_support.py and 64 positions: a too-long input is long at 65 tokens already. That a page shows the
message, and draws the inputs that do run, is the every-page sweep's part (tests/app/app/test_every_page.py)."""
from __future__ import annotations

import pytest

from viz_app.app.forward import InputProblem, prepare_input
from viz_app.app.url_params import SHARED

POSITIONS = 64
LONG = "The dog barked at the [MASK] in the park. " * 60  # about 600 tokens: over 512 positions, and over the tiny 64
HTML = "<script>alert('x')</script> <b>bold</b> <img src=x onerror=alert(1)> [MASK] & *stars* $x$"
# name -> (text, pair, what prepare_input makes of it: a problem's kind, or the positions of typed [MASK]s)
INPUTS = {
    "only-masks": ("[mask] [MASK] [Mask]", None, (1, 2, 3)),  # [MASK] in any case is the mask token
    "one-mask": ("[MASK]", None, (1,)),
    "only-special-tokens": ("[CLS] [SEP] [PAD] [UNK]", None, ()),
    "only-punctuation": ("?! ... ,;: -- !!! .", None, ()),
    "two-segments": ("The dog barked at the [MASK].", "It ran to the park.", (6,)),
    "over-512-tokens": (LONG, None, "too_long"),
    "empty": ("", None, "empty"),
    "only-spaces": ("   \n\t  ", None, "empty"),
    "only-control-characters": ("\x00\x01\x07\x1b", None, "no_tokens"),
    "over-100000-characters": ("word " * 20_001, None, "too_many_characters"),
    "emoji": ("I love 🍕 and 🎻 music! 😀", None, ()),
    "arabic-rtl": ("مرحبا بالعالم، كيف حالك؟", None, ()),
    "hebrew-rtl-mask": ("שלום עולם [MASK] טוב", None, (3,)),
    "control-characters-and-mask": ("The dog\x00\x07 barked\x1b at the [MASK].", None, (6,)),
    "unicode-mix": ("Ünïcödé naïve café — “quotes” … ½ ∑ 漢字", None, ()),
    "html": (HTML[:40] + " [MASK]", None, (39,)),  # 38 pieces of the tags ([UNK]s among them) before it
    "html-too-long": (HTML, None, "too_long"),
    "empty-second-sentence": ("The dog barked at the [MASK].", "\x00\x07", (6,)),
}
MESSAGES = {  # the one line a page shows for each kind (viz_app/sentence_box.py shows it as it is)
    "empty": "Type a sentence in the Sentence box at the top",
    "no_tokens": "Nothing is left of this text after tokenization",
    "too_long": f"tokens long, but the model has only {POSITIONS} positions",
    "too_many_characters": "characters long; the model reads at most",
}


@pytest.fixture(scope="module")
def theirs(tiny_vocab_file):
    """transformers' BertTokenizer on the same vocabulary: the reference for every id."""
    from transformers import BertTokenizer

    return BertTokenizer(str(tiny_vocab_file))


def _their_ids(theirs, text: str, pair: str | None) -> list[int]:
    """Their ids, [MASK] spelt in upper case as they need it (ours reads it in any case)."""
    text = text.replace("[mask]", "[MASK]").replace("[Mask]", "[MASK]")
    return theirs(text, pair)["input_ids"] if pair else theirs(text)["input_ids"]


@pytest.mark.parametrize("name", list(INPUTS))
def test_a_bad_input_is_prepared_as_transformers_tokenizes_it_or_named(tokenizer, theirs, name):
    text, pair, expected = INPUTS[name]
    if isinstance(expected, str):
        with pytest.raises(InputProblem) as problem:
            prepare_input(tokenizer, text, pair, (), False, POSITIONS)
        assert problem.value.kind == expected, name
        assert MESSAGES[expected] in problem.value.message and "\n" not in problem.value.message
        if expected == "too_long":
            assert problem.value.num_tokens == len(_their_ids(theirs, text, pair)) > POSITIONS
        if expected == "no_tokens":
            assert len(_their_ids(theirs, text, pair)) == 2  # [CLS] and [SEP]: nothing of the text
        return
    prepared = prepare_input(tokenizer, text, pair, (), False, POSITIONS)
    dropped = pair is not None and not pair.strip("\x00\x07")
    assert list(prepared.base.input_ids) == _their_ids(theirs, text, None if dropped else pair), name
    their_masks = tuple(i for i, id_ in enumerate(_their_ids(theirs, text, pair)) if id_ == theirs.mask_token_id)
    assert prepared.typed_masks == expected == their_masks == prepared.all_masks, name
    assert prepared.pair_dropped == dropped and prepared.pair == ("" if pair is None else pair)


def test_a_too_long_input_cut_keeps_the_models_positions(tokenizer, theirs):
    prepared = prepare_input(tokenizer, LONG, None, (), True, POSITIONS)
    assert list(prepared.base.input_ids) == theirs(LONG, truncation=True, max_length=POSITIONS)["input_ids"]
    assert prepared.truncate and prepared.typed_masks == (6, 17, 28, 39, 50, 61)  # one a sentence of 11 tokens


def test_masks_from_a_link_out_of_range_or_on_special_tokens_are_dropped(tokenizer):
    masks = SHARED["masks"].from_link("0,1,99,-3")
    assert masks == [-3, 0, 1, 99]
    prepared = prepare_input(tokenizer, "The dog barked.", None, masks, False, POSITIONS)
    assert prepared.masks == (1,)  # 0 is [CLS], 99 and -3 are no position of 6 tokens
    assert list(prepared.masked.input_ids)[1] == tokenizer.mask_id
    assert SHARED["masks"].from_link("1,x") == []  # nonsense: the default, no masks
