"""Generated tasks for interchange interventions on a masked-language model: a causal variable and the [MASK] word
it decides, as templates with word lists (written for this project; no list is taken from elsewhere).

    pairs = task_pairs("number-pp")      # every base/source pair of the task, as VariablePair

- `number-pp`: the subject's number decides the verb ("is" / "are") across a prepositional phrase whose noun may
  have the other number ("The dog near the cars [MASK] old."), the agreement-attraction setting of Linzen et al.
  (2016) and CausalGym's `agr_sv_num_pp` (Arora et al. 2024).
- `number-rc`: the same across an object relative clause ("The dog that the boys saw [MASK] old.", CausalGym's
  `agr_sv_num_obj-relc`).
- `gender-pronoun`: the antecedent's gender decides the pronoun ("he" / "she") ("The king said that [MASK] was
  tired.", CausalGym's `agr_gender`).

A pair is two sentences of one template with nouns of the two values (every noun with every noun of the other
value, both orders); the variable's words are the subjects, their items the nouns' singular forms.
"""
from __future__ import annotations

import functools
import itertools

from .variable_pairs import VariablePair

# (singular, plural): common nouns that are one word piece in BERT's and RoBERTa's vocabularies, in both forms
NOUNS = [("dog", "dogs"), ("cat", "cats"), ("boy", "boys"), ("girl", "girls"), ("teacher", "teachers"),
         ("doctor", "doctors"), ("student", "students"), ("farmer", "farmers"), ("friend", "friends"),
         ("player", "players"), ("officer", "officers"), ("king", "kings"), ("writer", "writers"),
         ("singer", "singers"), ("driver", "drivers"), ("worker", "workers"), ("man", "men"), ("woman", "women"),
         ("child", "children"), ("soldier", "soldiers")]
ATTRACTORS = [("car", "cars"), ("tree", "trees"), ("house", "houses")]  # the noun between subject and verb
PP_TEMPLATES = ["The {subject} near the {attractor} [MASK] old .", "The {subject} behind the {attractor} [MASK] here .",
                "The {subject} by the {attractor} [MASK] tired .", "The {subject} with the {attractor} [MASK] happy .",
                "The {subject} next to the {attractor} [MASK] small .", "The {subject} under the {attractor} [MASK] ready ."]
RC_TEMPLATES = ["The {subject} that the {attractor} saw [MASK] old .", "The {subject} that the {attractor} liked [MASK] here .",
                "The {subject} that the {attractor} met [MASK] tired .", "The {subject} that the {attractor} knew [MASK] happy .",
                "The {subject} that the {attractor} found [MASK] small .", "The {subject} that the {attractor} helped [MASK] ready ."]
RC_ATTRACTORS = [("man", "men"), ("teacher", "teachers"), ("doctor", "doctors")]
MALE = ["man", "king", "father", "boy", "brother", "son", "uncle", "husband", "prince", "gentleman", "actor", "john",
        "james", "david", "michael", "peter", "george", "paul"]
FEMALE = ["woman", "queen", "mother", "girl", "sister", "daughter", "aunt", "wife", "princess", "lady", "actress", "mary",
          "sarah", "anna", "emma", "susan", "linda", "alice"]
GENDER_TEMPLATES = ["The {subject} said that [MASK] was tired .", "The {subject} knew that [MASK] would win .",
                    "The {subject} thought that [MASK] had lost the keys .", "When the {subject} came home , [MASK] was happy .",
                    "The {subject} told the driver that [MASK] was late .", "The {subject} hoped that [MASK] could stay ."]
NAMES = {"john", "james", "david", "michael", "peter", "george", "paul", "mary", "sarah", "anna", "emma", "susan", "linda", "alice"}
TASKS = {  # name -> what it tests, for --help and the docs
    "number-pp": "subject number decides the verb (is/are) across a prepositional phrase",
    "number-rc": "subject number decides the verb (is/are) across an object relative clause",
    "gender-pronoun": "the antecedent's gender decides the pronoun (he/she)",
}


@functools.lru_cache(maxsize=None)
def task_pairs(task: str) -> tuple[VariablePair, ...]:
    """Every pair of a task, in a fixed order (the analysis splits and samples them, seeded); made once."""
    if task == "number-pp":
        return tuple(_number_pairs(PP_TEMPLATES, ATTRACTORS))
    if task == "number-rc":
        return tuple(_number_pairs(RC_TEMPLATES, RC_ATTRACTORS))
    if task == "gender-pronoun":
        return tuple(_gender_pairs())
    from ..errors import InvalidInputError

    raise InvalidInputError(f"unknown task {task!r}; choose from {', '.join(TASKS)}, or give your own pairs file")


def _number_pairs(templates: list[str], attractors: list[tuple[str, str]]) -> list[VariablePair]:
    pairs = []
    answers = {"singular": "is", "plural": "are"}
    for t, template in enumerate(templates):
        for attractor_forms, attractor_value in itertools.product(attractors, (0, 1)):
            attractor = attractor_forms[attractor_value]
            for (singular, plural), (other_singular, other_plural) in itertools.product(NOUNS, NOUNS):
                for (base, base_value, base_item), (source, source_value, source_item) in (
                    ((singular, "singular", singular), (other_plural, "plural", other_singular)),
                    ((plural, "plural", singular), (other_singular, "singular", other_singular)),
                ):
                    pairs.append(VariablePair(
                        template.format(subject=base, attractor=attractor), template.format(subject=source, attractor=attractor),
                        answers[base_value], answers[source_value], base, source, base_value, source_value, f"t{t}",
                        base_item, source_item))
    return pairs


def _gender_pairs() -> list[VariablePair]:
    pairs = []
    answers = {"male": "he", "female": "she"}
    for t, template in enumerate(GENDER_TEMPLATES):
        for male, female in itertools.product(MALE, FEMALE):
            if (male in NAMES) != (female in NAMES):  # a name against "the" + noun: not the same length
                continue
            for (base, base_value), (source, source_value) in (((male, "male"), (female, "female")), ((female, "female"), (male, "male"))):
                pairs.append(VariablePair(_fill(template, base), _fill(template, source), answers[base_value], answers[source_value],
                                          base, source, base_value, source_value, f"t{t}", base, source))
    return pairs


def _fill(template: str, subject: str) -> str:
    """A name stands without "the" ("John said that ..."), capitalised."""
    if subject in NAMES:
        return template.replace("The {subject}", subject.capitalize()).replace("the {subject}", subject.capitalize())
    return template.format(subject=subject)
