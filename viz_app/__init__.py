"""The Streamlit app around the `bert` package: `streamlit run viz_app/Home.py`; page scripts live in `pages/`.

Layers, top to bottom. A module imports only from its own layer or the layers above it; nothing imports
upwards, there are no import circles and no imports inside functions that would hide one (tests/app/app/
test_layers.py walks the imports). The folders show them:

1. `bert/`: the library. It never imports the app.
2. Pure helpers: plain Python, no Streamlit session, no caches. Testable without Streamlit, used alike by the
   pages, the lessons and the HTML exports.
   - `app/`: the registry of pages (`navigation.py`: one `Page` entry each, its address, title, group, sentence
     box, URL parameters and spec), how a URL parameter is spelt (`url_params.py`), `models.py` (`ModelKey`,
     `LoadedModel`, `load`), `forward.py` (`PreparedInput`, `ForwardResult`, `record`), `text.py`, `tables.py`,
     `label_names.py`, `generators.py`, `page_context.py` (the `Context` Home.py hands the running page).
   - `charts/`: chart builders: arrays in, a `Chart` (a plotly figure with the numbers behind it) out. They
     import nothing of the app but each other: no Streamlit, no session, no server.
   - `specs/`: plain Python, one module per page, named by its address (`specs/base.py`: the protocol, `Settings`,
     `computations`, `Computation` = cost + compute, `view`); `specs/catalog.py` lists them all.
   - `server/` (its plain parts): what a server keeps: who may do what (`access.py`, `settings.py`), the class a
     presenter moves (`class_room.py`, `class_links.py`, its store), the budgets (`budget.py`), the heavy
     computations' slots (`heavy_jobs.py`), the live training room (`training_room.py`), safe parsers, uploads,
     downloads. It imports no page, cache, runner, spec or widget.
   - `export/`: a page's figures as HTML (`html.py`), a notebook (`notebook.py`), a lesson (`lesson.py`); and
     `lessons/` (format, computed, resolve, views, costs), which draws a lesson's figures with the pages' specs.
3. Caches: `cache.py`, the `st.cache_resource` and `st.cache_data` wrappers of the app, keyed by a `ModelKey`
   (never the model object) and, for one input, a `PreparedInput` (hashed by its `key`); `cache.computed` is every
   spec's. The server's shared objects that are not caches: `server/singletons.py`.
   Then the runner, `heavy.py` (`run`: the one road from a page to the model), which joins the specs, the caches
   and the server's jobs; nothing below it imports it.
4. Widgets and sidebar (Streamlit): `app/state.py` (session state <-> the URL), `app/widgets.py` (`require()`
   gives a page its `Context`, `show_chart`, ...), `app/analysis_widgets.py`, `app/sidebar.py`,
   `app/sentence_box.py`, `server/visitor.py`, `server/sessions.py`, `lessons/session.py`, `lessons/following.py`,
   and the widgets of some page families (`app/live_run.py`, `app/training_figures.py`, `app/successor_runs.py`,
   `app/probe_data.py`, `app/probe_results.py`).
5. Pages (`pages/<url_path>.py`) and `Home.py`. Nothing imports them.

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
  first read. The prediction and attention pages share one pass per input (`specs/recorded.py` `PREDICTIONS`:
  predictions, q and k); the pages that draw MLP activations or embeddings read `FULL`, which records those too;
  both run through `heavy.run` and are kept once by `cache.computed_shared`.

How a page is written: docs/app.md, "Adding a page" (one spec module, one page file, one registry entry); the
mixing page (`specs/mixing.py`, pages/mixing.py) is the worked example.
"""
