"""The words and the shipped-run figures of the "How BERT was trained" page: what each section says, and the
masked-LM / left-to-right and size comparisons drawn from the logs recipes/tiny_runs.py ships."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from viz_app.app.text import Markdown, joined, markdown

from bert.pretraining.miniature import READING_DIRECTION_RUNS, SIZES, RunLog, TinySettings
from bert.pretraining.nsp import IS_NEXT
from bert.pretraining.walkthrough import MaskedExample, PairExample
from viz_app.app import show, widgets
from viz_app.charts import training as charts
from viz_app.server.training_room import shipped_log

PAIRS_NOTE = {
    "nsp": "Half the pairs keep the true next sentence (label IsNext), half get a random sentence from other text (NotNext): "
           "the model learns from [CLS]'s final vector which is which (Devlin et al. 2019, section 3.1). Segment ids tell "
           "it which tokens are A (0) and which are B (1). Here the random sentences come from the app's built-in sentences.",
    "sop": "Sentence-order prediction (ALBERT, Lan et al. 2020) keeps both sentences from the same text and swaps them half "
           "the time, so topic alone cannot give the answer. The built-in model's head was trained for next-sentence pairs, "
           "so its guess here answers the other question.",
}
LOSS_NOTE = ("The masked-LM loss is the mean of −log p(hidden token) over the chosen positions only; every other position "
             "costs nothing. The next-sentence loss is −log p(the pair's true label). Training lowers their sum "
             "(Devlin et al. 2019, appendix A). Computed here by the trainer's own loss function with the built-in model, "
             "without dropout.")
LIVE_NOTE = ("A BERT small enough to learn on a laptop CPU in a few minutes, from scratch, with the project's own trainer: "
             "35,094 example sentences from WordNet 3.0 and a vocabulary of 8,000 word pieces. Watch the loss fall and the "
             "guesses for the hidden word go from noise to the most frequent words (the, of, a): in a few minutes that is "
             "as far as a model this small gets; making sense of a sentence takes far longer. One run trains at a time on "
             "this server; the same settings and seed give the same run.")
DIRECTION_NOTE = ("Devlin et al. (2019, figure 5) compare BERT with a left-to-right model, which can only look at the words "
                  "before a position. Here the same tiny model is trained twice, with the same data, steps and masked-token "
                  "loss; the second one's attention is limited to the left (a causal mask). The test: sentences written for "
                  "this project whose hidden word is given away only by the words after it (bert/data/right_context_cloze.tsv). "
                  "A miniature: minutes of one CPU core, not days of TPUs, and far from where BERT's advantage on such "
                  "sentences appears; the figures below say what it does and does not show.")
SIZE_NOTE = ("Devlin et al. (2019, table 6) found that bigger models reach lower held-out perplexity. Here three tiny sizes "
             "train for the same steps on the same text; the loss is on held-out sentences none of them trained on.")


def masking_summary(masked: MaskedExample) -> str:
    maskable = sum(token not in ("[CLS]", "[SEP]") for token in masked.tokens)
    counts = {kind: masked.kinds.count(kind) for kind in ("mask", "random", "kept")}
    return (f"Seed {masked.seed}: {len(masked.chosen)} of {maskable} word pieces chosen (15% on average); of those "
            f"{counts['mask']} became [MASK], {counts['random']} a random token and {counts['kept']} stayed (80%, 10% "
            "and 10% on average). The loss only asks about the chosen ones, so the model cannot tell from the input which "
            "words it will be asked about: [MASK] never appears when BERT is used later (Devlin et al. 2019, section 3.1). "
            "This is the draw the trainer makes (bert/pretraining/masking.py) for this text at step 0 of a run with this seed.")


def pair_label(pair: PairExample, task: str) -> str:
    if task == "sop":
        return "in order" if pair.label == IS_NEXT else "swapped"
    return "B is the true next sentence" if pair.label == IS_NEXT else "B is a random sentence"


def _shipped(settings: tuple[TinySettings, ...], describe) -> dict[str, RunLog]:
    logs = {describe(s): shipped_log(s) for s in settings}
    return {label: log for label, log in logs.items() if log is not None}


def direction_comparison() -> None:
    runs = _shipped(READING_DIRECTION_RUNS, lambda s: "left-to-right" if s.causal else "masked LM")
    if len(runs) < 2:
        st.info("The shipped runs are missing: make them with `python recipes/tiny_runs.py`.")
        return
    widgets.show_chart(charts.loss_curves(runs, "Held-out loss, masked LM and left-to-right", heldout_only=True), key="direction_loss")
    widgets.show_chart(charts.cloze_chart(runs), key="direction_cloze")
    rows = {label: run.right_context for label, run in runs.items()}
    show.markdown("{}", joined(" · ", (markdown("**{}** after {} steps: answer loss {:.2f}, {:.0%} top-1, {:.0%} top-5 of "
                                                "{} sentences", label, runs[label].evals[-1]['step'], r['loss'], r['top1'],
                                                r['top5'], r['sentences']) for label, r in rows.items())))
    table = pd.DataFrame({"sentence": [r["sentence"] for r in rows["masked LM"]["per_sentence"]],
                          "answer": ["/".join(r["answers"]) for r in rows["masked LM"]["per_sentence"]],
                          **{f"{label}: rank of the answer": [r["answer_rank"] for r in rows[label]["per_sentence"]] for label in rows},
                          **{f"{label}: 5 best guesses": [", ".join(r["guesses"]) for r in rows[label]["per_sentence"]] for label in rows}})
    with st.expander("Every sentence's guesses"):
        st.dataframe(table, hide_index=True)
    show.markdown("{}", direction_reading(runs["masked LM"], runs["left-to-right"]))
    show.caption("{}", _where(runs))


def direction_reading(mlm: RunLog, ltr: RunLog) -> Markdown:
    """What the two shipped runs show, in words computed from their logs (so a rerun cannot leave it stale)."""
    steps, ours, theirs = mlm.evals[-1]["step"], mlm.evals[-1]["heldout_loss"], ltr.evals[-1]["heldout_loss"]
    text = (f"After {steps} steps the masked LM's held-out loss is {ours:.2f} against {theirs:.2f} for the "
            f"left-to-right model: " + ("seeing both sides already helps on ordinary text. " if ours < theirs else "no advantage yet. "))
    a, b = mlm.right_context, ltr.right_context
    if a["top5"] > b["top5"] or a.get("loss", 99) < b.get("loss", 0):
        return markdown("**Reading it.** {}", text + "On the right-context sentences the masked LM is ahead as well.")
    return markdown("**Reading it.** {}", text + (
        f"On the right-context sentences it is not ahead: top-5 {a['top5']:.0%} against {b['top5']:.0%}, answer "
        f"loss {a.get('loss', float('nan')):.2f} against {b.get('loss', float('nan')):.2f}. Models this small, "
        "trained this briefly, have not yet learned to use the clue after the gap; "
        "the paper's figure 5 follows BERT-base for a million steps."))


def size_comparison() -> None:
    runs = _shipped(SIZES, lambda s: f"L{s.layers} H{s.hidden}")
    if len(runs) < 2:
        st.info("The shipped runs are missing: make them with `python recipes/tiny_runs.py`.")
        return
    widgets.show_chart(charts.size_chart(runs), key="size_points")
    widgets.show_chart(charts.loss_curves(runs, "Held-out loss while they learn", heldout_only=True), key="size_loss")
    show.caption("{}", _where(runs))


def _where(runs: dict[str, RunLog]) -> Markdown:
    times = ", ".join(f"{label} {run.seconds:.0f} s" for label, run in runs.items())
    first = next(iter(runs.values())).environment
    return markdown("Time per run: {}; measured {} on {}, load average {} (a shared machine), by "
                    "`python recipes/tiny_runs.py`.", times, first.get('date', '?'), first.get('machine', '?'),
                    first.get('load_average_1min', '?'))
