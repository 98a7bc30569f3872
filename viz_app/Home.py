"""Inside BERT: `streamlit run viz_app/Home.py`.

The entry script: sets up the page, reads a shared link's query parameters once, draws the shared sidebar
(the model) and, at the top of every page that reads it, the sentence box, then runs the chosen page from the
top-level pages/ folder (every page is listed once, in viz_app/navigation.py).
"""
import streamlit as st

from viz_app import page_context, sentence_box, sidebar, state
from viz_app.navigation import DEFAULT_PAGE, GROUPS

st.set_page_config(page_title="Inside BERT", page_icon="🔍", layout="wide")
state.load_from_url()

pages = {
    group: [st.Page(f"../pages/{p.file}", title=p.title, icon=p.icon, url_path=p.url_path, default=p.url_path == DEFAULT_PAGE)
            for p in entries]
    for group, entries in GROUPS.items()
}
page = st.navigation(pages, expanded=True)  # every page listed: collapsed, the later groups hide behind "View N more"
model = sidebar.render()
sentence = sentence_box.render(page.url_path, model.loaded)  # None where the page reads no sentence
state.write_url(model.key.source if model.key else None)
with page_context.serve(page_context.Context(model, sentence)):  # the page gets it from widgets.require()
    page.run()
