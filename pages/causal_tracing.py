"""Causal tracing: which layer and position make the model say a word? Activation patching on two sentences, or
noise on one sentence (Meng et al. 2022)."""
import streamlit as st

from bert.errors import InputTooLongError, InvalidInputError
from bert.layers import layer_label
from viz_app import heavy
from viz_app.app import show, state, widgets
from viz_app.specs import causal_tracing as spec
from viz_app.specs.causal_tracing import COMPARE, DIRECTION_LABELS, MODES, default_corrupt_of, pick_answer_foil

widgets.page_header(
    "Causal tracing",
    "Change one activation inside the model and watch its guess: that shows which layer and which position carry "
    "what makes the model say a word. Attention weights and probes show what goes with a guess; patching shows what "
    "causes it (Vig et al. 2020; Meng et al. 2022; Heimersheim & Nanda 2024).",
)
context = widgets.require(needs_input=False)
loaded = context.loaded
if not loaded.summary.has_mlm_head:
    st.warning("This model has no masked-LM head, so it makes no guess to trace. Pick minilm or a BERT with its MLM head.")
    st.stop()


def word_choice(column, label: str, key: str, guesses: list[str], chosen: str, help: str) -> str:
    """One of the model's top guesses (the page's pick first), or any word typed in."""
    options = list(dict.fromkeys([chosen, *guesses])) if chosen else guesses
    if not options:
        return ""
    return column.selectbox(label, options, accept_new_options=True, help=help, **state.kept(key, options))


def guesses_at(text: str) -> list[str]:
    """The model's top whole-word guesses at the one [MASK] of `text` (a pass, run as a computation)."""
    guesses = heavy.run(context, spec.GUESSES, spec.GuessesWork(text), key="causal_tracing.guesses")
    if guesses is None:
        st.stop()
    return list(guesses)


def stop_with(problem: InvalidInputError) -> None:
    if isinstance(problem, InputTooLongError):  # the library's message names its own argument: say it in the page's words
        show.warning("That sentence is {} tokens long, but the model reads at most {}. Shorten it.",
                     problem.num_tokens, problem.max_tokens)
    else:
        show.warning("{}", problem)  # it quotes the words typed or linked
    st.stop()


mode = st.radio("Experiment", list(MODES), horizontal=True, format_func=MODES.get, **state.kept("causal_mode", list(MODES)))
layers = loaded.summary.layers

if mode == "two":
    columns = st.columns(2)
    clean = columns[0].text_input("Clean sentence (its guess is what patching restores)", **state.kept("patch_clean"),
                                  on_change=state.reset, args=("patch_answer", "patch_foil"))
    corrupted = columns[1].text_input("Corrupted sentence (as many word pieces, one word changed)", **state.kept("patch_corrupted"),
                                      on_change=state.reset, args=("patch_answer", "patch_foil"))
    clean_guesses, corrupted_guesses = guesses_at(clean), guesses_at(corrupted)
    answer, foil = pick_answer_foil(clean_guesses, corrupted_guesses, st.session_state.get("patch_answer"),
                                    st.session_state.get("patch_foil"))
    columns = st.columns(4)
    word_choice(columns[0], "Answer", "patch_answer", clean_guesses, answer,
                         "The word the clean sentence should favour; its top guesses are listed first. Type any other word.")
    word_choice(columns[1], "Foil", "patch_foil", corrupted_guesses + clean_guesses, foil,
                       "The word it is compared with; the corrupted sentence's top guesses are listed first.")
    direction = columns[2].radio("Patch", list(DIRECTION_LABELS), format_func=DIRECTION_LABELS.get,
                                 **state.kept("patch_direction", list(DIRECTION_LABELS)), help="Clean into corrupted: does this one activation restore the "
                                 "clean guess? Corrupted into clean: does it break it?")
    exact = columns[3].toggle("Exact sweep", **state.kept("patch_exact"),
                              help="One patched run per cell, many per forward pass. Off: attribution patching alone "
                                   "(one forward and one backward pass), fast even for long inputs.")
    columns = st.columns(2)
    with columns[0]:
        widgets.select_int("Heads by position: layer", "patch_head_layer", list(range(layers)),
                                        default=layers - 1, format_func=layer_label)
    if exact:  # the view reads it from the settings
        columns[1].radio("Compare attribution patching with the exact values on", list(COMPARE),
                                   horizontal=True, **state.kept("patch_compare", list(COMPARE)))
    settings = spec.Settings.from_state(st.session_state)  # as a link or a lesson step gives it
    planned = spec.computations(settings)
    try:  # through the server's budget and a heavy slot (viz_app/heavy.py), each priced before it starts
        results = {"attribution": heavy.run(context, *planned["attribution"])}
        if results["attribution"] is None:
            st.stop()
        if exact:
            results["exact"] = heavy.run(context, *planned["exact"])
            if results["exact"] is None:
                st.caption("Attribution patching is shown below instead.")
    except InvalidInputError as problem:
        stop_with(problem)
    result = results.get("exact") or results["attribution"]
    base, source = ("corrupted", "clean") if direction == "denoise" else ("clean", "corrupted")
    show.markdown("logit(**{}**) − logit(**{}**) at the [MASK]: **{:.3f}** in the clean sentence, **{:.3f}** in the "
                  "corrupted one. Each cell: (patched − {}) / ({} − {}).", result.answer, result.foil,
                  result.clean_metric, result.corrupted_metric, base, source, base)
    for name, chart in spec.view(settings, context, results).items():
        widgets.show_chart(chart, key=name)
    widgets.download_view("Causal tracing: two sentences", "causal_tracing")
else:
    text = st.text_input("Sentence with one [MASK]", **state.kept("trace_text"), on_change=state.reset, args=("trace_corrupt", "trace_answer"))
    try:
        encoding = loaded.tokenizer.encode(text, max_length=loaded.summary.max_positions)
    except InvalidInputError as problem:
        stop_with(problem)
    masks = len(loaded.tokenizer.mask_positions(encoding))
    if masks != 1:
        show.warning("The sentence has {} [MASK]; causal tracing needs exactly one, where the answer goes.", masks)
        st.stop()
    positions = [i for i, special in enumerate(encoding.special) if not special and encoding.input_ids[i] != loaded.tokenizer.mask_id]
    state.clamp_subset("trace_corrupt", positions, default_corrupt_of(encoding))
    columns = st.columns([3, 1, 1])
    corrupt = columns[0].multiselect("Tokens to noise (say, the subject)", positions, **state.kept("trace_corrupt"),
                                     format_func=lambda i: f"{i} {encoding.tokens[i]}")
    guesses = guesses_at(text)
    answer = word_choice(columns[1], "Answer", "trace_answer", guesses, st.session_state.get("trace_answer") or "",
                         "The word whose probability is traced; the model's top guesses are listed first.")
    samples = columns[2].slider("Noise samples", 1, 20, **state.kept("trace_samples", range(1, 21)))
    blocks = st.toggle("Also restore the attention and MLP outputs", **state.kept("trace_blocks"))
    if not corrupt:
        st.info("Choose at least one token to noise: the words whose information the trace follows.")
        st.stop()
    if not answer:
        st.warning("The model makes no whole-word guess here to trace.")
        st.stop()
    settings = spec.Settings.from_state(st.session_state)
    try:
        trace = heavy.run(context, *spec.computations(settings)["trace"])
    except InvalidInputError as problem:
        stop_with(problem)
    if trace is None:
        st.stop()
    show.markdown("p(**{}**) at the [MASK]: **{:.3f}** in the clean run, **{:.3f}** with noise on {} (standard "
                  "deviation {:.3f}, 3 times the token embeddings', averaged over {} samples).", trace.answer,
                  trace.clean_probability, trace.corrupted_probability, ', '.join(encoding.tokens[i] for i in corrupt),
                  trace.noise_std, trace.samples)
    for name, chart in spec.view(settings, context, {"trace": trace}).items():
        widgets.show_chart(chart, key=f"trace_{name}")
    widgets.download_view("Causal tracing: one sentence with noise", "causal_tracing_noise")
