"""Plain words for label codes that fine-tuned models commonly use (config.json's id2label holds only the codes)."""
from __future__ import annotations

MEANINGS = {
    # TREC question types (Li & Roth 2002): what kind of answer a question asks for
    "ABBR": "an abbreviation", "DESC": "a description, definition or reason", "ENTY": "a thing (animal, colour, food...)",
    "HUM": "a person or group", "NUM": "a number, date or amount",
    # named entities (CoNLL-2003 and most NER models)
    "PER": "a person", "ORG": "an organisation", "LOC": "a place", "MISC": "another kind of name",
    "O": "not part of a name",
    # natural-language inference
    "entailment": "B follows from A", "contradiction": "B contradicts A", "neutral": "neither",
}
PREFIXES = {"B-": "starts", "I-": "continues"}  # BIO tagging: a name's first word, its later words


def label_legend(labels: list[str]) -> str | None:
    """'CODE: meaning · ...' for the labels whose code is known (a name's B-/I- prefix explained once), else None."""
    parts, prefixed = [], False
    for label in labels:
        prefix = next((p for p in PREFIXES if label.startswith(p)), "")
        code = label[len(prefix):]
        prefixed |= bool(prefix)
        if code in MEANINGS and (code, MEANINGS[code]) not in parts:
            parts.append((code, MEANINGS[code]))
    if not parts:
        return None
    legend = " · ".join(f"{code}: {meaning}" for code, meaning in parts)
    if prefixed:
        legend += " · B- marks the first word of a name, I- the words after it"
    return legend
