"""A lecture hall's app process: `streamlit run viz_app/lecture_hall.py` (scripts/lecture.sh runs it).

The app itself (viz_app/Home.py, the same pages, settings and flags), served with the class's moves beside it
(viz_app/server/class_moves.py): every following student's page hears a move the moment the presenter makes it,
instead of asking twice a second. `streamlit run viz_app/Home.py` is the same app without that stream.
"""
import streamlit as st
from starlette.routing import Route

from viz_app.server import singletons
from viz_app.server.class_moves import HALL, ROUTE
from viz_app.server.settings import server_settings


def class_room():
    """This process's class, the one its pages read (st.cache_resource: made once), None without --class."""
    settings = server_settings()
    return singletons.class_room(settings.presenter_key) if settings.class_mode else None


HALL.serve(class_room)
app = st.App("Home.py", routes=[Route(ROUTE, HALL.stream)])
