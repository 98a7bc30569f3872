"""Inside BERT: `streamlit run viz_app/Home.py`.

The entry script: sets up the page, reads a shared link's query parameters once, draws the shared sidebar
(the model) and, at the top of every page that reads it, the sentence box, then runs the chosen page from the
top-level pages/ folder (every page is listed once, in viz_app/app/navigation.py).
"""
import logging

import streamlit as st

from viz_app.server import access, heavy, visitor
from viz_app.app import page_context, sentence_box, sidebar, state
from viz_app.lessons import following
from viz_app.app.navigation import DEFAULT_PAGE, GROUPS, PAGES
from viz_app.server.settings import SettingsError

log = logging.getLogger("viz_app.Home")
PAGE_FAILED = "This page failed; the server's log says why. Change a setting, or open another page."

st.set_page_config(page_title="Inside BERT", page_icon="🔍", layout="wide")
state.load_from_url()
try:
    this_visitor = visitor.of_the_browser_session()
except SettingsError as error:  # scripts/start_app.sh checks them before the start; `streamlit run` does not
    role = access.role_of(visitor.address(), class_mode=False, presenter=False)  # class mode or not is unknown
    st.error(f"The server's settings cannot be used ({access.failure(error, role)}).")
    st.stop()

pages = {
    group: [st.Page(f"../pages/{p.file}", title=p.title, icon=p.icon, default=p.url_path == DEFAULT_PAGE,
                    url_path="" if p.url_path == DEFAULT_PAGE else p.url_path)  # the default page is served at /
            for p in entries]
    for group, entries in GROUPS.items()
}
default = PAGES[DEFAULT_PAGE]  # ... and at its own address too (a link to /prediction), listed once in the sidebar
by_address = st.Page(f"../pages/{default.file}", title=default.title, icon=default.icon, url_path=default.url_path)
page = st.navigation({**pages, "": [by_address]}, position="hidden")  # the sidebar lists `pages` below the picker
if this_visitor.follows_class:
    following.join_if_asked()
    following.follow_if_moved(this_visitor)  # before any widget is drawn: the class's step sets them
model = sidebar.render(this_visitor, pages)
if this_visitor.follows_class:
    following.student_panel(this_visitor)
sentence = sentence_box.render(page.url_path, model.loaded)  # None where the page reads no sentence
state.write_url(model.key.source if model.key else None)
with page_context.serve(page_context.Context(model, sentence, this_visitor)):  # pages get it from widgets.require()
    try:
        with heavy.refusing_outside_jobs():  # a heavy computation goes through heavy.run (its price, its slot)
            page.run()
    except Exception as error:  # a page's own failure (st.stop and page switches are not Exceptions)
        log.exception("the %s page failed", page.url_path)  # the traceback, for the server's log
        if this_visitor.role.may_choose_any_model:  # the owner and the presenter may read the server's paths
            st.exception(error)
        else:
            st.error(PAGE_FAILED, icon=":material/error:")
