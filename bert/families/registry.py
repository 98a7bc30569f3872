"""The families this project runs, one line each: adding a family is its module in bert/families/ (a `Family`,
bert/families/family.py) and its line here (docs/library.md, "Adding a family")."""
from __future__ import annotations

from ..errors import ConfigError
from . import albert, bert, camembert, deberta, distilbert, electra, esm, eurobert, gte, modernbert, nomic_bert, roberta, xlm_roberta
from .family import Family

FAMILIES: dict[str, Family] = {family.model_type: family for family in (
    bert.FAMILY,
    roberta.FAMILY,
    distilbert.FAMILY,
    albert.FAMILY,
    electra.FAMILY,
    modernbert.FAMILY,
    deberta.FAMILY,
    eurobert.FAMILY,
    gte.FAMILY,
    nomic_bert.FAMILY,
    xlm_roberta.FAMILY,
    camembert.FAMILY,
    esm.FAMILY,
)}
MODEL_TYPES = tuple(FAMILIES)  # Hugging Face's model_type of each, the values of BertConfig.family
# model_types that transformers runs only as a repository's own code: refused, saying why
REMOTE_CODE_ONLY = {
    "neobert": "NeoBERT (model_type 'neobert') runs in transformers only as remote code, which this project does not run",
    "new": "model_type 'new' (the hub's own GTE folders) runs in transformers only as remote code, which this project does "
           "not run; transformers' GTE checkpoints (model_type 'gte') load",
}


def family_of(model_type: str | object) -> Family:
    """The Family of a model_type, or of a BertConfig (its `family`). ConfigError for one this project lacks."""
    name = getattr(model_type, "family", model_type)
    if name in REMOTE_CODE_ONLY:
        raise ConfigError(f"{REMOTE_CODE_ONLY[name]}; supported: {', '.join(FAMILIES)}")
    if name not in FAMILIES:
        raise ConfigError(f"model_type is {name!r}; supported: {', '.join(FAMILIES)}")
    return FAMILIES[name]


def read_hf_config(hf: dict) -> dict:
    """BertConfig's fields from a Hugging Face config.json (a dict) of any family, by its model_type."""
    family = family_of(hf.get("model_type", "bert"))
    return {**family.read_config(hf), "family": family.model_type}


def write_hf_config(config) -> dict:
    """config.json for a BertConfig's family, as transformers writes it."""
    return {"model_type": config.family, **family_of(config).write_config(config)}
