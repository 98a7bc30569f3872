"""The sparse autoencoders that ship with the package (bert/weights/SAE_MINILM_CARD.md says how each was trained)."""
from __future__ import annotations

from pathlib import Path

WEIGHTS = Path(__file__).resolve().parents[2] / "weights"
SHIPPED_SAE = WEIGHTS / "sae_minilm_layer3"  # minilm, hidden_states[3], 4096 features, k = 32
SHIPPED = {"minilm": SHIPPED_SAE}  # built-in model name -> its SAE folder


def shipped_sae(model_name: str) -> Path | None:
    """The folder of the SAE shipped for a built-in model, or None."""
    folder = SHIPPED.get(model_name)
    return folder if folder is not None and (folder / "config.json").is_file() else None


def is_shipped(folder: str | Path) -> bool:
    """Whether `folder` is (or is inside) the package's weights folder, which is never written to."""
    return Path(folder).resolve().is_relative_to(WEIGHTS)
