"""How each tokenization scheme writes its word pieces, so that a display shows them in the scheme's own way.

    WordPiece (BERT, DistilBERT, ELECTRA; Wu et al. 2016):  "play", "##ing"   "##" marks a piece that continues a word
    byte-level BPE (RoBERTa; Radford et al. 2019):          "Ġplay", "ing"    a leading "Ġ" (a space) marks a word start
    SentencePiece (ALBERT; Kudo & Richardson 2018):         "▁play", "ing"    a leading "▁" (a space) marks a word start
    characters (ESM-2's amino acids; Lin et al. 2023):      "M", "K"          no marker: each piece is one residue, a word of its own

A piece on its own (a vocabulary entry, a predicted candidate) is judged by its marker. Inside an encoded input
`Encoding.is_continuation` goes by word ids for the schemes that mark word starts, since RoBERTa's first word and
punctuation carry no "Ġ" although they begin a word.
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

from tokenizers import decoders


@dataclass(frozen=True)
class PieceStyle:
    scheme: str  # "wordpiece", "byte-level BPE", "sentencepiece" or "characters"
    continuation_prefix: str = ""  # "##" in WordPiece
    word_start: str = ""  # "Ġ" (byte-level BPE) or "▁" (SentencePiece)
    byte_level: bool = False  # pieces are bytes written as printable characters (GPT-2's table): "Ã©" is "é"
    mask_token: str = "[MASK]"  # the model's own mask token, what a typed "[MASK]" becomes

    @property
    def marker_note(self) -> str:
        """How the scheme marks its pieces, in words: "## marks a piece that continues a word"."""
        if self.continuation_prefix:
            return f"{self.continuation_prefix} marks a piece that continues a word"
        if not self.word_start:
            return "no marker: each piece is one character, a word of its own"
        return f"{self.word_start} marks a piece that starts a word"

    @property
    def continuation_kind(self) -> str:
        """A piece that only continues a word, named for a legend: "word piece (##)", "word piece (no Ġ)"."""
        return f"word piece ({self.continuation_prefix or 'no ' + self.word_start})" if self.continuation_prefix or self.word_start else "character"

    def display(self, token: str) -> str:
        """The piece as a reader should see it, its scheme's marker kept: "Ġcafé" (bytes decoded), "##ing", "▁play".
        A byte-level piece that holds only part of a character (one byte of an emoji) stays as written."""
        if not self.byte_level:
            return token
        text = _byte_decoder().decode([token])
        if "\ufffd" in text and "\ufffd" not in token:
            return token
        return self.word_start + text[1:] if text.startswith(" ") else text

    def text(self, token: str) -> str:
        """The piece without its marker, for joining the pieces of one word: "##ing" -> "ing", "Ġcafé" -> "café"."""
        shown = self.display(token)
        if self.continuation_prefix and shown.startswith(self.continuation_prefix) and len(shown) > len(self.continuation_prefix):
            return shown[len(self.continuation_prefix):]
        if self.word_start and shown.startswith(self.word_start):
            return shown[len(self.word_start):]
        return shown

    def word(self, tokens: list[str]) -> str:
        """The word that a word's pieces spell, markers dropped: ["play", "##ing"] -> "playing"; byte-level pieces are
        decoded together, so an emoji split over several pieces comes back whole (["Ġð", "ŁĺĢ"] -> "😀")."""
        if self.byte_level:
            return _byte_decoder().decode(list(tokens)).removeprefix(" ")
        first, *rest = tokens or [""]
        return (first.removeprefix(self.word_start) if self.word_start else first) + "".join(self.text(t) for t in rest)

    def is_continuation(self, token: str) -> bool:
        """A piece that, on its own, reads as continuing a word: "##ing" in WordPiece; in the schemes that mark word
        starts, a piece without the marker that begins with a letter or digit ("ing", not "," or "<mask>")."""
        if self.continuation_prefix:
            return token.startswith(self.continuation_prefix) and len(token) > len(self.continuation_prefix)
        shown = self.display(token)
        return not shown.startswith(self.word_start) and shown[:1].isalnum()


WORDPIECE = PieceStyle("wordpiece", continuation_prefix="##")
CHARACTERS = PieceStyle("characters")  # no marker; is_continuation is then always False: every piece starts a word


def byte_level_bpe(mask_token: str = "<mask>") -> PieceStyle:
    return PieceStyle("byte-level BPE", word_start="Ġ", byte_level=True, mask_token=mask_token)


def sentencepiece(mask_token: str = "[MASK]") -> PieceStyle:
    return PieceStyle("sentencepiece", word_start="▁", mask_token=mask_token)


@functools.cache
def _byte_decoder() -> decoders.ByteLevel:
    return decoders.ByteLevel()
