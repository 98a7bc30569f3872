"""What the probes page probes and how: the widgets that pick the sentences (the built-in WordNet sentences, plain
text, UD English EWT, or a labelled file: CoNLL-U, or one token per line with label columns), the tasks and the
run's settings. Reading the data is bert.analysis.probing's (treebank.py, sentence_sets.py); the records are in
probe_runs.py.
"""
from __future__ import annotations

import hashlib
from typing import Callable

import streamlit as st

from bert.analysis.probing.treebank import Treebank, builtin_treebank
from bert.analysis.probing.scoring import MDL_KINDS
from bert.analysis.probing.task_table import TASKS, task
from bert.errors import BertError
from viz_app.app import analysis_widgets, show
from viz_app.app import state
from viz_app.app import uploads
from viz_app.specs.probes import runs as probe_runs
from viz_app.specs.probes.runs import MAX_LABELLED_BYTES, PIECES, ProbeData
from viz_app.app.text import joined, markdown

WORDNET, UD_EWT, LABELLED, TEXT = "wordnet", "ud_ewt", "labelled", "text"
SOURCES = {
    WORDNET: analysis_widgets.BUILTIN,
    UD_EWT: "UD English EWT (a treebank)",
    LABELLED: "Upload a labelled file",
    TEXT: analysis_widgets.UPLOAD,
}
LABELLED_TYPES = ["conllu", "conll", "tsv", "txt"]
MIN_SENTENCES = 10  # fewer leave too little to hold out
LEFT_OUT_NAMED = 5  # bad sentences named with their line; the rest counted
TASK_KEYS = {True: "probe_tasks", False: "probe_treebank_tasks"}  # sentences from text, treebanks: their own choice


def source_picker() -> str:
    return st.radio("Probe", list(SOURCES), format_func=SOURCES.get, horizontal=True,
                    **state.kept("probes_source", list(SOURCES)), on_change=_stop_running,
                    help="The built-in sentences and plain text carry the text tasks (position, punctuation, ...) and "
                    "the built-in ones the WordNet part of speech; a treebank carries every word's tags and its "
                    "dependency tree.")


def data_picker(source: str, read: Callable[[bytes, str], Treebank | str]) -> ProbeData | None:
    """The sentences to probe, with a count slider; None after saying what is missing. read: read_labelled, or a
    cached version of it (viz_app/cache.py's labelled_file)."""
    if source == UD_EWT:
        return ud_ewt_data()
    if source == LABELLED:
        return uploaded_data(read)
    picked = analysis_widgets.sentence_source("probes", choice=SOURCES[source])
    if picked is None:
        return None
    sentences, description = picked
    try:
        return probe_runs.builtin_data(len(sentences)) if source == WORDNET else probe_runs.text_data(sentences, description)
    except BertError as error:
        show.warning("{}", error)
        return None


def ud_ewt_data() -> ProbeData:
    dev, test = builtin_treebank("dev"), builtin_treebank("test")
    most = min(len(dev), len(test))
    count = st.slider("How many sentences", MIN_SENTENCES, most, **state.kept("probes_ud_count", range(MIN_SENTENCES, most + 1)),
                      help="From each file: the first N of dev train the probes, the first N of test score them.")
    st.caption("Universal Dependencies English Web Treebank (Silveira et al. 2014), CC BY-SA 4.0: weblogs, "
               "newsgroups, e-mail, reviews and answers, with every word's part of speech and its dependency tree.")
    return probe_runs.ud_ewt_data(count)


def uploaded_data(read: Callable[[bytes, str], Treebank | str]) -> ProbeData | None:
    upload = uploads.upload_box(
        "A CoNLL-U file (any Universal Dependencies treebank), or one token per line with label columns after the "
        "word (e.g. CoNLL-2003) and a blank line between sentences",
        LABELLED_TYPES, "probes_labelled_file", MAX_LABELLED_BYTES,
        help="Every label column becomes a task; a CoNLL-U file's heads give the tree tasks too. Sentences with a "
        "problem are left out and counted.",
    )
    if upload is None:
        st.info("Choose a .conllu, .conll, .tsv or .txt file with labels to probe your own data.")
        return None
    data = upload.getvalue()
    treebank = read(data, upload.name)
    if isinstance(treebank, str):
        show.warning("{}", treebank)
        return None
    if treebank.skipped:
        show.warning("{}. The other {} are used.", treebank.skipped_summary(LEFT_OUT_NAMED), len(treebank))
    if len(treebank) < MIN_SENTENCES:
        show.warning("{} usable sentence(s) in that file; the probes need at least {}.", len(treebank), MIN_SENTENCES)
        return None
    digest = hashlib.sha1(data).hexdigest()
    count = st.slider("How many sentences", min(MIN_SENTENCES, len(treebank)), len(treebank), value=len(treebank),
                      key=f"probes_file_count_{digest[:12]}", help="The first N sentences of the file.")  # one per file
    name = treebank.name
    return ProbeData(probe_runs.first(treebank, count), None,
                     f"{count} sentences of {name}: 80% train the probes, 20% (picked by the seed) score them",
                     (LABELLED, digest, upload.name, count))


# ---- tasks and settings -----------------------------------------------------------------------------------------


def task_picker(data: ProbeData) -> list[str]:
    """The tasks the data offers (bert.analysis.probing.task_table). Sentences from text and treebanks keep their
    own choice (and URL parameter); a stored choice that names none of the tasks (another file) becomes all of them."""
    key, tasks = TASK_KEYS[data.from_text], data.tasks
    chosen = st.session_state.get(key)
    if isinstance(chosen, list) and chosen and not set(chosen) & set(tasks):
        st.session_state[key] = list(tasks)
    state.clamp_subset(key, tasks)
    picked = st.multiselect("Tasks", tasks, **state.kept(key), format_func=_task_name)
    with st.expander("What each task asks"):
        show.markdown("{}",
                      joined("\n", (markdown("- **{}**: {}", _task_name(name), task(name).description)
                              for name in tasks)))
    return picked


def _task_name(name: str) -> str:
    return name.replace("_", " ") if name in TASKS else name


def pieces_picker() -> str:
    return st.radio("A word's vector is", list(PIECES), format_func=PIECES.get, **state.kept("probe_pieces", list(PIECES)),
                    help="BERT splits rare words into pieces (play, ##ing). Hewitt & Manning and most probing work take "
                    "the first piece; every result says which was used. The text tasks read single pieces.")


def seed_input() -> int:
    return int(st.number_input(
        "Random seed", min_value=0, max_value=10_000, step=1, **state.kept("probe_seed", range(10_001)),
        help="Picks which sentences are held out for scoring (when one set is split) and the control task's random "
        "labels: change it to see how much the scores move by chance.",
    ))


def mdl_toggle(tasks: list[str]) -> bool:
    readable = [name for name in tasks if task(name).kind in MDL_KINDS]  # MDL is for word tags and text tasks
    return st.toggle("Description length (MDL)", **state.kept("probe_mdl"), disabled=not readable,
                     help="Voita & Titov 2020: how many bits it takes to send the labels when a probe learns them as "
                     "it goes (online code), for the word-tag and text tasks and their controls. A shorter code means "
                     "the layer makes the labels easier to learn. It takes longer than the accuracy alone.")


def _stop_running() -> None:
    """Other data: wait for the run switch again (a treebank run can take minutes)."""
    st.session_state["probe_run"] = False


def run_toggle() -> bool:
    """The switch that starts a run on other data than the built-in sentences (those run at once: the first screen
    shows their curves), which can take minutes."""
    return st.toggle("Run the probes", key="probe_run", help="A few seconds to a few minutes, by the number of sentences")
