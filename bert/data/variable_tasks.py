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
- `city-country`: an entity's attribute, RAVEL-style (Huang et al. 2024): the city decides its country ("Berlin is
  a city in [MASK]." / "Toronto ..."; Germany or Canada), a fact the model has to know rather than a rule of grammar.

A pair is two sentences of one template with nouns of the two values (every noun with every noun of the other
value, both orders); the variable's words are the subjects, their items the nouns' singular forms. Each pair names
its subject's word (`subject`, from the template), the position role "subject".
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
# A city's country, RAVEL-style (Huang et al. 2024): well-known cities of two countries, written for this project
# from general knowledge (facts, no list taken from elsewhere); each city one word piece in BERT's uncased vocabulary
CITIES = {"germany": ["berlin", "munich", "hamburg", "cologne", "frankfurt", "stuttgart", "dresden", "leipzig", "hanover",
                      "bremen", "nuremberg", "bonn", "dortmund", "essen", "heidelberg", "mainz", "potsdam", "kiel"],
          "canada": ["toronto", "montreal", "vancouver", "ottawa", "calgary", "edmonton", "winnipeg", "quebec", "halifax",
                     "victoria", "regina", "hamilton"]}
CITY_TEMPLATES = ["{subject} is a city in [MASK] .", "The city of {subject} is in [MASK] .", "{subject} is located in [MASK] .",
                  "She lives in {subject} , a city in [MASK] .", "The mayor of {subject} lives in [MASK] .",
                  "{subject} is in the country of [MASK] ."]
TASKS = {  # name -> what it tests, for --help and the docs
    "number-pp": "subject number decides the verb (is/are) across a prepositional phrase",
    "number-rc": "subject number decides the verb (is/are) across an object relative clause",
    "gender-pronoun": "the antecedent's gender decides the pronoun (he/she)",
    "city-country": "a city decides its country (Germany/Canada), RAVEL-style",
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
    if task == "city-country":
        return tuple(_city_pairs())
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
                        base_item, source_item, subject=subject_word(template)))
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
                                          base, source, base_value, source_value, f"t{t}", base, source,
                                          subject=subject_word(_named(template, base))))
    return pairs


def _city_pairs() -> list[VariablePair]:
    pairs = []
    (first, first_cities), (second, second_cities) = CITIES.items()
    for t, template in enumerate(CITY_TEMPLATES):
        for a, b in itertools.product(first_cities, second_cities):
            for (base, base_value), (source, source_value) in (((a, first), (b, second)), ((b, second), (a, first))):
                pairs.append(VariablePair(template.format(subject=base.capitalize()), template.format(subject=source.capitalize()),
                                          base_value.capitalize(), source_value.capitalize(), base, source, base_value,
                                          source_value, f"t{t}", base, source, subject=subject_word(template)))
    return pairs


def subject_word(template: str) -> int:
    """Which whitespace-separated word of a template's sentences is the subject: the place of {subject}."""
    return template.split().index("{subject}")


def _named(template: str, subject: str) -> str:
    """The template a subject fills: a name stands without "the" ("John said that ...")."""
    if subject in NAMES:
        return template.replace("The {subject}", "{subject}").replace("the {subject}", "{subject}")
    return template


def _fill(template: str, subject: str) -> str:
    """The sentence of a template and subject, a name capitalised."""
    return _named(template, subject).format(subject=subject.capitalize() if subject in NAMES else subject)
