"""A SentencePiece unigram model file (DeBERTa-v3's spm.model; Kudo & Richardson 2018) as a `tokenizers` Tokenizer.

    tokenizer = unigram_tokenizer(folder / "spm.model", special_tokens, lowercase=False)

The model file is a protobuf: its pieces with their log-probabilities (scores), which piece stands for unknown
text, and the normalisation it was trained with (a precompiled character map, NFKC for DeBERTa-v3). The
tokenizer built here reads text as SentencePiece does: the character map, extra spaces removed, each word marked
with a leading "▁", the most probable split into pieces (Kudo 2018's unigram language model), then
[CLS] A [SEP] (B [SEP]) with token types 0 for A and 1 for B (He et al. 2023, DeBERTa-v3). Special tokens the
model file lacks (DeBERTa-v3's [MASK]) are added after its last piece, as the hub's checkpoints number them.
Reading the protobuf needs the `sentencepiece` package (its own `sentencepiece_model_pb2` module).
"""
from __future__ import annotations

import re
from pathlib import Path

from tokenizers import AddedToken, Regex, Tokenizer, decoders, normalizers, pre_tokenizers, processors
from tokenizers.models import Unigram

from .errors import ModelNotFoundError

WORD_START = "▁"  # SentencePiece's mark of a word start (U+2581), standing for the space before a word
# The piece types of sentencepiece_model.proto (ModelProto.SentencePiece.Type)
CONTROL, USER_DEFINED = 3, 4


def read_model_proto(path: str | Path):
    """The parsed ModelProto of a SentencePiece .model file (ModelNotFoundError when it cannot be read)."""
    try:
        from sentencepiece import sentencepiece_model_pb2
    except ImportError as error:
        raise ModelNotFoundError(f"reading {path} needs the sentencepiece package: pip install sentencepiece") from error
    proto = sentencepiece_model_pb2.ModelProto()
    try:
        proto.ParseFromString(Path(path).read_bytes())
    except Exception as error:  # protobuf's DecodeError, or a file that cannot be read
        raise ModelNotFoundError(f"{path} is not a readable SentencePiece model ({type(error).__name__}: {error})") from error
    if not proto.pieces:
        raise ModelNotFoundError(f"{path} is not a SentencePiece model: it holds no pieces")
    return proto


def unigram_tokenizer(path: str | Path, special_tokens: dict[str, str], lowercase: bool = False) -> Tokenizer:
    """The tokenizer of a SentencePiece unigram model file. special_tokens: role -> token ("cls", "sep", "mask",
    "pad", "unk"); each is matched whole in the text, and one the file lacks gets the next id. lowercase: lower-case
    the text first (tokenizer_config.json's do_lower_case; False for DeBERTa-v3)."""
    proto = read_model_proto(path)
    if proto.trainer_spec.model_type != 1:  # TrainerSpec.ModelType UNIGRAM
        raise ModelNotFoundError(f"{path} is not a unigram SentencePiece model (model type {proto.trainer_spec.model_type}); "
                                 f"only unigram models are read")
    vocab = [(piece.piece, piece.score) for piece in proto.pieces]
    known = {piece for piece, _ in vocab}
    vocab += [(token, 0.0) for token in dict.fromkeys(special_tokens.values()) if token not in known]
    tokenizer = Tokenizer(Unigram(vocab, unk_id=proto.trainer_spec.unk_id, byte_fallback=False))

    steps = [normalizers.Lowercase()] if lowercase else []
    charsmap = proto.normalizer_spec.precompiled_charsmap
    if charsmap:  # the Unicode normalisation the model was trained with (nmt_nfkc: NFKC, control characters dropped)
        steps.append(normalizers.Precompiled(charsmap))
    if proto.normalizer_spec.remove_extra_whitespaces:  # no leading or trailing spaces, one space between words
        steps += [normalizers.Replace(Regex(r"\A +| +\z"), ""), normalizers.Replace(Regex(" {2,}"), " ")]
    tokenizer.normalizer = normalizers.Sequence(steps)
    # every word (and every stretch of text between special tokens) starts with "▁"; SentencePiece keeps a
    # user-defined piece whole wherever it stands, so it is cut out of its word
    steps = [pre_tokenizers.Metaspace(replacement=WORD_START, prepend_scheme="always", split=True)]
    user_defined = sorted((piece.piece for piece in proto.pieces if piece.type == USER_DEFINED), key=len, reverse=True)
    if user_defined:
        steps.append(pre_tokenizers.Split(Regex("|".join(map(re.escape, user_defined))), behavior="isolated"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(steps)
    tokenizer.decoder = decoders.Metaspace(replacement=WORD_START, prepend_scheme="always", split=True)

    control = [piece.piece for piece in proto.pieces if piece.type == CONTROL]
    tokenizer.add_special_tokens([AddedToken(token, special=True, normalized=False)
                                  for token in dict.fromkeys([*control, *special_tokens.values()])])
    cls, sep = special_tokens["cls"], special_tokens["sep"]
    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{cls}:0 $A:0 {sep}:0", pair=f"{cls}:0 $A:0 {sep}:0 $B:1 {sep}:1",
        special_tokens=[(cls, tokenizer.token_to_id(cls)), (sep, tokenizer.token_to_id(sep))])
    return tokenizer
