"""What the probes page probes: the built-in WordNet sentences, the UD English EWT treebank, a labelled file
(CoNLL-U, or one token per line with label columns) or plain text: the widgets that pick it and the run's
settings. The reading itself is bert.analysis.probing.treebank's.
"""
from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Callable

import streamlit as st

from bert.analysis.probing import treebank as tb
from viz_app import analysis_widgets as aw
from viz_app import state
from viz_app.treebank_runs import MAX_LABELLED_BYTES, ProbeData
from viz_app.text import escape_markdown

WORDNET, UD_EWT, LABELLED, TEXT = "wordnet", "ud_ewt", "labelled", "text"
SOURCES = {
    WORDNET: aw.BUILTIN,
    UD_EWT: "UD English EWT (a treebank)",
    LABELLED: "Upload a labelled file",
    TEXT: aw.UPLOAD,
}
LABELLED_TYPES = ["conllu", "conll", "tsv", "txt"]
MIN_SENTENCES = 10  # fewer leave too little to hold out
UD_SENTENCES = 200  # from each of UD EWT's files, to start with (all of them take minutes)
LEFT_OUT_NAMED = 5  # bad sentences named with their line; the rest counted


def source_picker() -> str:
    state.clamp("probes_source", list(SOURCES), WORDNET)
    return st.radio("Probe", list(SOURCES), format_func=SOURCES.get, key="probes_source", horizontal=True,
                    persist_state="session", on_change=_stop_running,
                    help="The built-in sentences and plain text carry the surface tasks (position, punctuation, ...) and "
                    "the WordNet part of speech; a treebank carries every word's tags and its dependency tree.")


def treebank_data(source: str, read: Callable[[bytes, str], tb.Treebank | str]) -> ProbeData | None:
    """The UD EWT sentences or an uploaded labelled file, with a count slider; None after saying what is missing.
    read: read_labelled, or a cached version of it (viz_app/cache.py's labelled_file)."""
    return ud_ewt_data() if source == UD_EWT else uploaded_data(read)


def ud_ewt_data() -> ProbeData:
    dev, test = tb.builtin_treebank("dev"), tb.builtin_treebank("test")
    count = st.slider("How many sentences", MIN_SENTENCES, min(len(dev), len(test)), value=UD_SENTENCES,
                      key="probes_ud_count", bind="query-params", persist_state="session",
                      help="From each file: the first N of dev train the probes, the first N of test score them.")
    st.caption("Universal Dependencies English Web Treebank (Silveira et al. 2014), CC BY-SA 4.0: weblogs, "
               "newsgroups, e-mail, reviews and answers, with every word's part of speech and its dependency tree.")
    return ProbeData(_first(dev, count), _first(test, count),
                     f"the first {count} sentences of UD English EWT dev (training) and of its test file (scoring)",
                     (UD_EWT, count))


def uploaded_data(read: Callable[[bytes, str], tb.Treebank | str]) -> ProbeData | None:
    upload = st.file_uploader(
        "A CoNLL-U file (any Universal Dependencies treebank), or one token per line with label columns after the "
        "word (e.g. CoNLL-2003) and a blank line between sentences",
        type=LABELLED_TYPES, key="probes_labelled_file",
        help=f"At most {MAX_LABELLED_BYTES / 1e6:.0f} MB. Every label column becomes a task; a CoNLL-U file's heads "
        "give the tree tasks too. Sentences with a problem are left out and counted.",
    )
    if upload is None:
        st.info("Choose a .conllu, .conll, .tsv or .txt file with labels to probe your own data.")
        return None
    if upload.size > MAX_LABELLED_BYTES:
        st.warning(f"That file is {upload.size:,} bytes; the limit is {MAX_LABELLED_BYTES:,} bytes. Use a part of it.")
        return None
    data = upload.getvalue()
    treebank = read(data, upload.name)
    if isinstance(treebank, str):
        st.warning(escape_markdown(treebank))
        return None
    if treebank.skipped:
        st.warning(f"{escape_markdown(treebank.skipped_summary(LEFT_OUT_NAMED))}. The other {len(treebank)} are used.")
    if len(treebank) < MIN_SENTENCES:
        st.warning(f"{len(treebank)} usable sentence(s) in that file; the probes need at least {MIN_SENTENCES}.")
        return None
    digest = hashlib.sha1(data).hexdigest()
    count = st.slider("How many sentences", min(MIN_SENTENCES, len(treebank)), len(treebank), value=len(treebank),
                      key=f"probes_file_count_{digest[:12]}", help="The first N sentences of the file.")  # one per file
    name = escape_markdown(treebank.name)
    return ProbeData(_first(treebank, count), None,
                     f"{count} sentences of {name}: 80% train the probes, 20% (picked by the seed) score them",
                     (LABELLED, digest, upload.name, count))


def _first(treebank: tb.Treebank, count: int) -> tb.Treebank:
    return replace(treebank, sentences=treebank.sentences[:count])


# ---- settings ---------------------------------------------------------------------------------------------------

TREEBANK_TASKS = {  # what each task of a treebank asks; any other label column of a file is a word-tag task too
    "upos": "the word's universal part of speech (17 tags: NOUN, VERB, ADJ, ...)",
    "xpos": "the treebank's own, finer part-of-speech tag (for English, the Penn Treebank's tags)",
    "deprel": "the label of the arc from the word to its head (nsubj, obj, det, ...)",
    "arcs": "the label of a (head, dependent) pair of words, read from both words' vectors (Tenney et al. 2019's "
            "edge probing)",
    "distance": "how many arcs apart two words are in the tree: the structural distance probe (Hewitt & Manning "
                "2019), scored by how much of the tree the nearest-word tree recovers (UUAS)",
    "depth": "how many arcs below the root a word is: the structural depth probe (Hewitt & Manning 2019), scored by "
             "how often it finds the root",
}
PIECES = {"first": "its first word piece", "mean": "the mean of its pieces", "last": "its last word piece"}


def task_description(task: str) -> str:
    return TREEBANK_TASKS.get(task, f"the labels of the file's column “{escape_markdown(task)}”, one per word")


def task_picker(tasks: list[str]) -> list[str]:
    """The tasks this data supports; a stored choice that names none of them (another file) becomes all of them."""
    chosen = st.session_state.get("probe_treebank_tasks")
    if isinstance(chosen, list) and chosen and not set(chosen) & set(tasks):
        st.session_state["probe_treebank_tasks"] = list(tasks)
    state.clamp_subset("probe_treebank_tasks", tasks)
    picked = st.multiselect("Tasks", tasks, key="probe_treebank_tasks", persist_state="session")
    with st.expander("What each task asks"):
        st.markdown("\n".join(f"- **{escape_markdown(task)}**: {task_description(task)}" for task in tasks))
    return picked


def pieces_picker() -> str:
    state.clamp("probe_pieces", list(PIECES), "first")
    return st.radio("A word's vector is", list(PIECES), format_func=PIECES.get, key="probe_pieces",
                    persist_state="session",
                    help="BERT splits rare words into pieces (play, ##ing). Hewitt & Manning and most probing work take "
                    "the first piece; every result says which was used.")


def seed_input() -> int:
    return int(st.number_input(
        "Random seed", min_value=0, max_value=10_000, value=0, step=1, key="probe_seed", bind="query-params",
        persist_state="session",
        help="Picks which sentences are held out for scoring (when one file is split) and the control task's random "
        "labels: change it to see how much the scores move by chance.",
    ))


def mdl_toggle(tasks: list[str]) -> bool:
    tags = [task for task in tasks if task not in tb.TREE_TASKS]  # MDL is for word tags
    return st.toggle("Description length (MDL)", key="probe_mdl", persist_state="session", disabled=not tags,
                     help="Voita & Titov 2020: how many bits it takes to send the labels when a probe learns them as "
                     "it goes (online code), for the word-tag tasks and their controls. A shorter code means the layer "
                     "makes the labels easier to learn. It takes longer than the accuracy alone.")


def _stop_running() -> None:
    """Other data: wait for the run switch again (a treebank run can take minutes)."""
    st.session_state["probe_run"] = False


def run_toggle() -> bool:
    return st.toggle("Run the probes", key="probe_run", help="A few seconds to a few minutes, by the number of sentences")
