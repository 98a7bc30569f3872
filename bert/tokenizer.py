"""Tokenization (on the `tokenizers` library) that keeps what a display needs: tokens, offsets, segments, word ids.

Each checkpoint keeps its own tokenizer: WordPiece (BERT, DistilBERT, ELECTRA), byte-level BPE (RoBERTa),
SentencePiece (ALBERT, DeBERTa-v3, XLM-RoBERTa) or single characters (ESM-2's amino acids), read by `load_tokenizer(folder)`. Special tokens are known by role (`cls_id`, `sep_id`,
`mask_id`, `pad_id`, `unk_id`: "<s>", "</s>", "<mask>", "<pad>", "<unk>" for RoBERTa), and "[MASK]" typed in any
case means the model's own mask token. bert/pieces.py says how each scheme writes its pieces.
"""
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
from tokenizers import AddedToken, Tokenizer, processors
from tokenizers.implementations import BertWordPieceTokenizer, ByteLevelBPETokenizer

from .errors import InputTooLongError, InvalidInputError, ModelNotFoundError
from .families.registry import FAMILIES
from .character_vocab import character_tokenizer
from .pieces import CHARACTERS, WORDPIECE, PieceStyle, byte_level_bpe, sentencepiece
from .sentencepiece_model import unigram_tokenizer

_TYPED_MASK = re.compile(r"\[mask\]", re.IGNORECASE)  # "[mask]" typed in any case means the model's mask token
TYPED_MASK = "[MASK]"  # how users write the mask token, whatever the model's own is

ROLES = ("cls", "sep", "mask", "pad", "unk")  # cls: first token (RoBERTa's bos); sep: ends each sentence (its eos)
BERT_SPECIAL_TOKENS = {"cls": "[CLS]", "sep": "[SEP]", "mask": "[MASK]", "pad": "[PAD]", "unk": "[UNK]"}
# What each family's tokenizer uses where its folder does not say: its module's special_tokens (bert/families/).
# tokenizer_config.json / special_tokens_map.json keys for each role, the first one present wins
_ROLE_KEYS = {"cls": ("cls_token", "bos_token"), "sep": ("sep_token", "eos_token"), "mask": ("mask_token",),
              "pad": ("pad_token",), "unk": ("unk_token",)}


@dataclass(frozen=True)
class Encoding:
    """One input, as the model sees it: [CLS] A [SEP] (B [SEP]); RoBERTa's <s> A </s> (</s> B </s>)."""

    input_ids: list[int]
    token_type_ids: list[int]  # 0 for [CLS], sentence A and its [SEP]; 1 for sentence B and its [SEP] (all 0 where the model has one token type)
    tokens: list[str]
    offsets: list[tuple[int, int]]  # character span in its own sentence; (0, 0) for special tokens
    special: list[bool]  # True for [CLS] and [SEP]
    word_ids: list[int | None]  # which word of its sentence a token belongs to; None for special tokens
    truncated: int = 0  # how many tokens were cut to fit (only when truncate=True was asked for)
    sentence_ids: list[int] | None = None  # 0 for sentence A's tokens, 1 for B's; None: as token_type_ids
    pieces: PieceStyle = WORDPIECE  # how the tokenizer writes its pieces (bert/pieces.py) and its mask token

    @property
    def sentences(self) -> list[int]:
        """Which sentence each token belongs to (0: A with [CLS] and its [SEP], 1: B). The same as
        token_type_ids, except for models with one token type (RoBERTa, DistilBERT), whose types are all 0."""
        return self.token_type_ids if self.sentence_ids is None else self.sentence_ids

    def __len__(self) -> int:
        return len(self.input_ids)

    def tensors(self, device: torch.device | str | None = None) -> tuple[torch.Tensor, torch.Tensor]:
        """(input_ids [1, seq], token_type_ids [1, seq]) ready for the model: pass its device
        (`bert.devices.model_device(model)`); None means PyTorch's default device."""
        return torch.tensor([self.input_ids], device=device), torch.tensor([self.token_type_ids], device=device)

    def with_masks(self, positions: Iterable[int], mask_id: int) -> "Encoding":
        """The same input with the tokens at `positions` replaced by the mask token (special tokens cannot be masked)."""
        ids = list(self.input_ids)
        tokens = list(self.tokens)
        for position in positions:
            if not 0 <= position < len(ids) or self.special[position]:
                raise InvalidInputError(f"position {position} is not a maskable token of this {len(ids)}-token input")
            ids[position], tokens[position] = mask_id, self.pieces.mask_token
        return dataclasses.replace(self, input_ids=ids, tokens=tokens)

    def first_sentence(self) -> "Encoding":
        """[CLS] A [SEP]: this input without its second sentence (the same input when it has none). `truncated`
        stays the whole input's count."""
        end = self.sentences.index(1) if 1 in self.sentences else len(self)
        return Encoding(self.input_ids[:end], self.token_type_ids[:end], self.tokens[:end], self.offsets[:end],
                        self.special[:end], self.word_ids[:end], self.truncated,
                        None if self.sentence_ids is None else self.sentence_ids[:end], self.pieces)

    def word_spans(self) -> dict[int, tuple[int, int]]:
        """word id -> (start, end) character span of the whole word its pieces make, in sentence A (word ids
        start again in sentence B, so a pair's B words are left out)."""
        spans: dict[int, tuple[int, int]] = {}
        for word_id, segment, (start, end) in zip(self.word_ids, self.sentences, self.offsets):
            if word_id is not None and segment == 0:
                first, last = spans.get(word_id, (start, end))
                spans[word_id] = (min(first, start), max(last, end))
        return spans

    def is_continuation(self, index: int) -> bool:
        """True for a subword piece that continues the previous token's word: "##ing" in WordPiece; in byte-level
        BPE and SentencePiece, a piece of the same word (word id) as the token before it."""
        if self.pieces.continuation_prefix:
            return self.tokens[index].startswith(self.pieces.continuation_prefix)
        word = self.word_ids[index]
        return (index > 0 and word is not None and self.word_ids[index - 1] == word
                and self.sentences[index - 1] == self.sentences[index])

    def display_tokens(self) -> list[str]:
        """The tokens as a reader should see them, in their scheme's own way ("##ing", "Ġcafé", "▁play")."""
        return [self.pieces.display(token) for token in self.tokens]


class BertTokenizer:
    """A checkpoint's tokenizer (any family) with BERT's interface: `encode` gives an `Encoding`, the special tokens
    are known by role (`cls_id` ... `unk_id`, and their strings `cls_token` ...), `model_max_length` is the longest input
    the model takes and `pieces` says how its scheme writes word pieces. Build one with `load_tokenizer(folder)`."""

    def __init__(self, tokenizer: Tokenizer, model_max_length: int = 512, special_tokens: dict[str, str] | None = None,
                 token_types: int = 2):
        """model_max_length: the longest input its model reads (the loaders set it from config.json), what `encode`
        allows when given no max_length, as Hugging Face's tokenizers; special_tokens: role -> token (BERT's by
        default); token_types: how many token types the model has (1: every token_type_id is 0, as RoBERTa and
        DistilBERT take them)."""
        tokenizer.no_truncation()  # we cut explicitly, never silently
        tokenizer.no_padding()
        self._tokenizer = tokenizer
        self.special_tokens = dict(BERT_SPECIAL_TOKENS if special_tokens is None else special_tokens)
        for role in ROLES:
            setattr(self, f"{role}_token", self.special_tokens[role])
            setattr(self, f"{role}_id", self._special_id(role))
        self.model_max_length = model_max_length
        self.token_types = token_types
        self.pieces = _piece_style(tokenizer, self.special_tokens["mask"])
        single, pair = (len(tokenizer.encode("", *rest).ids) for rest in ((), ("",)))
        # separators between the sentences: [SEP] in BERT, </s></s> in RoBERTa (read from the tokenizer's template)
        self.pair_separators = max(1, pair - single) if single else 1

    @classmethod
    def from_folder(cls, folder: str | Path, model_max_length: int | None = None) -> "BertTokenizer":
        """The folder's tokenizer: `load_tokenizer(folder)`; model_max_length (when given) replaces what the folder's
        config.json says."""
        tokenizer = load_tokenizer(folder)
        if model_max_length is not None:
            tokenizer.model_max_length = model_max_length
        return tokenizer

    @classmethod
    def from_vocab(cls, vocab_file: str | Path, lowercase: bool = True, model_max_length: int = 512) -> "BertTokenizer":
        wordpiece = BertWordPieceTokenizer(str(vocab_file), lowercase=lowercase, strip_accents=None if lowercase else False)
        return cls(wordpiece._tokenizer, model_max_length)

    def save(self, folder: str | Path) -> None:
        """WordPiece: vocab.txt (one token per line, in id order) and tokenizer_config.json (lower-casing), as BERT
        folders have. Other schemes: tokenizer.json and tokenizer_config.json with the special tokens by role."""
        folder = Path(folder)
        roles = {f"{role}_token": token for role, token in self.special_tokens.items()}
        if self.pieces.scheme != "wordpiece":
            self._tokenizer.save(str(folder / "tokenizer.json"))
            (folder / "tokenizer_config.json").write_text(json.dumps(roles, indent=2))
            return
        vocab = sorted(self._tokenizer.get_vocab().items(), key=lambda item: item[1])
        (folder / "vocab.txt").write_text("".join(token + "\n" for token, _ in vocab), encoding="utf-8")
        lowercase = bool(getattr(self._tokenizer.normalizer, "lowercase", True))
        # the roles always: a folder's family (config.json) would otherwise supply its own defaults on reading
        config = {"do_lower_case": lowercase, "tokenizer_class": "BertTokenizer"} | roles
        (folder / "tokenizer_config.json").write_text(json.dumps(config, indent=2))

    @property
    def vocab_size(self) -> int:
        return self._tokenizer.get_vocab_size()

    @functools.cached_property
    def continuation_mask(self) -> torch.Tensor:
        """bool [vocab]: True for word pieces that continue a word ("##ing"; "ing" without RoBERTa's "Ġ")."""
        special = set(self.special_tokens.values())
        return torch.tensor([(token := self.id_to_token(i)) not in special and self.pieces.is_continuation(token)
                             for i in range(self.vocab_size)], device="cpu")

    def display(self, token: str) -> str:
        """A piece as a reader should see it, its scheme's marker kept ("##ing", "Ġcafé", "▁play")."""
        return self.pieces.display(token)

    def starts_word(self, token: str) -> bool:
        """Does this piece, on its own, begin a word? (Inside an input, `Encoding.is_continuation` knows better.)"""
        return not self.pieces.is_continuation(token)

    def mask_positions(self, encoding: Encoding) -> list[int]:
        """Where this input has the mask token (typed, or put there by `Encoding.with_masks`), in order."""
        return [i for i, token_id in enumerate(encoding.input_ids) if token_id == self.mask_id]

    def id_to_token(self, token_id: int) -> str:
        return self._tokenizer.id_to_token(token_id)

    def token_to_id(self, token: str) -> int | None:
        return self._tokenizer.token_to_id(token)

    def one_token_id(self, word: str | int, role: str = "answer") -> int:
        """The vocabulary id of a word the model knows whole ("he"; RoBERTa's "Ġhe", as inside a sentence), or an
        id itself (checked): where the library asks for a word (an answer, a foil), words and ids are accepted
        alike. Else InvalidInputError naming `role`."""
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
        """How the tokenizer splits one word: "kroxldyphivc" -> ['k', '##ro', '##x', '##ld', '##yp', '##hi', '##vc'].
        Byte-level BPE splits it as it would after a space, inside a sentence ("Ġ..."). For users exploring the
        vocabulary (the library itself encodes whole sentences with `encode`)."""
        text = " " + word if self.pieces.byte_level and not word.startswith(" ") else word
        return self._tokenizer.encode(text, add_special_tokens=False).tokens

    def encode(self, text: str, pair: str | None = None, max_length: int | None = None, truncate: bool = False) -> Encoding:
        """[CLS] text [SEP] (pair [SEP]), in the model's own tokens (RoBERTa: <s> text </s></s> pair </s>).
        max_length: the model's longest input (model_max_length) when None. Too long: InputTooLongError, or with truncate=True the
        longer sentence loses tokens from its end and `Encoding.truncated` says how many."""
        if not isinstance(text, str) or (pair is not None and not isinstance(pair, str)):
            raise InvalidInputError("text (and pair, if given) must be strings")
        max_length = self.model_max_length if max_length is None else max_length
        sentences = [self._pieces(text)] + ([self._pieces(pair)] if pair is not None else [])
        specials = 2 if pair is None else 2 + self.pair_separators
        budget = max_length - specials  # room left after the special tokens
        needed = sum(len(s.ids) for s in sentences)
        if needed > budget and not truncate:
            raise InputTooLongError(needed + specials, max_length)
        if budget < 0:
            raise InvalidInputError(f"max_length {max_length} leaves no room for the {specials} special tokens")
        keep = _fit(sentences, budget)
        return self._assemble(sentences, keep, truncated=needed - sum(keep))

    def encode_words(self, words: list[str], max_length: int | None = None) -> Encoding:
        """[CLS] pieces of each word [SEP] for text already split into words (a treebank's): `word_ids` give each
        piece's word index; a word the tokenizer turns into nothing (e.g. a lone control character) becomes [UNK],
        so every word has a piece. Offsets are in the words joined by single spaces. WordPiece splits each word on
        its own; byte-level BPE and SentencePiece split the joined text (so "Ġ" marks the words after the first, as
        in a typed sentence) and each piece belongs to the word its characters are in. Too long (max_length None:
        model_max_length): InputTooLongError."""
        max_length = self.model_max_length if max_length is None else max_length
        if self.pieces.continuation_prefix:
            pieces = self._tokenizer.encode(words, is_pretokenized=True, add_special_tokens=False)
            piece_words, piece_offsets = pieces.word_ids, pieces.offsets
            starts = [0, *itertools.accumulate(len(w) + 1 for w in words)]  # each word's offset in the joined text
            piece_offsets = [(starts[w] + a, starts[w] + b) for w, (a, b) in zip(piece_words, piece_offsets)]
        else:
            joined = " ".join(words)
            pieces = self._tokenizer.encode(joined, add_special_tokens=False)
            word_at = _word_at_each_character(words)
            piece_words = [word_at[min(start, len(joined))] for start, _ in pieces.offsets]
            piece_offsets = pieces.offsets
        ids, tokens, word_ids, offsets = [], [], [], []
        by_word: dict[int, list[int]] = {}
        for index, word in enumerate(piece_words):
            by_word.setdefault(word, []).append(index)
        starts = [0, *itertools.accumulate(len(w) + 1 for w in words)]
        for word in range(len(words)):
            for index in by_word.get(word, []):
                ids.append(pieces.ids[index])
                tokens.append(self._tokenizer.id_to_token(pieces.ids[index]))
                offsets.append(tuple(piece_offsets[index]))
                word_ids.append(word)
            if word not in by_word:
                ids.append(self.unk_id)
                tokens.append(self.unk_token)
                offsets.append((starts[word], starts[word] + len(words[word])))
                word_ids.append(word)
        if len(ids) + 2 > max_length:
            raise InputTooLongError(len(ids) + 2, max_length)
        n = len(ids)
        return Encoding(
            [self.cls_id] + ids + [self.sep_id], [0] * (n + 2), [self.cls_token] + tokens + [self.sep_token],
            [(0, 0)] + offsets + [(0, 0)], [True] + [False] * n + [True], [None] + word_ids + [None], pieces=self.pieces,
        )

    def encode_plain(self, texts: list[str]) -> list[list[int]]:
        """Word-piece ids of many texts, without special tokens (for building training data fast)."""
        return [e.ids for e in self._tokenizer.encode_batch([self._typed_masks(t)[0] for t in texts], add_special_tokens=False)]

    def _typed_masks(self, text: str) -> tuple[str, list[tuple[int, int]]]:
        """The text with each typed "[MASK]" (any case) written as the model's mask token, and where each stands
        in the new text as (start, length difference), to map offsets back when the lengths differ."""
        if len(self.mask_token) == len(TYPED_MASK):
            return _TYPED_MASK.sub(self.mask_token, text), []
        shifts, parts, last, moved = [], [], 0, 0
        for match in _TYPED_MASK.finditer(text):
            parts += [text[last:match.start()], self.mask_token]
            shifts.append((match.start() + moved, len(self.mask_token) - len(TYPED_MASK)))
            moved += len(self.mask_token) - len(TYPED_MASK)
            last = match.end()
        return "".join(parts) + text[last:], shifts

    def _pieces(self, text: str):
        typed, shifts = self._typed_masks(text)
        pieces = self._tokenizer.encode(typed, add_special_tokens=False)
        offsets = [tuple(o) for o in pieces.offsets]
        if shifts:
            offsets = [(_unshift(start, shifts, self.mask_token), _unshift(end, shifts, self.mask_token)) for start, end in offsets]
        tokens = [self._tokenizer.id_to_token(i) for i in pieces.ids]  # "<mask>", not the " <mask>" it matched
        return _Pieces(pieces.ids, tokens, offsets, pieces.word_ids)

    def _assemble(self, sentences, keep: list[int], truncated: int) -> Encoding:
        ids, tokens, offsets, special, words, segments = [self.cls_id], [self.cls_token], [(0, 0)], [True], [None], [0]
        for segment, (pieces, n) in enumerate(zip(sentences, keep)):
            leading = self.pair_separators - 1 if segment == 1 else 0  # RoBERTa's second </s> opens sentence B
            ids += [self.sep_id] * leading + pieces.ids[:n] + [self.sep_id]
            tokens += [self.sep_token] * leading + pieces.tokens[:n] + [self.sep_token]
            offsets += [(0, 0)] * leading + list(pieces.offsets[:n]) + [(0, 0)]
            words += [None] * leading + pieces.word_ids[:n] + [None]
            special += [True] * leading + [False] * n + [True]
            segments += [segment] * (leading + n + 1)
        types = segments if self.token_types > 1 else [0] * len(ids)
        return Encoding(ids, types, tokens, offsets, special, words, truncated,
                        None if types is segments else segments, self.pieces)

    def _special_id(self, role: str) -> int:
        token = self.special_tokens[role]
        token_id = self._tokenizer.token_to_id(token)
        if token_id is None:
            raise ModelNotFoundError(f"the vocabulary has no {role} token {token!r}; does the tokenizer match the model?")
        return token_id


@dataclass(frozen=True)
class _Pieces:
    """One sentence's word pieces, without special tokens (offsets in the text as typed)."""

    ids: list[int]
    tokens: list[str]
    offsets: list[tuple[int, int]]
    word_ids: list[int | None]


def load_tokenizer(folder: str | Path, config: dict | None = None) -> BertTokenizer:
    """The tokenizer of a Hugging Face folder, whatever its family: tokenizer.json when the folder has one, else
    vocab.txt (WordPiece: BERT, DistilBERT, ELECTRA), vocab.json + merges.txt (byte-level BPE: RoBERTa) or
    spm.model (DeBERTa-v3's SentencePiece unigram model, lower-cased when tokenizer_config.json's do_lower_case
    says so). An ALBERT folder with only spiece.model is refused with how to convert it (ALBERT's hub folders have
    tokenizer.json).

    config: the model's config.json as a dict (read from the folder when None). It gives the family (model_type),
    the longest input (max_position_embeddings; RoBERTa's positions start after its padding index, so 2 fewer)
    and the number of token types. Special tokens by role come from special_tokens_map.json or
    tokenizer_config.json, else the family's defaults."""
    folder = Path(folder)
    config = _read_json(folder / "config.json") if config is None else config
    tokenizer_config = _read_json(folder / "tokenizer_config.json")
    model_type = config.get("model_type") or _family_from_class(tokenizer_config.get("tokenizer_class", ""))
    special_tokens = _special_tokens(model_type, tokenizer_config, _read_json(folder / "special_tokens_map.json"))
    tokenizer = _read_tokenizer(folder, model_type, special_tokens, tokenizer_config)
    family = FAMILIES.get(model_type or "bert")
    token_types = config.get("type_vocab_size", family.token_types if family is not None else 1)
    longest = family.longest_input(config) if family is not None else int(config.get("max_position_embeddings", 512))
    return BertTokenizer(tokenizer, longest, special_tokens, token_types)


def _read_tokenizer(folder: Path, model_type: str | None, special_tokens: dict[str, str], tokenizer_config: dict) -> Tokenizer:
    if (folder / "tokenizer.json").is_file():
        return Tokenizer.from_file(str(folder / "tokenizer.json"))
    if (folder / "vocab.txt").is_file() and getattr(FAMILIES.get(model_type or "bert"), "characters", False):
        return character_tokenizer(folder / "vocab.txt", special_tokens)  # ESM's: one amino acid per line
    if (folder / "vocab.txt").is_file():
        lowercase = _reads_lowercase(folder)
        return BertWordPieceTokenizer(str(folder / "vocab.txt"), lowercase=lowercase,
                                      strip_accents=None if lowercase else False)._tokenizer
    if (folder / "vocab.json").is_file() and (folder / "merges.txt").is_file():
        bpe = ByteLevelBPETokenizer(str(folder / "vocab.json"), str(folder / "merges.txt"),
                                    add_prefix_space=bool(tokenizer_config.get("add_prefix_space", False)),
                                    trim_offsets=bool(tokenizer_config.get("trim_offsets", True)))
        # RoBERTa's mask token takes the space before it ("the <mask>" -> "Ġthe", "<mask>"), as transformers sets it
        bpe.add_special_tokens([AddedToken(token, special=True, normalized=False, lstrip=role == "mask")
                                for role, token in special_tokens.items()])
        cls, sep = (special_tokens[role] for role in ("cls", "sep"))
        bpe._tokenizer.post_processor = processors.RobertaProcessing(  # <s> A </s></s> B </s>, as transformers builds it
            (sep, bpe.token_to_id(sep)), (cls, bpe.token_to_id(cls)), trim_offsets=bool(tokenizer_config.get("trim_offsets", True)),
            add_prefix_space=bool(tokenizer_config.get("add_prefix_space", False)))
        return bpe._tokenizer
    if (folder / "spm.model").is_file():  # DeBERTa-v3's SentencePiece unigram model (bert/sentencepiece_model.py)
        return unigram_tokenizer(folder / "spm.model", special_tokens, bool(tokenizer_config.get("do_lower_case", False)))
    if (folder / "spiece.model").is_file():  # ALBERT's: its hub folders have tokenizer.json
        raise ModelNotFoundError(
            f"{folder} has only ALBERT's SentencePiece model (spiece.model): convert it once to tokenizer.json with "
            f"transformers (AutoTokenizer.from_pretrained(folder).save_pretrained(folder)), or download the model "
            f"again (its hub folder has tokenizer.json)")
    raise ModelNotFoundError(f"{folder} has no tokenizer: neither tokenizer.json nor vocab.txt nor vocab.json with merges.txt")


def _special_tokens(model_type: str | None, tokenizer_config: dict, special_map: dict) -> dict[str, str]:
    family = FAMILIES.get(model_type or "bert")
    tokens = dict(family.special_tokens if family is not None else BERT_SPECIAL_TOKENS)
    for role, keys in _ROLE_KEYS.items():
        for source in (special_map, tokenizer_config):
            value = next((source[key] for key in keys if source.get(key)), None)
            if value is not None:
                tokens[role] = value["content"] if isinstance(value, dict) else str(value)
                break
    return tokens


def _family_from_class(tokenizer_class: str) -> str | None:
    name = tokenizer_class.lower().removesuffix("fast").removesuffix("tokenizer")
    return next((family.model_type for family in FAMILIES.values() if family.class_prefix.lower() == name), None)


def _piece_style(tokenizer: Tokenizer, mask_token: str) -> PieceStyle:
    description = json.loads(tokenizer.to_str())
    kind = (description.get("model") or {}).get("type")
    if kind == "WordPiece":
        return dataclasses.replace(WORDPIECE, continuation_prefix=description["model"].get("continuing_subword_prefix") or "##",
                                   mask_token=mask_token)
    if "ByteLevel" in json.dumps(description.get("pre_tokenizer")):
        return byte_level_bpe(mask_token)
    # SentencePiece's "▁" for a space: a unigram model, a Metaspace pre-tokenizer, or (Gemma's BPE) a normalizer writing it
    spaces = json.dumps(description.get("normalizer"), ensure_ascii=False)
    if kind == "Unigram" or "Metaspace" in json.dumps(description.get("pre_tokenizer")) or "▁" in spaces:
        return sentencepiece(mask_token)
    if kind == "WordLevel":  # one character per piece (ESM's amino acids): no marker
        return dataclasses.replace(CHARACTERS, mask_token=mask_token)
    return dataclasses.replace(WORDPIECE, mask_token=mask_token)


def _word_at_each_character(words: list[str]) -> list[int]:
    """For the words joined by single spaces: the word at each character, a space counting as the next word's
    (where "Ġ" and "▁" pieces begin); one more entry past the end, for the last word."""
    word_at: list[int] = []
    for index, word in enumerate(words):
        word_at += [index] * (len(word) + (1 if index else 0))
    return word_at + [max(len(words) - 1, 0)]


def _unshift(position: int, shifts: list[tuple[int, int]], mask_token: str) -> int:
    """A position in the text with mask tokens written in, as a position in the text as typed."""
    moved = 0
    for start, difference in shifts:
        if position >= start + len(mask_token):
            moved += difference
        elif position > start:
            return start - moved + min(position - start, len(TYPED_MASK))
    return position - moved


def _read_json(path: Path) -> dict:
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise ModelNotFoundError(f"{path} is not valid JSON: {error}") from error
    return value if isinstance(value, dict) else {}


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
