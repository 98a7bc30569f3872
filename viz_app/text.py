"""Turning token lists back into readable text."""
from __future__ import annotations

from typing import Callable

from bert.analysis.representations.embedding_subspaces import PARTS, SubspaceReport
from viz_app.forward import ForwardResult

_NO_SPACE_BEFORE = set(".,!?;:)]}'%")
_NO_SPACE_AFTER = set("([{$")


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
    """The input with every [MASK] replaced by the model's first guess in bold (Markdown); the [SEP] between
    two sentences shown as " / ". `escape` makes each token literal in Markdown."""
    best = {m.position: m.tokens[0] for m in result.masks}
    pieces = []
    last = len(result.tokens) - 1
    for position, token in enumerate(result.tokens):
        if token == "[CLS]" or (token == "[SEP]" and position == last):
            continue
        if token == "[SEP]":
            pieces.append(("/", "/", False))
            continue
        guess = best.get(position)
        word = guess if guess is not None else token
        continues = word.startswith("##")
        raw = word[2:] if continues else word
        pieces.append((raw, f"**{escape(raw)}**" if guess is not None else escape(raw), continues))
    return detokenize(pieces)


def subspace_reading(report: SubspaceReport) -> str:
    """Markdown that reads the surviving fractions against the random baseline: one line per table, a verdict."""
    lines, shared = [], 0
    for part in PARTS:
        clauses = []
        for onto in PARTS:
            if onto == part or report.dims[onto] == 0:
                continue
            measured, random = report.surviving[(part, onto)], report.random_surviving[onto]
            ratio = measured / random if random else 0.0
            shared += ratio >= 0.5
            word = "avoids it" if ratio < 0.5 else ("as random" if ratio <= 1.5 else "leans in")
            clauses.append(f"{measured:.0%} in the {onto} subspace (random {random:.0%}: {word})")
        lines.append(f"- **{part}** vectors keep " + ", ".join(clauses))
    verdict = (
        "At this k the three parts sit in nearly separate subspaces: close to a concatenation, in a rotated basis."
        if shared == 0
        else "At this k the parts are **not** kept apart as a concatenation would keep them: they share directions "
        "at least as much as random vectors would."
    )
    return "\n".join(["**Reading it** (share of length |Px|/|x|):", *lines, "", verdict])
