"""The transcoders that ship with the package (bert/weights/TRANSCODERS_MINILM_CARD.md says how they were trained),
and where a model's own are found.

    transcoders_for("minilm")                       # the shipped folder, when it is there
    transcoders_for("path/to/model", "path/to/model")   # path/to/model/transcoders, written by
                                                        # python -m bert transcoders train --out path/to/model/transcoders
"""
from __future__ import annotations

from pathlib import Path

from .transcoder import CONFIG_FILE

WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
SHIPPED_TRANSCODERS = WEIGHTS / "transcoders_minilm"  # minilm, every layer's MLP
SHIPPED = {"minilm": SHIPPED_TRANSCODERS}  # built-in model name -> its transcoders folder
OWN_FOLDER = "transcoders"  # a model folder's own transcoders, inside it


def transcoders_for(source: str, folder: str | Path | None = None) -> Path | None:
    """The transcoders folder for a model: the shipped one of a built-in model, else `transcoders/` inside the
    model's folder (`folder`, or `source` when it is a folder); None when there is none."""
    shipped = SHIPPED.get(source)
    if shipped is not None and (shipped / CONFIG_FILE).is_file():
        return shipped
    for base in (folder, source):
        if base and (Path(base) / OWN_FOLDER / CONFIG_FILE).is_file():
            return Path(base) / OWN_FOLDER
    return None
