"""The Streamlit app around the `bert` package: `streamlit run viz_app/Home.py`; page scripts live in `pages/`.

Layers, top to bottom. A module imports only from its own layer or the layers above it; nothing imports
upwards, there are no import circles and no imports inside functions that would hide one (tests/app/
test_layers.py walks the imports).

1. `bert/`: the library. It never imports the app.
2. Pure helpers: plain Python, no Streamlit session, no caches. Testable without Streamlit, used alike by the
   pages, the lessons and the HTML exports.
   - `models.py`: `ModelKey`, `ModelChoice`, `LoadedModel`, `PickedModel`, `load(key)`, `summarize`.
   - `forward.py`: `InputProblem`, `PreparedInput` (`prepare_input`), `SentenceInput`, `ForwardResult` (`record`).
   - `text.py`: turning tokens back into text, Markdown escaping, token chip labels. It and the chart builders
     import neither Streamlit nor `bert.analysis` (tests/app/app/test_layers.py checks `sys.modules`).
   - `charts/`: chart builders: arrays in, a `Chart` (a plotly figure with the numbers behind it) out.
   - `views/`: one module per page that has a view, each with one function that turns the page's settings
     and its result into the page's charts (see "How a page is written" below).
   - `navigation.py`: every page once, one `Page` entry each (its address, file, title, icon, group, whether it
     shows the sentence box, its URL parameters, its lesson view); the navigation, the sentence box, `LINK_PARAMS`
     (kept in the URL by `state.py`, a widget's value with `state.kept`) and the lessons' pages and choices are
     read from it. `params.py`: how a URL parameter is
     spelt (`Param`) and those every page shares (the sentence box's, the sidebar's).
   - `page_context.py`: the `Context` Home.py hands the running page: the picked model, the sentence box's
     input and the visitor (a context variable, so a page never sees another session's).
   - who may do what: `access.py` (the owner at the server's machine, the presenter, students: the models each
     may pick, the one line for a model not offered, the `Visitor`), `server_settings.py` (class mode, offered
     folders, the presenter's key: flags, environment, settings file), `class_room.py` (the class the presenter
     moves, its two links), `class_links.py` (the links printed when scripts/start_app.sh --class starts).
   - what pages compute beside the library: `tables.py`, `head_ablation.py`, `architecture.py`, `sentence_tasks.py`,
     `word_contexts.py`, `model_comparison.py`, `corpus_search.py`, `tiny_training.py`, `export_html.py`,
     `download.py`, `label_names.py`, `probe_runs.py`; and `lessons/` (format, computed, resolve, views,
     export), which builds a lesson's figures with the same view functions as the pages.
3. Caches: `cache.py`, every `st.cache_resource` and `st.cache_data` of the app, keyed by a `ModelKey` (never
   the model object) and, for one input, a `PreparedInput` (hashed by its `key`: text, pair, masks, truncate).
4. Widgets and sidebar (Streamlit): `state.py` (session state <-> the URL), `widgets.py` (`require()` gives a
   page its `Context`, `show_chart`, ...), `analysis_widgets.py`, `sidebar.py`, `sentence_box.py`,
   `visitor.py` (the visitor of a browser session; its address read in one place), `lessons/session.py`,
   `lessons/following.py` (the class panel above a student's page, the presenter's box), and each page
   family's widgets (`live_run.py`, `pretraining_figures.py`, the probes page's modules).
5. Pages (`pages/*.py`) and `Home.py`. Nothing imports them.

One value for one idea:
- The model key: `ModelKey(source, folder, revision)`, a small frozen hashable dataclass. `source` is what the
  URL carries ("minilm", a hub id, a folder path), `folder` the folder actually loaded (a cached hub snapshot),
  `revision` a fingerprint of the files, so a replaced checkpoint loads afresh. `cache.load_model(key)`, and
  every cached analysis takes the key as its first argument. `PickedModel(key, loaded, error)` is what the
  sidebar picked; `LoadedModel(key, model, tokenizer, summary)` what is shared, read-only, by every session.
- The prepared input: `PreparedInput`, made once per input by `prepare_input` (the sentence box does it) and
  passed down: it holds the text, pair, truncate flag, the encoding as typed (`base`), what the model reads
  (`masked`) and the mask positions. The pages and caches read these encodings and do not tokenize the sentence
  box's input again (corpus search's query is `base.first_sentence()`), with one exception: the next-sentence
  check encodes the pair itself, in the typed order and swapped (B before A). What a page encodes besides are
  other inputs: the causal tracing page's own sentences (typed on that page; it reads no sentence box input),
  the sentences of a corpus, a word's contexts.
- The masks: `st.session_state["masks"]`, the clicked positions (typed [MASK]s are found by `prepare_input`).
  `state.py` mirrors it in the URL like every other parameter; the prediction page's chips are a widget
  showing it; editing the sentence or the pair, or picking another model, clears it.
- The recorded pass: `ActivationCache` (the library's, from `run_with_cache`) becomes one `ForwardResult` in
  `forward.record`: read-only numpy arrays shared by every session. The pass records q and k but no pattern, so
  the model takes the fused attention path; a `ForwardResult`'s `attention` is computed from its q and k when
  first read. The prediction, attention and rollout pages share one pass per input
  (`cache.predictions_and_attention`: predictions, q and k); the pages that draw MLP activations or embeddings
  read `cache.forward`, which records those too.

How a page is written (Streamlit's own `hello` app does the same), top to bottom, with no writes meant for
the next rerun:

    context = widgets.require()                          # the model and the prepared input, or a message
    settings = AttentionSettings(layer=st.selectbox(...), ...)   # widgets (bound to the URL)
    result = cache.forward(context.key, context.prepared)  # a cached function
    charts = attention_view(settings, result)            # the view function (viz_app/views/attention.py)
    widgets.show_chart(charts["pattern"], key="pattern") # render

The lesson steps and the exported handouts call the same view function with the step's settings
(`Settings.from_state(state, ...)`, which clamps a value the way the page's picker would), so a figure is
built in one place only.
"""
