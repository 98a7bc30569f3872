"""Every page written as a spec (viz_app/specs/base.py), by its address: what the lessons, the lesson costs and the
exports read for a page whose registry entry names a spec (viz_app/app/navigation.py, `Page.spec`)."""
from __future__ import annotations

from types import ModuleType

from viz_app.specs import circuits, rollout

SPECS: dict[str, ModuleType] = {spec.NAME: spec for spec in (rollout, circuits)}
