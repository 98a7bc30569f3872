"""The Corpus search page's plain logic: summaries of hand-made matches, the highlighted sentence, upload limits."""
from __future__ import annotations

from bert.analysis.corpus.corpus_search import Hit
from viz_app.specs import corpus_search


def test_summary_counts_words_parts_of_speech_positions_and_the_query_word():
    hits = [Hit(0, 2, "dog", "Dog", 0.9, "noun"), Hit(3, 2, "dog", "dog", 0.8, None), Hit(1, 5, "cat", "cat", 0.7, "noun"),
            Hit(2, 0, "[CLS]", "", 0.6, None)]
    summary = corpus_search.summarize(hits, "DOG")
    assert summary.same_word == 2
    assert summary.words == {"dog": 2, "cat": 1, "[CLS]": 1}
    assert summary.parts_of_speech == {"noun": 2, "unknown": 2}
    assert summary.positions == {2: 2, 5: 1, 0: 1}


def test_highlighted_marks_a_piece_inside_its_word_and_escapes_the_rest(tokenizer):
    sentence = "the <dog> & mailman."
    encoding = tokenizer.encode(sentence)
    man = encoding.tokens.index("##man")
    assert corpus_search.highlighted(sentence, tokenizer, man) == "the &lt;dog&gt; &amp; <b>mail<mark>man</mark></b>."
    assert corpus_search.highlighted(sentence, tokenizer, 0) == "the &lt;dog&gt; &amp; mailman. <mark>[CLS]</mark>"
    tokens = corpus_search.query_tokens(encoding, sentence)
    assert [t.word for t in tokens if t.token.endswith("man")] == ["mailman"]
    assert corpus_search.default_position(tokens) == man - 1  # "mail", the first piece of the first word of 4+ letters


def test_upload_limits_are_messages_and_a_good_text_is_one_sentence_per_line(tokenizer):
    corpus = corpus_search.upload_corpus("the dog barked.\n\n  her   cat  went to the park.\n", "a.txt", tokenizer, 64)
    assert corpus.sentences == ("the dog barked.", "her cat went to the park.") and corpus.name == "a.txt"
    again = corpus_search.upload_corpus("the dog barked.\nher cat went to the park.", "b.txt", tokenizer, 64)
    assert corpus.digest == again.digest
    assert "no sentences" in corpus_search.upload_corpus(" \n\n", "a.txt", tokenizer, 64)
    too_long = "dog\n" * (corpus_search.MAX_LINES + 1)
    assert f"limit is {corpus_search.MAX_LINES:,} sentences" in corpus_search.upload_corpus(too_long, "a.txt", tokenizer, 64)
    assert "Line 2 is 12 tokens long" in corpus_search.upload_corpus("dog\n" + "dog " * 10, "a.txt", tokenizer, 11)
    many = "\n".join(["the dog barked at the mailman and the cat went to the park."] * 1500)
    assert f"limit is {corpus_search.MAX_TOKENS:,} tokens" in corpus_search.upload_corpus(many, "a.txt", tokenizer, 64)
