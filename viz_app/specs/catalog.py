"""Every page written as a spec (viz_app/specs/base.py), by its address: what the lessons, the lesson costs and the
exports read for a page whose registry entry names a spec (viz_app/app/navigation.py, `Page.spec`)."""
from __future__ import annotations

from types import ModuleType

from viz_app.specs import (circuits, compare_models, head_ablation, head_statistics, mixing, one_pass, saliency,
                          sentence_tasks, word_contexts)

SPECS: dict[str, ModuleType] = {spec.NAME: spec for spec in (
    mixing, one_pass, compare_models, head_ablation, head_statistics, saliency, sentence_tasks, word_contexts, circuits)}
