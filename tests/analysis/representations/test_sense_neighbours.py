"""Sense agreement of nearest neighbours: the shipped set's shape, and a case whose answer is known by construction."""
import pytest

from bert import BertTokenizer
from bert.analysis.representations.sense_neighbours import SenseSentence, load_senses, sense_agreement
from bert.errors import InvalidInputError


def test_the_shipped_set_has_8_words_with_two_senses_of_11_sentences():
    sentences = load_senses()
    counts = {}
    for s in sentences:
        counts[(s.word, s.sense)] = counts.get((s.word, s.sense), 0) + 1
        assert s.text[s.start : s.end].lower() == s.word
    assert len({w for w, _ in counts}) == 8 and set(counts.values()) == {11} and len(counts) == 16


def test_at_the_embedding_layer_position_decides_when_position_is_the_sense(tiny_model, tiny_vocab_file):
    """"dog" second in its sentence is sense A, fourth is sense B: at the embedding layer (token + position +
    segment) occurrences at the same position are identical, so every nearest neighbour shares the sense."""
    def sentence(text, sense):
        start = text.index("dog")
        return SenseSentence("dog", sense, text, start, start + 3)

    first = ["a dog went to the park.", "her dog barked at a cat.", "the dog is at the park."]
    fourth = ["at the park the dog barked.", "her cat and a dog went.", "to the park a dog went."]
    sentences = [sentence(t, "A") for t in first] + [sentence(t, "B") for t in fourth]
    tokenizer = BertTokenizer.from_vocab(tiny_vocab_file)
    result = sense_agreement(tiny_model, tokenizer, sentences, k=2, layers=[0, 3])
    assert result.share[0] == 1.0 and result.by_word[0] == {"dog": 1.0}
    assert result.chance == pytest.approx(2 / 5) and 0 <= result.share[3] <= 1
    with pytest.raises(InvalidInputError, match="more than 6 occurrences"):
        sense_agreement(tiny_model, tokenizer, sentences, k=6, layers=[0])
