"""Sample inputs that exercise every path of the tokenizer and the model: real English of varied lengths with
punctuation, numbers, contractions, hyphens, accents, capitals and an emoji, and sentence pairs (segments A and B).
The parity tests run them through this BERT and through transformers; `python -m bench.precision` compares float32
with reduced precision on them."""
from __future__ import annotations

# Real English, varied lengths: punctuation, numbers, contractions, hyphens, accents, capitals, an emoji.
SENTENCES = [
    "Hi.",
    "The dog barked at the mailman.",
    "Jane and her dog Ralph went to the dog park.",
    "Paris is the capital and most populous city of France.",
    "I can't believe it's already 5 o'clock!",
    "BERT reads the whole sentence at once, left and right.",
    "She bought three apples, two pears and a melon for $4.50.",
    "The quick brown fox jumps over the lazy dog.",
    "Water boils at 100 degrees Celsius at sea level.",
    "My grandmother's recipe uses a pinch of nutmeg.",
    "A naïve café owner served crème brûlée.",
    "Tokenization splits rare words like kroxldyphivc into pieces.",
    "Do you know the way to the train station?",
    "The committee postponed its decision until next Thursday.",
    "He plays the violin beautifully 🎻 every evening.",
    "Self-attention lets every token look at every other token.",
    "In 1969, Neil Armstrong became the first person to walk on the Moon.",
    "Rain.",
    "Although the museum was crowded, we spent four happy hours looking at paintings, "
    "sculptures and old maps of the city, and we still did not see everything.",
    "The mitochondria is the powerhouse of the cell.",
]

# (sentence A, sentence B): segments 0 and 1, as in next-sentence prediction.
PAIRS = [
    ("The man went to the store.", "He bought a gallon of milk."),
    ("The man went to the store.", "Penguins are flightless birds."),
    ("Where is the library?", "It is next to the old town hall."),
    ("I love reading.", "My favourite book is a long novel about the sea, the wind and a lighthouse keeper."),
    ("The cat sat on the mat.", "It purred."),
    ("How old are you?", "I'm 27 years old."),
    ("The experiment failed twice.", "On the third attempt, the results finally matched the theory."),
    ("Good morning!", "Good morning to you too."),
]
