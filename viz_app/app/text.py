"""Text for the pages: token lists back into readable text, user text made literal in Markdown, token chip labels.
Plain Python: no Streamlit, no analyses."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING, Callable, Mapping, Sequence

if TYPE_CHECKING:  # for the annotations only: forward.py imports torch
    from bert.pieces import PieceStyle
    from viz_app.app.forward import ForwardResult

_NO_SPACE_BEFORE = set(".,!?;:)]}'%")
_NO_SPACE_AFTER = set("([{$")
_MARKDOWN_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>#+\-.!|~$:=^&\"'])")


# GitHub's Markdown turns a bare address into a link even once its characters are escaped (Streamlit's renderer finds
# "http://...", "www...." and "name@host.org" in the text after escapes are read): a word joiner (U+2060, invisible,
# no width) after each "://"'s colon, "www" and "@" keeps them apart
_AUTOLINK_STARTS = re.compile(r"(:(?=//)|(?i:www)(?=\.)|@)")
WORD_JOINER = "\u2060"


def escape_markdown(text: str) -> str:
    """Show user text literally inside Markdown (pill labels, captions): no formatting, links (bare addresses
    included), HTML or LaTeX."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _AUTOLINK_STARTS.sub(r"\1" + WORD_JOINER, text))


def without_images(markdown: str) -> str:
    """A lesson's Markdown with its images made literal text ("![" escaped: `![alt](address)` becomes the text "!"
    and a link): a browser showing the lesson fetches nothing from an address the lesson file names. Links stay."""
    return markdown.replace("![", "\\![")


def chip_labels(tokens: list[str], positions: list[int]) -> dict[int, str]:
    """Unique Markdown-safe labels for token chips: repeated tokens get invisible zero-width suffixes,
    because a pills widget tells its options apart by label."""
    labels, seen = {}, {}
    for position in positions:
        token = tokens[position]
        seen[token] = seen.get(token, 0) + 1
        labels[position] = escape_markdown(token) + "\u200b" * (seen[token] - 1)
    return labels


def detokenize(pieces: list[tuple[str, str, bool]]) -> str:
    """[(raw text, rendered text, is_continuation)] -> rendered text. Spacing is decided on the raw text:
    "##" pieces join the previous token, punctuation hugs its word."""
    out, previous = "", ""
    for raw, rendered, continues in pieces:
        glue = continues or not out or raw[:1] in _NO_SPACE_BEFORE or previous[-1:] in _NO_SPACE_AFTER
        out += ("" if glue else " ") + rendered
        previous = raw
    return out


def filled_in_sentence(result: ForwardResult, escape: Callable[[str], str] = lambda s: s) -> str:
    """The input with every [MASK] replaced by the model's first guess in bold (Markdown); see `marked_sentence`."""
    return marked_sentence(result.tokens, result.special, result.pieces, {m.position: m.tokens[0] for m in result.masks},
                           escape)


def marked_sentence(tokens: Sequence[str], special: Sequence[bool], pieces: PieceStyle, words: Mapping[int, str],
                    escape: Callable[[str], str] = lambda s: s) -> str:
    """The input's tokens as text, with `words` ({position: token}) in place of those positions' tokens, in bold
    (Markdown); the separator between two sentences ([SEP], RoBERTa's </s></s>) shown as " / ". Pieces are joined as
    their scheme marks them ("##s", "Ġword": bert/pieces.py). `escape` makes each token literal in Markdown."""
    out, after_separator = [], False
    last = len(tokens) - 1
    for position, token in enumerate(tokens):
        if special[position]:  # [CLS]/<s> and the last [SEP] are left out
            if 0 < position < last and not after_separator:
                out.append(("/", "/", False))
            after_separator = 0 < position < last
            continue
        replacement = words.get(position)
        word = replacement if replacement is not None else token
        continues = pieces.is_continuation(word) and not after_separator
        raw = pieces.text(word)
        out.append((raw, f"**{escape(raw)}**" if replacement is not None else escape(raw), continues))
        after_separator = False
    return detokenize(out)
