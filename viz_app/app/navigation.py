"""Every page of the app, once: one `Page` entry each, with everything the app knows about the page besides its
file in pages/. Adding a page is that file plus one entry here (docs/app.md, "Adding a page").

Everything else is read from these entries: the navigation Home.py builds (`GROUPS`), which pages show the
sentence box (`NO_SENTENCE_BOX`), every URL parameter a link or a lesson's step can set (`LINK_PARAMS`: the shared
ones of viz_app/app/url_params.py and each page's own), the widgets that keep a value on one page only (or in
the sidebar), outside the link (`OWN_WIDGETS`), the values a lesson may give (`Param.choices`), the pages a lesson
step opens and how it draws them (`spec`, a page's module in viz_app/specs/). Plain Python.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from bert.analysis.attention.attention_stats import STATISTICS
from bert.analysis.attention.mixing import METHODS as MIXING_METHODS
from bert.analysis.attribution.saliency import METHODS
from bert.analysis.causal import ablation
from bert.analysis.causal.alignment import METHODS as ALIGNMENT_METHODS
from bert.analysis.probing.task_table import TEXT_TASKS
from bert.analysis.representations.self_similarity import EXAMPLES
from bert.data.variable_tasks import TASKS as VARIABLE_TASKS
from bert.pretraining.miniature import TinySettings
from bert.pretraining.successors import OBJECTIVES, ComparisonSettings
from viz_app.app.url_params import SHARED, Param, choice, flag, heads, integer, ints, text, words


@dataclass(frozen=True)
class Page:
    url_path: str  # the address: http://host:8501/<url_path> ("prediction" is the app's default page, at /)
    title: str
    icon: str
    group: str  # the navigation's heading it is listed under
    reads_sentence: bool = True  # False: no sentence box at the top (the page has its own inputs or none)
    params: dict[str, Param] = field(default_factory=dict)  # its URL parameters (a link or a lesson's step sets them)
    # its widgets that keep their value (viz_app/app/state.py `kept`) on this page only, outside the link: key ->
    # default (None: the page picks, e.g. the first option)
    own_widgets: dict[str, object] = field(default_factory=dict)
    spec: str | None = None  # its spec's module in viz_app/specs/ (viz_app/specs/base.py), named by url_path
    old_paths: tuple[str, ...] = ()  # addresses it had before: links and lesson files naming them still open it

    @property
    def file(self) -> str:
        """Its script in the top-level pages/ folder, named by its address."""
        return f"{self.url_path}.py"


# Parameters several pages read: one object each, so every page reads the same spelling and default.
UNITS = choice(("word pieces", "words"))  # Clark et al. 2019 merged a word's pieces
SALIENCY_METHOD = choice(tuple(METHODS), "gradient_x_input")  # one pass and its gradient: the cheapest (docs/app.md)
# The first screens of Corpus search and Features read this many of the built-in sentences (they come in a shuffled
# order, so the first ones are a fair sample): a quarter of the set, a quarter of the wait; all of them on request
FIRST_SCREEN_SENTENCES = 250
FIRST_SCREEN_CORPUS = f"builtin-{FIRST_SCREEN_SENTENCES}"  # the Features scans' first corpus: those sentences
CORPUS = choice({  # the corpus a features or neurons scan reads (viz_app/specs/features.py): built in, uploaded, an index
    FIRST_SCREEN_CORPUS:
        f"the first {FIRST_SCREEN_SENTENCES} built-in sentences (a quick first scan)",
    "builtin": "the 992 built-in sentences (WordNet examples)",
    "ud-ewt-test": "UD English EWT test (2,077 sentences, with parts of speech)",
    "upload": "a text file of yours (one sentence per line)",
    "index": "a corpus index on this machine (built with python -m bert index)",  # offered to who may pick folders
})

SENTENCES_FROM = choice(("Built-in sentences (WordNet examples)", "Upload a .txt file"))  # a sentence set's source

SEE_INSIDE, EXPERIMENTS, TRAINED, FINE_TUNING, TEACHING = (
    "See inside", "Experiments", "How it was trained", "Fine-tuning", "Teaching")
REGISTRY: tuple[Page, ...] = (
    Page("prediction", "Masked prediction", ":material/edit_note:", SEE_INSIDE,
         params={"top_k": integer(10),
                 "prediction_shown": ints([0, 1]),  # the masks whose chart is drawn, when there are more than four
                 "generator": text(None),  # ELECTRA's generator for a discriminator's blanks; None: the first on offer
                 "generator_folder": text(""), "generator_sample": flag(False), "generator_seed": integer(0)},
         spec="prediction"),
    Page("attention", "Attention", ":material/grid_on:", SEE_INSIDE, params={
        "focus": integer(1), "hide_special": flag(False), "layer": integer(0), "head": integer(0),
        "statistic": choice(tuple(STATISTICS), "entropy"), "units": UNITS, "neuron_key": integer(None),
    }, spec="attention"),
    Page("embeddings", "Embeddings", ":material/scatter_plot:", SEE_INSIDE,
         params={"k": integer(16)}, spec="embeddings"),
    Page("mlp", "MLP activations", ":material/bolt:", SEE_INSIDE, params={
        "mlp_token": integer(1), "neuron": integer(None),  # None: the strongest neuron of the chosen token
        "mlp_layer": integer(0), "neurons_shown": integer(48), "units": UNITS,
    }, spec="mlp"),
    Page("architecture", "Architecture", ":material/account_tree:", SEE_INSIDE, spec="architecture"),
    # One pass, step by step (viz_app/specs/one_pass.py): the opened layer and head, the followed token (None: the
    # first [MASK]), the final softmax's temperature, the chosen head zeroed, the step opened (the diagram's blocks)
    Page("one_pass", "One pass, step by step", ":material/timeline:", SEE_INSIDE, params={
        "pass_layer": integer(0), "pass_head": integer(0), "pass_token": integer(None),
        "pass_temperature": choice(("0.25", "0.5", "1", "2", "4"), "1"), "pass_zero_head": flag(False),
        "pass_step": choice({"pieces": "Word pieces", "embeddings": "Embeddings", "attention": "Attention: one head",
                             "projection": "Heads joined", "mlp": "MLP", "layers": "Every layer",
                             "guess": "The guess"}, "pieces"),
        # the number expanded into its sum: a cell of Q, K or V (its dimension), and the key of a score and a weight
        "pass_cell": choice({"q": "Q (queries)", "k": "K (keys)", "v": "V (values)"}, "q"),
        "pass_dimension": integer(0), "pass_key": integer(None),  # None: the key the followed token weighs most
    }, spec="one_pass"),
    # Layer probes (viz_app/app/probe_data.py): lists, toggles, choices shown by a label, None defaults
    Page("probes", "Layer probes", ":material/science:", EXPERIMENTS, reads_sentence=False, params={
        "probe_tasks": words(["position", "continuation", "pos"], (*TEXT_TASKS, "pos")),  # the built-in sentences'
        "probes_count": integer(100), "probes_ud_count": integer(200), "probe_seed": integer(0),  # UD: from each file
        "probes_source": choice(("wordnet", "ud_ewt", "labelled", "text")),
        "probe_treebank_tasks": words(["upos", "deprel", "distance", "depth"]),
        "probe_pieces": choice(("first", "mean", "last")), "probe_mdl": flag(False),
        "probe_measure": text(None),  # None: the first measure of the run
        "probe_tree_sentence": integer(0),  # index of a scored sentence, shown by its text
        "probe_tree_layer": integer(None),  # shown by its name; None: the distance probe's best layer
        "probe_erase": flag(False),  # amnesic probing of one task at one layer
        "probe_erase_task": text(None),  # None: the first label task of the run
        "probe_erase_layer": integer(None),  # shown by its name; None: the task's best layer
    }, spec="probes"),
    Page("logit_lens", "Logit lens", ":material/layers:", EXPERIMENTS,
         params={"lens_mask": integer(None)}, spec="logit_lens"),  # None: the first [MASK]
    Page("head_ablation", "Head ablation", ":material/content_cut:", EXPERIMENTS, params={
        "ablation_mask": integer(None), "ablation_mode": choice(ablation.MODES), "ablation_heads": heads(),
        "ablation_layers": ints([]),
    }, own_widgets={"ablation_rank": False}, spec="head_ablation"),
    # None: the page picks (the top guesses, the first content word, the last layer); see viz_app/specs/causal_tracing.py
    Page("causal_tracing", "Causal tracing", ":material/route:", EXPERIMENTS,
         reads_sentence=False, params={
             "causal_mode": choice({"two": "Two sentences (activation patching)",
                                    "one": "One sentence with noise (causal tracing)"}),
             "patch_clean": text("The man said that [MASK] was tired."),
             "patch_corrupted": text("The woman said that [MASK] was tired."),
             "patch_answer": text(None), "patch_foil": text(None),
             "patch_direction": choice({"denoise": "clean into corrupted", "noise": "corrupted into clean"}),
             "patch_exact": flag(True), "patch_head_layer": integer(None),
             "patch_compare": choice(("residual", "attention", "mlp", "heads")),
             "trace_text": text("The man said that [MASK] was tired."),
             "trace_corrupt": ints(None), "trace_answer": text(None),
             "trace_samples": integer(10), "trace_blocks": flag(False),
         }, spec="causal_tracing"),
    # Context mixing (formerly at /rollout): the method, the one beside it (or "none"), the layer (None: the last),
    # the token whose row is drawn as bars (None: the first [MASK], else the first word)
    Page("mixing", "What each word takes", ":material/water:", EXPERIMENTS, params={
        "mixing_method": choice(tuple(MIXING_METHODS), "attention"),
        "mixing_compare": choice((*MIXING_METHODS, "none"), "alti"),  # "none": viz_app/specs/mixing.py NO_SECOND
        "rollout_layer": integer(None), "mixing_query": integer(None),
        "rollout_flow": flag(False),  # attention flow asked for
    }, spec="mixing", old_paths=("rollout",)),
    # Circuits of a clean/counterfactual pair: a built-in pair's index (-1: the visitor's own, the four texts below),
    # the method (EAP-IG by default: within a class's budget), the edges drawn, the edge or node patched live
    Page("circuits", "Which connections carry the answer?", ":material/hub:", EXPERIMENTS, reads_sentence=False,
         params={
             "circuit_pair": integer(0), "circuit_clean": text("the keys to the cabinet [MASK] on the table ."),
             "circuit_corrupt": text("the key to the cabinet [MASK] on the table ."),
             "circuit_answer": text("are"), "circuit_foil": text("is"),
             "circuit_method": choice(("eap-ig", "eap", "exact"), "eap-ig"), "circuit_steps": integer(5),
             "circuit_shown": integer(20), "circuit_part": text(None),
         }, spec="circuits"),
    # The attribution graph of the sentence's [MASK] (viz_app/specs/attribution_graph.py): the word explained ("" the
    # top guess) and its foil, the cap on features, the two pruning thresholds (percent), the feature switched off,
    # the features merged into one supernode and its name
    Page("attribution_graph", "How did it get to that guess?", ":material/account_tree:", EXPERIMENTS, params={
        "graph_target": text(""), "graph_foil": text(""), "graph_max_features": integer(200),
        "graph_node_threshold": integer(80), "graph_edge_threshold": integer(98), "graph_node": text(""),
        "graph_merged": words([]), "graph_merged_name": text(""),
    }, spec="attribution_graph"),
    # Where is the variable? (viz_app/specs/variable.py): the pairs (a task, or "upload"), the method, k, its training
    # steps, pairs and seed (the default method fits without training: a class opens it in a few passes), the site (a layer from 0, a position role), the sweep's grids, the visitor's two sentences
    Page("variable", "Where is the variable?", ":material/my_location:", EXPERIMENTS, reads_sentence=False, params={
        "variable_task": choice({**VARIABLE_TASKS, "upload": "your own pairs (a .tsv or .jsonl file)"}, "number-pp"),
        "variable_method": choice(ALIGNMENT_METHODS, "mean-diff"), "variable_dims": integer(1), "variable_steps": integer(50),
        "variable_pairs": integer(64), "variable_seed": integer(0), "variable_layer": integer(0),
        "variable_position": choice({"differs": "the word that differs", "mask": "the [MASK]", "subject": "the subject"}),
        "variable_sweep": flag(False),
        "variable_sentence": text("The dog near the cars [MASK] old ."),
        "variable_source": text("The dogs near the cars [MASK] old ."),
    }, spec="variable"),
    Page("head_statistics", "Head statistics", ":material/bar_chart:", EXPERIMENTS,
         reads_sentence=False, params={
             "stats_pairs": flag(True), "stats_count": integer(200),
             "stats_statistic": choice(tuple(STATISTICS), "sep"),
         }, spec="head_statistics"),
    Page("saliency", "Saliency", ":material/highlight:", EXPERIMENTS, params={
        "saliency_mask": integer(None), "saliency_method": SALIENCY_METHOD, "saliency_steps": integer(32),
        "saliency_samples": integer(25), "units": UNITS,
    }, own_widgets={"saliency_target": None, "saliency_foil": None,  # a guess of this sentence's: the top one, none
                    "saliency_deletion": False}, spec="saliency"),
    Page("corpus_search", "Corpus search", ":material/manage_search:", EXPERIMENTS, params={
        "search_position": integer(None), "search_layer": integer(None),  # None: the first token, the last layer
        "search_by": choice(("layer", "head")),  # a layer's output, or one head's output
        "search_head": integer(0), "search_k": integer(10), "search_corpus": SENTENCES_FROM,
        "search_count": integer(FIRST_SCREEN_SENTENCES),  # the first this many built-in sentences are searched
    }, spec="corpus_search"),
    Page("word_contexts", "One word, many contexts", ":material/compare_arrows:", EXPERIMENTS,
         reads_sentence=False, params={"contexts_layer": integer(None), "contexts_word": text("bank"),
                                       "contexts_sentences": text("\n".join(EXAMPLES["bank"]))}, spec="word_contexts"),
    Page("features", "Features", ":material/category:", EXPERIMENTS, params={
        "features_look_at": choice(("Sparse-autoencoder features", "MLP neurons")),
        "features_shown": integer(24), "features_corpus": CORPUS, "neurons_layer": integer(0), "neurons_corpus": CORPUS,
    }, own_widgets={"features_sae": None, "features_feature": None, "neurons_neuron": None,  # None: the strongest here
                    "features_factor": None, "features_corpus_index": None, "neurons_corpus_index": None},
         spec="features"),
    # Its own text, the masks' draw, the pairs, the live run's and the successors' (viz_app/app/live_run.py, successor_runs.py)
    Page("how_bert_was_trained", "How BERT was trained", ":material/model_training:", TRAINED,
         reads_sentence=False, params={
        "trained_text": text("The man went to the store. He bought a gallon of milk. Then he walked home in the rain."),
        "mask_seed": integer(0), "mask_whole_word": flag(False),
        "pair_task": choice({"nsp": "Next sentence (BERT): B follows A, or is a random sentence",
                             "sop": "Sentence order (ALBERT): B follows A, or the two are swapped"}),
        "tiny_size": choice({"1": "1 layer, hidden 64", "2": "2 layers, hidden 128", "4": "4 layers, hidden 256"}, "2"),
        "tiny_steps": integer(TinySettings.steps), "tiny_seed": integer(0),
        "tiny_attention": choice({"both": "both sides (masked LM, as BERT)", "left": "left side only (left-to-right)"}),
        "successors_steps": integer(ComparisonSettings.steps), "successors_seed": integer(0),
        "successors_objectives": words(list(OBJECTIVES), tuple(OBJECTIVES)),
    }, own_widgets={"tiny_attention_step": None}),  # None: the run's last evaluation
    Page("sentence_tasks", "Sentence tasks", ":material/rule:", FINE_TUNING, params={
        "tasks_method": SALIENCY_METHOD,
        "tasks_tag_token": integer(None),  # the token whose label is explained; None: the first word token
        "tasks_class": text(None),  # None: the top class
        "tasks_explain_nsp": flag(False),  # the next-sentence answer's attributions shown
    }, spec="sentence_tasks"),
    Page("compare_models", "Compare two models", ":material/compare:", FINE_TUNING, params={
        "compare_with": text(None),  # model B's source; None: the page picks a partner for model A
        "compare_folder": text(), "compare_count": integer(100),
    }, spec="compare_models"),
    Page("lessons", "Lessons", ":material/school:", TEACHING,
         params={"lesson_name": text(None)}),  # a built-in lesson's name or "upload"; None: the first lesson
)
DEFAULT_PAGE = "prediction"

PAGES: dict[str, Page] = {page.url_path: page for page in REGISTRY}
GROUPS: dict[str, list[Page]] = {}
for _page in REGISTRY:
    GROUPS.setdefault(_page.group, []).append(_page)
NO_SENTENCE_BOX = frozenset(page.url_path for page in REGISTRY if not page.reads_sentence)
OLD_PATHS: dict[str, str] = {old: page.url_path for page in REGISTRY for old in page.old_paths}  # old -> its address


def current_path(url_path: str) -> str:
    """The page's address now, for an address a link or a lesson file may still use (`rollout` -> `mixing`)."""
    return OLD_PATHS.get(url_path, url_path)


def _link_params() -> dict[str, Param]:
    """The shared parameters and every page's own; a name two pages read must be the same `Param`."""
    found = dict(SHARED)
    for page in REGISTRY:
        for name, param in page.params.items():
            if found.setdefault(name, param) is not param:
                raise ValueError(f"the URL parameter {name!r} of page {page.url_path!r} is declared twice")
    return found


LINK_PARAMS: dict[str, Param] = _link_params()  # every parameter a link, or a lesson's step, can set
CHOICES: dict[str, tuple[str, ...]] = {name: tuple(param.choices) for name, param in LINK_PARAMS.items() if param.choices}


# The sidebar's widgets kept outside the link, on every page (viz_app/app/sidebar.py): the model picker's (the model
# travels in the link as MODEL_PARAM, the picker being two widgets) and the download box's hub name
SIDEBAR_WIDGETS: dict[str, object] = {"model_choice": None, "model_folder": None, "download_repo_id": "bert-base-uncased"}


def _own_widgets() -> dict[str, object]:
    """The sidebar's and every page's widgets kept outside the link; a key is listed once, and is never a URL
    parameter's."""
    found: dict[str, object] = dict(SIDEBAR_WIDGETS)
    for page in REGISTRY:
        for key, default in page.own_widgets.items():
            if key in found or key in LINK_PARAMS:
                raise ValueError(f"the widget key {key!r} of page {page.url_path!r} is declared twice")
            found[key] = default
    return found


OWN_WIDGETS: dict[str, object] = _own_widgets()  # key -> default of every widget kept outside the link


def default_of(key: str):
    """The registry's default of a kept widget: a URL parameter's, or a page's or the sidebar's own widget's."""
    return LINK_PARAMS[key].default if key in LINK_PARAMS else OWN_WIDGETS[key]
