"""What a page is, declared once: its spec, a module in viz_app/specs/ named by the page's address, which the page,
the lessons, the lesson costs and the exports all read.

A spec module defines

    NAME = "<url_path>"                      # its entry in viz_app/app/navigation.py (`Page.spec`)
    class Settings:                          # frozen dataclass: what the page's widgets choose
        @classmethod
        def from_state(cls, state, inputs)   # from a link's or a lesson step's state, clamped as the widgets would
    def computations(settings) -> {name: (Computation, work)}   # the heavy parts these settings ask for
    def view(settings, inputs, results) -> {name: Chart}        # results: {name: computed result}
    LESSON_CHARTS = (...)                    # the charts of `view` a lesson step shows

and a `Computation` for each heavy part: its price (`cost`, known before anything runs) and the work itself
(`compute`). The page runs a computation only through `viz_app.heavy.run(context, computation, work)`, which
prices it, asks the budget, takes a slot, stops when the tab closes and caches; a lesson step's computation
(viz_app/lessons/steps.py) runs `computations(settings)` inside its own, through the same road. `inputs` is
anything with `.loaded` and `.prepared` (a PreparedInput, or None on a page without the sentence box): the page's
Context, whose `loaded` describes the model and cannot run it (viz_app/app/models.py's `ModelHandle`), or `Inputs`,
whose `loaded` is the model itself: a computation's `cost` and `compute` get `Inputs` (its `load` opens a second
model), so only they run the model. A computation declares its work's type (`work=`), a frozen dataclass compared by
value: its fields are the cache key.
Plain Python: no Streamlit here.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Generic, Hashable, Mapping, Protocol, TypeVar

from bert.config import BertConfig
from bert.costs import Cost
from viz_app.app.forward import PreparedInput
from viz_app.app.models import LoadedModel, ModelHandle, ModelKey, load as load_model
from viz_app.app.navigation import default_of

Work = TypeVar("Work", bound=Hashable)  # what a computation reads besides the model and the input (a frozen dataclass)
Result = TypeVar("Result")


class HasInputs(Protocol):
    @property
    def loaded(self) -> LoadedModel | ModelHandle: ...  # a page's view reads a ModelHandle: no forward pass

    @property
    def prepared(self) -> PreparedInput | None: ...


def compute_now(key: Hashable, compute: Callable[[], Result]) -> Result:
    """`Inputs.keep` where nothing is kept (a lesson, an export, a test): compute it."""
    return compute()


@dataclass(frozen=True)
class Inputs:
    """What a computation reads: the model, the input, how to load another model it needs (a generator, model B
    of a comparison) by its key, and `keep(key, compute)`, where a part several computations share (the probes'
    word vectors, read by runs with other tasks or seeds) is kept. The app passes its cached loader and its bounded
    store (viz_app/cache.py), a lesson or a test the plain ones; `result_of` reads another computation's result."""

    loaded: LoadedModel
    prepared: PreparedInput | None = None
    load: Callable[[ModelKey], LoadedModel] = load_model
    keep: Callable[[Hashable, Callable[[], Any]], Any] = compute_now
    earlier: Callable[["Computation", Any], Any] | None = None  # the app's cached result of another computation

    def result_of(self, computation: "Computation", work) -> Any:
        """Another computation's result that this one reads (the heads' mean a ranking ablates with): the one the
        app keeps (`earlier`: viz_app/cache.py), else computed here."""
        return computation.compute(self, work) if self.earlier is None else self.earlier(computation, work)


class WorkTypeError(TypeError):
    """A computation declared with a work type whose values cannot key a cache by value."""


@dataclass(frozen=True)
class Computation(Generic[Work, Result]):
    """One heavy part of a page: `cost` before it starts, `compute` the work. `name` ("<page>.<part>") keys its cache
    and the budget's confirmation; `work`: the type of what it reads besides the model and the input, a frozen
    dataclass that compares by value (checked here, when the computation is declared), so the same settings always
    find the same result and a result found once is never computed or charged again; `title(work)` names what it
    computes, in the page's words ("Value zeroing"); `counted_at(inputs, work)`: the model whose size the passes are
    counted at, when not the page's (the larger of two models); `per_model`: made once per model, whatever the input
    (a mean over built-in sentences), so cached by the model alone and computed without the input; `shared`: the
    result is kept once and shared read-only by every session, never copied (a recorded pass that several pages
    read: viz_app/specs/recorded.py; a corpus index), priced and slotted when it is computed: once kept, every
    visitor reads it at no cost, without asking the budget again (nothing runs); `key(work)`: what
    caches the result, when the work carries a large object the key names (a corpus, the probes' data) that is not
    hashed on every rerun; default the work's fields."""

    name: str
    title: Callable[[Work], str]
    cost: Callable[[Inputs, Work], Cost]
    compute: Callable[[Inputs, Work], Result]
    counted_at: Callable[[Inputs, Work], BertConfig] | None = None
    per_model: bool = False
    shared: bool = False
    key: Callable[[Work], Hashable] | None = None
    work: type = field(kw_only=True)  # the work's type: a frozen dataclass, equal and hashed by its fields' values

    def __post_init__(self) -> None:
        check_work_type(self.name, self.work)

    def cache_key(self, work: Work) -> Hashable:
        """What the caches key the work's result by: `key(work)`, else the work's type and its fields' values."""
        if type(work) is not self.work:
            raise WorkTypeError(f"{self.name} computes a {self.work.__name__}, not a {type(work).__name__}")
        if self.key is not None:
            return self.key(work)
        derived = (self.work.__qualname__, *(getattr(work, f.name) for f in dataclasses.fields(work) if f.compare))
        try:
            hash(derived)
        except TypeError as error:
            raise WorkTypeError(f"{self.name}: a field of its work is not hashable ({error}); keep what names a large "
                                "object in the work, or give the computation a `key`") from None
        return derived


def check_work_type(name: str, work: type) -> None:
    """Raise WorkTypeError unless `work` is a frozen dataclass that compares and hashes by its fields (eq=True): a
    work that compared by identity (eq=False) would never find its result again, and be charged on every rerun."""
    if not (isinstance(work, type) and dataclasses.is_dataclass(work)):
        raise WorkTypeError(f"{name}: its work must be a frozen dataclass, not {work!r}")
    parameters = work.__dataclass_params__
    if not (parameters.frozen and parameters.eq) or work.__hash__ is None or work.__hash__ is object.__hash__:
        raise WorkTypeError(f"{name}: its work {work.__name__} must be @dataclass(frozen=True) with eq left on, so "
                            "that the same settings find the same cached result")


Planned = dict[str, tuple[Computation, Any]]  # name -> (computation, its work), as a spec's `computations` gives


def planned_cost(planned: Planned, inputs: Inputs) -> Cost:
    """What the planned computations cost together."""
    return sum((computation.cost(inputs, work) for computation, work in planned.values()), Cost(0, 0))


def compute_all(planned: Planned, inputs: Inputs) -> dict[str, Any]:
    """Every planned computation's result, run here (a lesson step inside its job, an export)."""
    return {name: computation.compute(inputs, work) for name, (computation, work) in planned.items()}


# ---- reading a link's or a lesson step's state as a page's widgets would ----------------------------------------


def setting(state: Mapping[str, Any], key: str):
    """The value a link, a step or a page's own widget sets for `key`, else the registry's default."""
    return state.get(key, default_of(key))


def within(value, count: int, default: int) -> int:
    """`value` if it is one of 0 .. count - 1 (a layer, a head), else `default`."""
    return value if isinstance(value, int) and 0 <= value < count else default


def chosen_mask(requested, masks: tuple[int, ...]) -> int | None:
    """The [MASK] a page analyses: the requested position if it is a mask, else the first; None without masks."""
    return requested if requested in masks else (masks[0] if masks else None)
