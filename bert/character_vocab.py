"""A vocabulary of single characters, one per line of vocab.txt (ESM-2's amino acids, Lin et al. 2023), as a `tokenizers`
pipeline that splits as transformers' EsmTokenizer does: every vocabulary entry (a residue letter, "<mask>", "<cls>",
...) is cut out of the text wherever it stands; what is left is split at whitespace and each remaining chunk is one
unknown token. `<cls> A <eos>`, a pair `<cls> A <eos> B <eos>`."""
from __future__ import annotations

from pathlib import Path

from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers, processors


def character_tokenizer(vocab_file: Path, special_tokens: dict[str, str]) -> Tokenizer:
    """The tokenizer of a vocab.txt of characters; special_tokens by role (cls, sep, mask, pad, unk)."""
    tokens = [line.strip() for line in vocab_file.read_text(encoding="utf-8").splitlines()]
    vocab = {token: index for index, token in enumerate(tokens)}  # a repeated entry: its last line's id, as EsmTokenizer
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token=special_tokens["unk"]))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    special = set(special_tokens.values())
    tokenizer.add_tokens([AddedToken(token, normalized=False) for token in vocab if token not in special])
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False) for token in special_tokens.values()])
    cls, sep = special_tokens["cls"], special_tokens["sep"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls} $A {sep}", pair=f"{cls} $A {sep} $B:1 {sep}:1", special_tokens=[(cls, vocab[cls]), (sep, vocab[sep])])
    return tokenizer
