"""Inside BERT: `streamlit run viz_app/Home.py`.

The entry script: sets up the page, reads a shared link's query parameters once, draws the shared sidebar
(the model) and, at the top of every page that reads it, the sentence box, then runs the chosen page from the
top-level pages/ folder (every page is listed once, in viz_app/app/navigation.py).
"""
import logging

import streamlit as st

from viz_app import cache, heavy
from viz_app.server import access, threads, visitor
from viz_app.app import page_context, page_objects, sentence_box, show, sidebar, state
from viz_app.lessons import following
from viz_app.app.navigation import OLD_PATHS
from viz_app.app.text import Markdown
from viz_app.server.class_store import StoreUnavailableError
from viz_app.server.settings import SettingsError

log = logging.getLogger("viz_app.Home")
PAGE_FAILED = Markdown("This page failed; the server's log says why. Change a setting, or open another page.")

st.set_page_config(page_title="Inside BERT", page_icon="🔍", layout="wide")
state.load_from_url()
try:
    this_visitor = visitor.of_the_browser_session(cache.model_choices())
except SettingsError as error:  # scripts/start_app.sh checks them before the start; `streamlit run` does not
    role = access.role_of(visitor.address(), class_mode=False, presenter=False)  # class mode or not is unknown
    show.error("The server's settings cannot be used ({}).", access.failure(error, role))
    st.stop()
threads.set_once(this_visitor.settings)  # the first run of the server decides; nothing changes it per request

pages = page_objects.for_this_run()
page = st.navigation({**pages.groups, "": pages.hidden}, position="hidden")  # the sidebar lists the pages below the model picker
if page.url_path in OLD_PATHS:  # an old address (a link, a lesson file): its page now, with the link's settings
    st.switch_page(pages.by_path(OLD_PATHS[page.url_path]), query_params=st.query_params.to_dict())
if this_visitor.follows_class:
    following.join_if_asked()
    class_read = following.follow_if_moved(this_visitor)  # before any widget is drawn: the class's step sets them
elif this_visitor.role is access.Role.PRESENTER:
    following.resume_presenting(this_visitor)  # the class's step, from its store, whichever process this is
follows = following.follows_now()
with following.drawing_turn():  # a class's step is drawn for a few of its students at a time (following.py)
    model = sidebar.render(this_visitor, pages.groups, follows=follows)
    if this_visitor.follows_class:
        following.student_panel(this_visitor, class_read)
    sentence = sentence_box.render(page.url_path, model.loaded)  # None where the page reads no sentence
    state.write_url(model.key.source if model.key else None)
    with page_context.serve(page_context.Context(model, sentence, this_visitor, follows)):  # pages get it from widgets.require()
        try:
            with heavy.refusing_outside_jobs():  # a heavy computation goes through heavy.run (its price, its slot)
                page.run()
        except StoreUnavailableError as error:  # a lecture hall's store that does not answer: one line, no traceback
            log.warning("the %s page waits for the class's store: %s", page.url_path, error)
            following.store_silent(this_visitor)
        except Exception as error:  # a page's own failure (st.stop and page switches are not Exceptions)
            log.exception("the %s page failed", page.url_path)  # the traceback, for the server's log
            if this_visitor.role.may_choose_any_model:  # the owner and the presenter may read the server's paths
                st.exception(error)
            else:
                show.error("{}", PAGE_FAILED, icon=":material/error:")
