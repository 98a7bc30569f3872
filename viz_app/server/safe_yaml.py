"""YAML as the app reads files from visitors and teachers: PyYAML's safe loader, refusing what makes a small file
grow into a large value (anchors and aliases: a few hundred bytes of nested aliases expand to gigabytes, the
"billion laughs" of OWASP's XML/YAML guidance), nesting deeper than MAX_DEPTH and integers longer than MAX_DIGITS.
Each refusal is checked as the file is read, before anything is expanded or built, and raised as
`UnsafeYamlError`: a `yaml.MarkedYAMLError` with the line, so a caller's `except yaml.YAMLError` reports it like
any other YAML mistake. Plain Python.
"""
from __future__ import annotations

from typing import Any

import yaml

MAX_DEPTH = 20  # lists and mappings inside each other: a lesson needs 5
MAX_DIGITS = 30  # characters of an integer (Python refuses to convert more than 4,300 digits anyway)


class UnsafeYamlError(yaml.MarkedYAMLError):
    """YAML this app does not read: an anchor or alias, deep nesting, a huge number. `problem_mark` is where."""


class _Loader(yaml.SafeLoader):
    def __init__(self, stream):
        super().__init__(stream)
        self._depth = 0

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise UnsafeYamlError(problem="anchors and aliases (& and *) are not read here; write each value out",
                                  problem_mark=event.start_mark)
        if self._depth >= MAX_DEPTH:
            raise UnsafeYamlError(problem=f"nested more than {MAX_DEPTH} levels deep", problem_mark=event.start_mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_yaml_int(self, node):
        if len(node.value) > MAX_DIGITS:
            raise UnsafeYamlError(problem=f"a number {len(node.value):,} characters long; at most {MAX_DIGITS}",
                                  problem_mark=node.start_mark)
        return super().construct_yaml_int(node)


_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)


def load(text: str) -> Any:
    """The one YAML document in `text`. Raises yaml.YAMLError (UnsafeYamlError for what this module refuses)."""
    return yaml.load(text, Loader=_Loader)  # noqa: S506 - a SafeLoader subclass
