"""The sidebar's "Download a model" box, against the local hub stand-in (tests/hub_server.py; fixtures in
tests/conftest.py): a failure is explained in one line, a download is listed and chosen in the model picker."""
from __future__ import annotations

import re

import pytest

from app_helpers import no_exception
from bert.hub import MODEL_TYPES
from viz_app.app.text import WORD_JOINER

pytestmark = pytest.mark.slow  # every test here takes seconds


def shown(markdown: str) -> str:
    """The text a reader sees of an escaped Markdown message (the repo id and the error are escaped: text, not links)."""
    return re.sub(r"\\(.)", r"\1", markdown).replace(WORD_JOINER, "")


def download(at, repo_id: str):
    at.text_input(key="download_repo_id").set_value(repo_id)
    at.button(key="download_button").click().run()
    return at


def test_the_box_offers_bert_base_uncased(open_app, unreachable_hub):
    at = open_app()
    assert at.text_input(key="download_repo_id").value == "bert-base-uncased"


def test_offline_is_explained_and_the_built_in_model_stays(open_app, unreachable_hub):
    at = download(open_app(), "bert-base-uncased")
    no_exception(at)
    errors = [shown(e.value) for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("Could not download: cannot reach the Hugging Face hub")
    assert "\n" not in errors[0]
    assert at.selectbox(key="model_choice").value == "minilm"


def test_unknown_and_non_bert_models_are_explained(open_app, local_hub):
    at = download(open_app(), "nobody/no-such-model")
    assert [shown(e.value) for e in at.error] == ["Could not download: no model 'nobody/no-such-model' on the Hugging Face "
                                           "hub (or it is private): check the spelling, e.g. bert-base-uncased"]
    download(at, "gpt-like")
    assert [shown(e.value) for e in at.error] == ["Could not download: 'gpt-like' is not a BERT-family encoder (its config.json says "
                                           f"model_type 'gpt2'); the families loaded here: {', '.join(MODEL_TYPES)}"]


def test_a_downloaded_model_is_listed_and_chosen(open_app, local_hub):
    at = download(open_app(), "org/bert-tiny")
    no_exception(at)
    picker = at.selectbox(key="model_choice")
    assert picker.value == "org/bert-tiny"
    assert "org/bert-tiny" in picker.options[0]  # a cached hub BERT is listed before the built-in models
    assert not at.error
    assert any("org/bert-tiny is downloaded" in shown(s.value) for s in at.success)
