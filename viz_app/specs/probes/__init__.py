"""The page "Layer probes" (address `probes`), as a spec (viz_app/specs/base.py): its `Settings`, its computations
(the probes' run, "Erase this property"), priced before they start and run through viz_app/heavy.py's `run`,
and its `view`. Plain Python, as the package's other modules: `runs` (the data a run probes and what is kept of
it), `view` (its charts). The page's widgets: viz_app/app/probe_data.py (the sentences, tasks and settings) and
viz_app/app/probe_results.py (a finished run)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from bert.analysis.probing.pipeline import inputs_needed
from bert.data import builtin_sentences
from viz_app.charts.base import Chart
from viz_app.specs.base import Computation, HasInputs, Inputs, Planned, setting
from viz_app.specs.probes import runs
from viz_app.specs.probes.view import ProbeViewSettings, probes_view

NAME = "probes"
LESSON_CHARTS = ("curves", "tree")


@dataclass(frozen=True)
class RunWork:
    data: runs.ProbeData = field(hash=False, compare=False)  # named by its `key` in the cache's key
    tasks: tuple[str, ...]
    pieces: str = "first"  # a key of runs.PIECES
    seed: int = 0
    mdl: bool = False


@dataclass(frozen=True)
class EraseWork:
    data: runs.ProbeData = field(hash=False, compare=False)
    task: str
    layer: int  # a hidden_states index
    seed: int = 0


def _config(inputs: Inputs):
    return inputs.loaded.model.config


def _run(inputs: Inputs, work: RunWork) -> runs.ProbeRun:
    """The word vectors (kept by `inputs.keep`: other tasks or seeds on the same data read them again), then the
    probes of the tasks trained and scored on them."""
    loaded, split = inputs.loaded, runs.split_seed(work.data, work.seed)
    features = inputs.keep(
        ("probes.features", loaded.key, work.data.key, work.pieces, split, inputs_needed(work.tasks)),
        lambda: runs.features(loaded.model, loaded.tokenizer, work.data, work.tasks, work.pieces, work.seed))
    return runs.probe(loaded.model, features, work.tasks, work.pieces, work.seed, work.mdl, loaded.key.source)


RUN = Computation(  # every layer's word vectors of the data (priced with the memory they keep), then the probes
    "probes.run", lambda work: "Reading every layer's word vectors, then training the probes",
    cost=lambda inputs, work: runs.features_cost(inputs.loaded.tokenizer, work.data, work.tasks, work.pieces, work.seed,
                                                 _config(inputs)),
    compute=lambda inputs, work: _run(inputs, work),
    per_model=True, key=lambda work: (work.data.key, work.tasks, work.pieces, work.seed, work.mdl), work=RunWork)
ERASE = Computation(  # amnesic probing of one label at one layer (Elazar et al. 2021), with LEACE
    "probes.erase", lambda work: "Erasing the property and measuring the probe and the masked LM again",
    cost=lambda inputs, work: runs.erase_cost(inputs.loaded.tokenizer, work.data, work.seed,
                                              _config(inputs).max_position_embeddings),
    compute=lambda inputs, work: runs.erase(inputs.loaded.model, inputs.loaded.tokenizer, work.data, work.task, work.layer,
                                            work.seed, inputs.loaded.key.source),
    per_model=True, key=lambda work: (work.data.key, work.task, work.layer, work.seed), work=EraseWork)


@dataclass(frozen=True)
class Settings:
    data: runs.ProbeData | None = field(hash=False, compare=False)  # None: nothing to probe (a file not uploaded)
    tasks: tuple[str, ...] = ()
    pieces: str = "first"
    seed: int = 0
    mdl: bool = False
    view: ProbeViewSettings = ProbeViewSettings()

    @classmethod
    def from_state(cls, state: Mapping[str, Any], inputs: HasInputs | None = None) -> "Settings":
        """A link's or a lesson step's settings: the built-in sentences or the first sentences of UD EWT (a file or
        a text to upload: no data), the tasks among those the data offers."""
        found = step_data(state)
        data, tasks = found if found else (None, ())
        return cls(data, tuple(tasks), setting(state, "probe_pieces"), setting(state, "probe_seed"),
                   bool(setting(state, "probe_mdl")), ProbeViewSettings.from_state(state))


def step_data(state: Mapping[str, Any]) -> tuple[runs.ProbeData, list[str]] | None:
    """The data and tasks a link or a lesson step probes: the built-in sentences or the first sentences of UD EWT;
    None for a file or a text to upload, or no task the data offers."""
    source = setting(state, "probes_source")
    if source == "ud_ewt":
        count = setting(state, "probes_ud_count")
        data = runs.ud_ewt_data(count if isinstance(count, int) and count >= 10 else runs.UD_SENTENCES)
        tasks = setting(state, "probe_treebank_tasks")
    elif source == "wordnet":
        count = setting(state, "probes_count")
        data = runs.builtin_data(min(max(count if isinstance(count, int) else 0, 20), len(builtin_sentences())))
        tasks = setting(state, "probe_tasks")
    else:
        return None
    tasks = [task for task in tasks or () if task in data.tasks]
    return (data, tasks) if tasks else None


def computations(settings: Settings) -> Planned:
    """"run": the probes of the tasks on the data; nothing without data or tasks."""
    if settings.data is None or not settings.tasks:
        return {}
    return {"run": (RUN, RunWork(settings.data, settings.tasks, settings.pieces, settings.seed, settings.mdl))}


def view(settings: Settings, inputs: HasInputs, results: Mapping[str, Any]) -> dict[str, Chart]:
    """"curves" and, when the distance probe ran, "tree" (view.probes_view)."""
    return probes_view(settings.view, results["run"]) if results.get("run") is not None else {}
