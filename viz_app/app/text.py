"""Text for the pages: the app's own Markdown (`Markdown`, `markdown`) and everything else made literal in it, token
lists back into readable text, token chip labels. Plain Python: no Streamlit, no analyses.

Every str the app shows is plain text unless it is `Markdown`: a visitor's text (a widget's value, a link's
parameter, an upload, a lesson file) and an error's message (the library's errors quote the words they were given)
are str, so they are escaped wherever they are shown. The app's Markdown is written as a literal template in the
code and filled with `markdown`, which escapes each value that is not Markdown itself (as Jinja's autoescape fills
a template: MarkupSafe's `Markup`). viz_app/app/show.py hands it to Streamlit; tests/app/app/test_visitor_text.py
reads every call that shows text and fails on one whose text is not a literal."""
from __future__ import annotations

import numbers
import re
import string
from typing import TYPE_CHECKING, Iterable, Mapping, Sequence

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


class Markdown(str):
    """Markdown the app wrote, shown as Markdown; any other str is shown as text. Made by `markdown` from a literal
    template, or by `without_images` from a lesson's Markdown; never from a visitor's text as it is."""

    __slots__ = ()


class _Filling(string.Formatter):
    """Fills a template: Markdown as it is, numbers by their format spec, anything else (a str, an error) escaped."""

    def format_field(self, value, format_spec: str) -> str:
        if isinstance(value, Markdown):
            return str.__format__(value, format_spec)
        if isinstance(value, numbers.Number) and not isinstance(value, bool):
            return format(value, format_spec)
        return escape_markdown(format(str(value) if isinstance(value, BaseException) else value, format_spec))


_FILLING = _Filling()


def markdown(template: str, /, *values, **named) -> Markdown:
    """The app's Markdown `template` (a literal: "Over {:,} tokens of {}.") filled with `values`, each shown as it is
    only if it is Markdown or a number: a str, an error or any other object is made literal text (`escape_markdown`).
    Write "{{" and "}}" for braces."""
    return Markdown(_FILLING.vformat(template, values, named))


def joined(separator: str, parts: Iterable[Markdown]) -> Markdown:
    """Markdown parts (each made by `markdown`) joined by `separator` (the app's own: " · ", "\\n"): a list, a line
    of figures. A part that is not Markdown is refused (TypeError): fill a template with it instead."""
    parts = list(parts)
    strays = [part for part in parts if not isinstance(part, Markdown)]
    if strays:
        raise TypeError(f"joined takes Markdown parts (made by markdown()), not {type(strays[0]).__name__}")
    return Markdown(separator.join(parts))


_ADDRESS = re.compile(r"https?://[\w.:\-]+(?:/[\w./?=&%\-]*)?")


def address(url: str) -> Markdown:
    """A web address the app made (a class's link) as a link the reader can click and copy: "<http://host:8501/x>";
    anything else than an address of letters, digits and ./:?=&%- is shown as text."""
    return Markdown(f"<{url}>") if _ADDRESS.fullmatch(url) else markdown("{}", url)


def without_images(lesson_text: str) -> Markdown:
    """A lesson's Markdown with its images made literal text ("![" escaped: `![alt](address)` becomes the text "!"
    and a link): a browser showing the lesson fetches nothing from an address the lesson file names. Links stay:
    a lesson's text is its teacher's Markdown, the one Markdown the app shows that it did not write."""
    return Markdown(lesson_text.replace("![", "\\!["))


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


def filled_in_sentence(result: ForwardResult) -> Markdown:
    """The input with every [MASK] replaced by the model's first guess in bold (Markdown); see `marked_sentence`."""
    return marked_sentence(result.tokens, result.special, result.pieces, {m.position: m.tokens[0] for m in result.masks})


def marked_sentence(tokens: Sequence[str], special: Sequence[bool], pieces: PieceStyle,
                    words: Mapping[int, str]) -> Markdown:
    """The input's tokens as text, with `words` ({position: token}) in place of those positions' tokens, in bold
    (Markdown); the separator between two sentences ([SEP], RoBERTa's </s></s>) shown as " / ". Pieces are joined as
    their scheme marks them ("##s", "Ġword": bert/pieces.py). Each token is literal text in the Markdown."""
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
        out.append((raw, markdown("**{}**", raw) if replacement is not None else markdown("{}", raw), continues))
        after_separator = False
    return Markdown(detokenize(out))  # every piece made by `markdown`
