"""How a URL parameter is spelt and its default (`Param`), and the parameters every page shares: the sentence box's
and the sidebar's. Each page's own parameters are in its entry in viz_app/app/navigation.py, which joins them all into
`LINK_PARAMS` (plain Python: the lessons read them without Streamlit; viz_app/app/state.py keeps them in the URL).
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable, Mapping

DEFAULT_TEXT = "The [MASK] barked at the mailman."
MAX_URL_TEXT = 4000  # longer sentences stay out of the link (browsers and servers cap URL lengths)


def _ints(value: str) -> list[int]:
    return sorted({int(part) for part in value.split(",") if part.strip()})


def _words(value: str) -> list[str]:
    return [part.strip() for part in value.split(",") if part.strip()]


def _heads(value: str) -> list[tuple[int, int]]:
    """"3.7,0.1" -> [(0, 1), (3, 7)]: layer.head pairs."""
    pairs = [part.split(".") for part in value.split(",") if part.strip()]
    return sorted({(int(layer), int(head)) for layer, head in pairs})


def _join(values) -> str:
    return ",".join(map(str, values))


def _bool(value: str) -> bool:
    if value.lower() in ("1", "true", "yes", "on"):
        return True
    if value.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(value)


def _flag(value: bool) -> str:
    return "1" if value else "0"


@dataclass(frozen=True)
class Param:
    parse: Callable[[str], Any]  # URL text -> value; raises ValueError for nonsense, which is then ignored
    dump: Callable[[Any], str]
    default: Any
    choices: tuple[str, ...] | Mapping[str, str] = ()  # the only values a link or a lesson may give (value -> label)

    def from_link(self, text: str) -> Any:
        """A link's text -> the value; the default where it is nonsense (it does not parse, or names no choice), as
        a list's entries that name no choice are dropped. Ranges that depend on the model are checked by the widget
        (viz_app/app/state.py `kept`)."""
        try:
            value = self.parse(text)
        except ValueError:
            return copy.copy(self.default)  # a list default is never shared between sessions
        if not self.choices:
            return value
        if isinstance(value, list):
            return [entry for entry in value if entry in self.choices]
        return value if value in self.choices else self.default


def text(default: str | None = "") -> Param:
    return Param(str, str, default)


def integer(default: int | None = None) -> Param:
    return Param(int, str, default)


def flag(default: bool) -> Param:
    """A yes/no toggle, "1"/"0" in a URL (Streamlit's own binding writes true/false)."""
    return Param(_bool, _flag, default)


def choice(choices, default: str | None = None) -> Param:
    """One of a few names (`choices`: a tuple, or a mapping of each name to its label); default: the first. A link
    gives the name; a label is read as its name too (links from Streamlit's own URL binding wrote a picker's label)."""
    names = {label: name for name, label in choices.items()} if isinstance(choices, Mapping) else {}
    names |= {name: name for name in choices}
    return Param(lambda value: names.get(value, value), str, next(iter(choices)) if default is None else default,
                 choices=choices)


def ints(default: list[int] | None) -> Param:
    """Positions or layers, "0,5,11" in a URL."""
    return Param(_ints, _join, default)


def words(default: list[str], choices=()) -> Param:
    return Param(_words, _join, default, choices=choices)


def heads() -> Param:
    """Layer.head pairs, "3.7,0.1" in a URL."""
    return Param(_heads, lambda v: _join(f"{layer}.{head}" for layer, head in v), [])


SHARED: dict[str, Param] = {  # the sentence box's and the sidebar's (viz_app/app/sentence_box.py, viz_app/app/sidebar.py)
    "text": text(DEFAULT_TEXT),
    "pair": text(),
    "masks": ints([]),
    "truncate": flag(False),
    "image_format": choice(("png", "svg")),
}
MODEL_PARAM = "model"  # the model's source; kept apart because the picker is two widgets (choice, folder)
