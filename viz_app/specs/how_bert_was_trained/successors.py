"""The "What came after BERT" section of the "How BERT was trained" page, its plain part: what RoBERTa, ALBERT and
ELECTRA changed in pre-training (`CHANGES`), and one tiny run per objective through the project's own trainer
(bert/pretraining/successors.py) as a computation (`RUNS`, run by viz_app/heavy.py's `run`: the server's budget
and a heavy slot, its cost stated before it starts, stopped by any change of the page, kept per text and
settings). The section's widgets: viz_app/app/successor_runs.py. Plain Python."""
from __future__ import annotations

from dataclasses import dataclass

from bert.pretraining.successors import ComparisonSettings, compare, comparison_cost
from viz_app.specs.base import Computation

CHANGES = (  # (who, what changed, its paper)
    ("RoBERTa", "masks redrawn every time a sentence comes back (dynamic), instead of once when the data was prepared "
                "(static); no next-sentence pairs: each input is full sentences packed together", "Liu et al. 2019, sections 4.1 and 4.2"),
    ("ALBERT", "spans of up to 3 word pieces hidden together, short spans the most often (p(n) ∝ 1/n); next-sentence pairs "
               "replaced by sentence order: are A and B in order, or swapped?", "Lan et al. 2020, section 4.1"),
    ("ELECTRA", "a small generator (a masked LM) fills the hidden positions with its own guesses; the model, the "
                "discriminator, says for every token whether it is the original or a replacement, so every token teaches "
                "it something, not only the 15% hidden (loss = generator's + 50 × discriminator's)", "Clark et al. 2020, section 2"),
)
RUN_NOTE = ("One tiny model per objective (1 layer, hidden 64), trained from scratch on your text and {sentences} sentences "
            "of the tiny corpus (bert/data/tiny_corpus.txt.gz), so that each sentence comes back several times; the held-out "
            "sentences are ones none of them trains on. A miniature, seconds of one core: what the papers found with "
            "weeks of TPUs need not show here, and a different seed can order the lines differently.")


@dataclass(frozen=True)
class RunsWork:
    text: str  # the visitor's text, trained on with the tiny corpus
    settings: ComparisonSettings
    objectives: tuple[str, ...]  # keys of OBJECTIVES, in their order
    vocab_size: int  # the built-in model's vocabulary, which the tiny models read


RUNS = Computation(  # one tiny model per objective, on the threads the server set at start
    "how_bert_was_trained.successors", lambda work: "Training one tiny model per objective",
    cost=lambda inputs, work: comparison_cost(work.settings, work.objectives),
    compute=lambda inputs, work: compare(work.text, work.settings, work.objectives),
    counted_at=lambda inputs, work: work.settings.config("bert", work.vocab_size), work=RunsWork)
