"""The prediction page's ELECTRA view: which of the visitor's models can fill the discriminator's blanks, and the
discriminator's scores as the chart draws them (no Streamlit here).

A generator is offered when the visitor may open it (viz_app/server/access.py: the sidebar's own list, so a student sees
the offered models only), its config.json says ELECTRA's masked-LM head (ElectraForMaskedLM), and its vocabulary is
the discriminator's, the same word piece for every id (bert/replaced_tokens.py checks it again before a pass).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from bert.analysis.representations.compare import same_vocabulary
from bert.errors import BertError
from bert.families.registry import FAMILIES
from bert.replaced_tokens import ReplacedTokens
from bert.tokenizer import BertTokenizer, load_tokenizer
from viz_app.charts.base import Chart
from viz_app.charts.replaced_tokens import replaced_token_bars
from viz_app.app.models import ModelChoice


def is_electra_generator(folder: str | None) -> bool:
    """Whether the folder's config.json is an ELECTRA generator's (model_type electra, ElectraForMaskedLM)."""
    if not folder:
        return False
    try:
        config = json.loads((Path(folder) / "config.json").read_text())
    except (OSError, ValueError):
        return False
    family = FAMILIES.get(config.get("model_type")) if isinstance(config, dict) else None
    return (family is not None and family.discriminator
            and f"{family.class_prefix}ForMaskedLM" in (config.get("architectures") or []))


def generator_choices(choices: Sequence[ModelChoice], tokenizer: BertTokenizer) -> list[ModelChoice]:
    """The ELECTRA generators among `choices` (the visitor's picker entries that name a folder) whose vocabulary is
    `tokenizer`'s, in the picker's order. Only tokenizers are read here, never weights."""
    offered = []
    for choice in choices:
        if not is_electra_generator(choice.folder):
            continue
        try:
            theirs = load_tokenizer(choice.folder)
        except (BertError, OSError, ValueError):
            continue
        if same_vocabulary(theirs, tokenizer):
            offered.append(choice)
    return offered


def replaced_view(report: ReplacedTokens) -> Chart:
    """The discriminator's probability for every word piece of the input it read ([CLS] and [SEP] left out), the
    generator's words marked."""
    encoding = report.encoding
    shown = [i for i, special in enumerate(encoding.special) if not special]
    probabilities = report.probabilities.numpy()[shown]
    return replaced_token_bars(shown, [encoding.tokens[i] for i in shown], probabilities,
                               [i in report.filled for i in shown])
