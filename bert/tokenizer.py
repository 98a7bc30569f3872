"""WordPiece tokenization (on the `tokenizers` library) that keeps what a display needs: tokens, offsets, segments."""
from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import torch
from tokenizers import Tokenizer
from tokenizers.implementations import BertWordPieceTokenizer

from .errors import InputTooLongError, InvalidInputError, ModelNotFoundError

_TYPED_MASK = re.compile(r"\[mask\]", re.IGNORECASE)  # "[mask]" typed in any case means the mask token


@dataclass(frozen=True)
class Encoding:
    """One input, as the model sees it: [CLS] A [SEP] (B [SEP])."""

    input_ids: list[int]
    token_type_ids: list[int]  # 0 for [CLS], sentence A and its [SEP]; 1 for sentence B and its [SEP]
    tokens: list[str]
    offsets: list[tuple[int, int]]  # character span in its own sentence; (0, 0) for special tokens
    special: list[bool]  # True for [CLS] and [SEP]
    word_ids: list[int | None]  # which word of its sentence a token belongs to; None for special tokens
    truncated: int = 0  # how many tokens were cut to fit (only when truncate=True was asked for)

    def __len__(self) -> int:
        return len(self.input_ids)

    def tensors(self, device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(input_ids [1, seq], token_type_ids [1, seq]) ready for the model: pass its device
        (`bert.devices.model_device(model)`); None means PyTorch's default device."""
        return torch.tensor([self.input_ids], device=device), torch.tensor([self.token_type_ids], device=device)

    def with_masks(self, positions: Iterable[int], mask_id: int) -> "Encoding":
        """The same input with the tokens at `positions` replaced by [MASK] (special tokens cannot be masked)."""
        ids = list(self.input_ids)
        tokens = list(self.tokens)
        for position in positions:
            if not 0 <= position < len(ids) or self.special[position]:
                raise InvalidInputError(f"position {position} is not a maskable token of this {len(ids)}-token input")
            ids[position], tokens[position] = mask_id, "[MASK]"
        return dataclasses.replace(self, input_ids=ids, tokens=tokens)

    def first_sentence(self) -> "Encoding":
        """[CLS] A [SEP]: this input without its second sentence (the same input when it has none). `truncated`
        stays the whole input's count."""
        end = self.token_type_ids.index(1) if 1 in self.token_type_ids else len(self)
        return Encoding(self.input_ids[:end], self.token_type_ids[:end], self.tokens[:end], self.offsets[:end],
                        self.special[:end], self.word_ids[:end], self.truncated)

    def word_spans(self) -> dict[int, tuple[int, int]]:
        """word id -> (start, end) character span of the whole word its pieces make, in sentence A (word ids
        start again in sentence B, so a pair's B words are left out)."""
        spans: dict[int, tuple[int, int]] = {}
        for word_id, segment, (start, end) in zip(self.word_ids, self.token_type_ids, self.offsets):
            if word_id is not None and segment == 0:
                first, last = spans.get(word_id, (start, end))
                spans[word_id] = (min(first, start), max(last, end))
        return spans

    def is_continuation(self, index: int) -> bool:
        """True for a subword piece that continues the previous token's word ("##ing")."""
        return self.tokens[index].startswith("##")


class BertTokenizer:
    def __init__(self, tokenizer: Tokenizer, model_max_length: int = 512):
        """model_max_length: the longest input its model reads (config.max_position_embeddings; the loaders set it),
        what `encode` allows when given no max_length, as Hugging Face's tokenizers."""
        self.model_max_length = model_max_length
        tokenizer.no_truncation()  # we cut explicitly, never silently
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.cls_id, self.sep_id = self._special_id("[CLS]"), self._special_id("[SEP]")
        self.mask_id, self.pad_id = self._special_id("[MASK]"), self._special_id("[PAD]")
        self.unk_id = self._special_id("[UNK]")

    @classmethod
    def from_folder(cls, folder: str | Path, model_max_length: int = 512) -> "BertTokenizer":
        """tokenizer.json if the folder has one, else vocab.txt (lower-casing as tokenizer_config.json says)."""
        folder = Path(folder)
        if (folder / "tokenizer.json").is_file():
            return cls(Tokenizer.from_file(str(folder / "tokenizer.json")), model_max_length)
        if (folder / "vocab.txt").is_file():
            return cls.from_vocab(folder / "vocab.txt", lowercase=_reads_lowercase(folder), model_max_length=model_max_length)
        raise ModelNotFoundError(f"{folder} has neither tokenizer.json nor vocab.txt")

    @classmethod
    def from_vocab(cls, vocab_file: str | Path, lowercase: bool = True, model_max_length: int = 512) -> "BertTokenizer":
        wordpiece = BertWordPieceTokenizer(str(vocab_file), lowercase=lowercase, strip_accents=None if lowercase else False)
        return cls(wordpiece._tokenizer, model_max_length)

    def save(self, folder: str | Path) -> None:
        """vocab.txt (one token per line, in id order) and tokenizer_config.json (lower-casing), as BERT folders have."""
        folder = Path(folder)
        vocab = sorted(self._tokenizer.get_vocab().items(), key=lambda item: item[1])
        (folder / "vocab.txt").write_text("".join(token + "\n" for token, _ in vocab), encoding="utf-8")
        lowercase = bool(getattr(self._tokenizer.normalizer, "lowercase", True))
        (folder / "tokenizer_config.json").write_text(json.dumps({"do_lower_case": lowercase, "tokenizer_class": "BertTokenizer"}, indent=2))

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size()

    @functools.cached_property
    def continuation_mask(self) -> torch.Tensor:
        """bool [vocab]: True for word pieces that continue a word ("##ing")."""
        return torch.tensor([self.id_to_token(i).startswith("##") for i in range(self.vocab_size)], device="cpu")

    def mask_positions(self, encoding: Encoding) -> list[int]:
        """Where this input has [MASK] (typed, or put there by `Encoding.with_masks`), in order."""
        return [i for i, token_id in enumerate(encoding.input_ids) if token_id == self.mask_id]

    def id_to_token(self, token_id: int) -> str:
        return self._tokenizer.id_to_token(token_id)

    def token_to_id(self, token: str) -> int | None:
        return self._tokenizer.token_to_id(token)

    def one_token_id(self, word: str | int, role: str = "answer") -> int:
        """The vocabulary id of a word the model knows whole ("he"), or an id itself (checked): where the library asks
        for a word (an answer, a foil), words and ids are accepted alike. Else InvalidInputError naming `role`."""
        if isinstance(word, int) and not isinstance(word, bool):
            if not 0 <= word < self.vocab_size:
                raise InvalidInputError(f"the {role} id {word} is not in the vocabulary (0..{self.vocab_size - 1})")
            return word
        pieces = self.subwords(word.strip()) if isinstance(word, str) else []
        if len(pieces) != 1:
            split = f"it splits into {pieces}" if pieces else "it is empty"
            raise InvalidInputError(f"the {role} {word!r} is not one vocabulary token ({split}); choose a word the model knows whole")
        return self.token_to_id(pieces[0])

    def subwords(self, word: str) -> list[str]:
        """How WordPiece splits one word: "kroxldyphivc" -> ['k', '##ro', '##x', '##ld', '##yp', '##hi', '##vc'].
        For users exploring the vocabulary (the library itself encodes whole sentences with `encode`)."""
        return self._tokenizer.encode(word, add_special_tokens=False).tokens

    def encode(self, text: str, pair: str | None = None, max_length: int | None = None, truncate: bool = False) -> Encoding:
        """[CLS] text [SEP] (pair [SEP]). Too long for max_length (None: model_max_length): InputTooLongError, or
        with truncate=True the longer sentence loses tokens from its end and `Encoding.truncated` says how many."""
        max_length = self.model_max_length if max_length is None else max_length
        if not isinstance(text, str) or (pair is not None and not isinstance(pair, str)):
            raise InvalidInputError("text (and pair, if given) must be strings")
        sentences = [self._pieces(text)] + ([self._pieces(pair)] if pair is not None else [])
        budget = max_length - 1 - len(sentences)  # room left after [CLS] and one [SEP] per sentence
        needed = sum(len(s.ids) for s in sentences)
        if needed > budget and not truncate:
            raise InputTooLongError(needed + 1 + len(sentences), max_length)
        if budget < 0:
            raise InvalidInputError(f"max_length {max_length} leaves no room for [CLS] and {len(sentences)} [SEP]")
        keep = _fit(sentences, budget)
        return self._assemble(sentences, keep, truncated=needed - sum(keep))

    def encode_words(self, words: list[str], max_length: int | None = None) -> Encoding:
        """[CLS] pieces of each word [SEP] for text already split into words (a treebank's): `word_ids` give each
        piece's word index; a word the tokenizer turns into nothing (e.g. a lone control character) becomes [UNK],
        so every word has a piece. Offsets are in the words joined by single spaces. Too long (max_length None:
        model_max_length): InputTooLongError."""
        max_length = self.model_max_length if max_length is None else max_length
        pieces = self._tokenizer.encode(words, is_pretokenized=True, add_special_tokens=False)
        ids, tokens, word_ids, offsets = [], [], [], []
        starts = [0, *itertools.accumulate(len(w) + 1 for w in words)]  # each word's offset in the joined text
        by_word: dict[int, list[int]] = {}
        for index, word in enumerate(pieces.word_ids):
            by_word.setdefault(word, []).append(index)
        for word in range(len(words)):
            for index in by_word.get(word, []):
                ids.append(pieces.ids[index])
                tokens.append(pieces.tokens[index])
                start, end = pieces.offsets[index]
                offsets.append((starts[word] + start, starts[word] + end))
                word_ids.append(word)
            if word not in by_word:
                ids.append(self.unk_id)
                tokens.append("[UNK]")
                offsets.append((starts[word], starts[word] + len(words[word])))
                word_ids.append(word)
        if len(ids) + 2 > max_length:
            raise InputTooLongError(len(ids) + 2, max_length)
        n = len(ids)
        return Encoding(
            [self.cls_id] + ids + [self.sep_id], [0] * (n + 2), ["[CLS]"] + tokens + ["[SEP]"],
            [(0, 0)] + offsets + [(0, 0)], [True] + [False] * n + [True], [None] + word_ids + [None],
        )

    def encode_plain(self, texts: list[str]) -> list[list[int]]:
        """Word-piece ids of many texts, without special tokens (for building training data fast)."""
        return [e.ids for e in self._tokenizer.encode_batch([_TYPED_MASK.sub("[MASK]", t) for t in texts], add_special_tokens=False)]

    def _pieces(self, text: str):
        return self._tokenizer.encode(_TYPED_MASK.sub("[MASK]", text), add_special_tokens=False)

    def _assemble(self, sentences, keep: list[int], truncated: int) -> Encoding:
        ids, types, tokens, offsets, special, words = [self.cls_id], [0], ["[CLS]"], [(0, 0)], [True], [None]
        for segment, (pieces, n) in enumerate(zip(sentences, keep)):
            ids += pieces.ids[:n] + [self.sep_id]
            tokens += pieces.tokens[:n] + ["[SEP]"]
            offsets += [tuple(o) for o in pieces.offsets[:n]] + [(0, 0)]
            words += pieces.word_ids[:n] + [None]
            special += [False] * n + [True]
            types += [segment] * (n + 1)
        return Encoding(ids, types, tokens, offsets, special, words, truncated)

    def _special_id(self, token: str) -> int:
        token_id = self._tokenizer.token_to_id(token)
        if token_id is None:
            raise ModelNotFoundError(f"the vocabulary has no {token} token; is this a BERT vocabulary?")
        return token_id


def _fit(sentences, budget: int) -> list[int]:
    """How many pieces of each sentence to keep, cut as Hugging Face's tokenizers cut "longest_first":
    the shorter sentence (sentence A on a tie) keeps up to half the budget, the longer one the rest."""
    lengths = [len(s.ids) for s in sentences]
    if sum(lengths) <= budget:
        return lengths
    if len(lengths) == 1:
        return [budget]
    a, b = lengths
    if a <= b:
        keep_a = min(a, budget // 2)
        return [keep_a, budget - keep_a]
    keep_b = min(b, budget // 2)
    return [budget - keep_b, keep_b]


def _reads_lowercase(folder: Path) -> bool:
    config_file = folder / "tokenizer_config.json"
    if config_file.is_file():
        return bool(json.loads(config_file.read_text()).get("do_lower_case", True))
    return "cased" not in folder.name or "uncased" in folder.name
