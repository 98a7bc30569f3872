"""Who may load what: the policy the sidebar and every model picker apply. No Streamlit here.

- The owner: a visitor at the server's own machine (a loopback address) when the server is not in class mode:
  every model the machine has, any folder typed in, downloads from the hub; the only one who writes files on the
  server (feature labels kept beside a sparse autoencoder).
- The presenter: in class mode, the session that opened the presenter's link (viz_app/server/class_room.py checks its
  key): the owner's choice of models and folders, and it moves the class; it writes no files on the server.
- A student: every other visitor (in class mode, loopback ones too). The offered models only: the built-in ones,
  the BERTs already in the server's Hugging Face cache (unless the teacher turned that off) and the folders the
  teacher listed (viz_app/server/settings.py), each by the name the teacher gave it. No folder box, no download.
  A link naming anything else opens the default model with NOT_OFFERED, the same words whatever it named and
  whether or not such a folder exists, so a link can neither reach the server's disk nor learn what is on it.

A failure on the server's side (a model that does not load, a training run that fails, figures that cannot be
drawn) reaches a page through `failure`: its text may name the server's files, so only the owner and the
presenter read it; a student reads SERVER_LOG and the server's log gets the text.
"""
from __future__ import annotations

import enum
import ipaddress
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from viz_app.server.class_room import ClassRoom
from viz_app.app.models import FOLDER, ModelChoice, default_source, first_choice
from viz_app.server.settings import ServerSettings

log = logging.getLogger(__name__)

NOT_OFFERED = "This server does not offer that model; it offers: {names}."
SERVER_LOG = "the server's log says why"  # what a student reads of a failure on the server's side


class Role(enum.Enum):
    OWNER = "owner"
    PRESENTER = "presenter"
    STUDENT = "student"

    @property
    def may_choose_any_model(self) -> bool:
        """Type a folder, download from the hub, open any model a link names."""
        return self is not Role.STUDENT

    @property
    def may_write_to_server(self) -> bool:
        """Write files on the server's disk (labels kept beside a sparse autoencoder): the owner at the server's
        own machine only. A presenter's powers are over the class's screens, not the server's files."""
        return self is Role.OWNER


def is_loopback(address: str | None) -> bool:
    """Whether a visitor's address is the server's own machine (127.0.0.1, ::1, and any other loopback spelling
    such as 127.0.0.2 or ::ffff:127.0.0.1). A missing address (None: no connection to read it from) or one that
    cannot be read is not: whoever it is gets a student's powers."""
    if address is None:
        return False
    try:
        parsed = ipaddress.ip_address(address.split("%")[0])  # "fe80::1%eth0": the zone is not part of the address
    except ValueError:
        return False
    mapped = getattr(parsed, "ipv4_mapped", None)
    return (mapped or parsed).is_loopback


def role_of(address: str | None, class_mode: bool, presenter: bool) -> Role:
    """presenter: the session opened the presenter's link (only counts in class mode)."""
    if class_mode:
        return Role.PRESENTER if presenter else Role.STUDENT
    return Role.OWNER if is_loopback(address) else Role.STUDENT


def failure(error: BaseException | str, role: Role) -> str:
    """The words a page shows for a failure on the server's side, e.g. f"The run failed ({failure(error, role)}).".
    The owner and the presenter read the error itself: they may open any folder, so a path in it tells them
    nothing new. A student reads SERVER_LOG, the same whatever failed, and the error goes to the server's log."""
    if role.may_choose_any_model:
        return str(error)
    log.warning("a student was told only that something failed on the server: %s", error)
    return SERVER_LOG


def teacher_folders(settings: ServerSettings) -> list[ModelChoice]:
    return [ModelChoice(name, name, "offered on this server", folder) for name, folder in settings.folders]


def picker_choices(choices: Sequence[ModelChoice], settings: ServerSettings, role: Role) -> list[ModelChoice]:
    """What the model picker lists for this visitor. `choices`: models.model_choices(), the machine's models
    (cached hub BERTs, the ones that carry a folder, first; then the built-in ones; then the folder entry)."""
    if role.may_choose_any_model:
        return [*teacher_folders(settings), *choices]
    hub = [c for c in choices if c.folder is not None and settings.cached_hub_models]
    builtin = [c for c in choices if c.folder is None and c.source != FOLDER]
    return [*hub, *builtin, *teacher_folders(settings)]


def not_offered(offered: Sequence[ModelChoice]) -> str:
    """The one line a student sees for a model this server does not offer: names only, never a path."""
    return NOT_OFFERED.format(names=", ".join(c.source for c in offered if c.source != FOLDER))


@dataclass(frozen=True)
class Resolution:
    """What a requested model name turns into for one visitor."""

    choice: ModelChoice  # a picker entry; the FOLDER entry when `folder` is a path the owner typed or linked
    folder: str | None = None  # for the FOLDER entry: the folder or hub id to load
    refused: str | None = None  # NOT_OFFERED when the request was not honoured (the default model instead)


def resolve(requested: str, choices: Sequence[ModelChoice], role: Role) -> Resolution:
    """The model a link's or a lesson's `model=` value opens. `choices`: picker_choices for this role.
    "" opens the first choice (a cached bert-base-uncased, else the built-in model)."""
    by_source = {c.source: c for c in choices}
    if requested in by_source and requested != FOLDER:
        return Resolution(by_source[requested])
    default = by_source.get(first_choice(list(choices))) or by_source.get(default_source()) or choices[0]
    if not requested or requested in ("minilm", "minilm-encoder"):  # e.g. minilm before its head file exists
        return Resolution(default)
    if role.may_choose_any_model:
        offered = _listed_folder(requested, choices)  # a teacher's folder by its path: by its name, as students see it
        if offered is not None:
            return Resolution(offered)
    if role.may_choose_any_model and FOLDER in by_source:
        return Resolution(by_source[FOLDER], folder=requested)
    return Resolution(default, refused=not_offered(choices))


def _listed_folder(requested: str, choices: Sequence[ModelChoice]) -> ModelChoice | None:
    """The picker's entry whose folder `requested` names by its path, if any: a teacher's offered folder
    (viz_app/server/settings.py keeps each resolved) or a cached hub model's snapshot."""
    offered = {c.folder: c for c in choices if c.folder}
    if not offered or not requested.strip():
        return None
    try:
        return offered.get(str(Path(requested).expanduser().resolve()))
    except (OSError, RuntimeError, ValueError):
        return None


@dataclass(frozen=True)
class Visitor:
    """One session's visitor, as Home.py works it out on each run (viz_app/server/visitor.py) and hands to the sidebar
    and the pages."""

    role: Role
    settings: ServerSettings
    choices: tuple[ModelChoice, ...]  # what this visitor's model pickers list (picker_choices)
    room: ClassRoom | None  # the server's class, in class mode
    presenter_key: str | None = None  # the presenter's key, for the presenter only
    address: str | None = None  # the address the browser connects from (None: none to read); names a voter

    def voter(self, session: str) -> str:
        """Who answers a class's question, and whose hour a heavy computation counts in (viz_app/heavy.py): the
        visitor's address, one per machine as far as the server can tell (viz_app/server/class_room.py); the browser
        session's name where there is no address to read."""
        return f"address {self.address}" if self.address else f"session {session}"

    @property
    def follows_class(self) -> bool:
        """A student in class mode: the class panel is above every page."""
        return self.settings.class_mode and self.role is Role.STUDENT

    def resolve(self, requested: str) -> Resolution:
        return resolve(requested, self.choices, self.role)
