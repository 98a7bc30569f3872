"""The server's objects that every browser session shares and that are not caches: the heavy computations' slots
(viz_app/server/heavy_jobs.py), the class a presenter moves (viz_app/server/class_room.py) and the room where tiny
BERTs train live (viz_app/server/training_room.py). One each per server (`st.cache_resource`, never evicted).
In a lecture hall (BERT_INSIDE_STORE set: scripts/lecture.sh) the class and the hour's spending live in the shared
store (viz_app/server/class_store.py); the slots stay this process's."""
from __future__ import annotations

import os
import sys

import streamlit as st

from viz_app.server import class_store, sessions
from viz_app.server.class_room import ClassRoom, class_links, network_host
from viz_app.server.heavy_jobs import HeavyJobs, MemorySpending, nicer_thread
from viz_app.server.training_room import TinyTrainingRuns


@st.cache_resource(show_spinner=False)
def store():
    """The lecture hall's store (a Redis client), or None: one process keeps the class in memory. Raises
    class_store.StoreUnavailableError when BERT_INSIDE_STORE is set and the store does not answer."""
    url = os.environ.get(class_store.STORE_VARIABLE)
    return class_store.connect(url) if url else None


@st.cache_resource(show_spinner=False)
def heavy_jobs(slots: int) -> HeavyJobs:
    """The server's heavy computations: `slots` at a time; each stops when its browser session is gone."""
    shared = store()
    spending = class_store.RedisSpending(shared) if shared is not None else MemorySpending()
    return HeavyJobs(slots, connected=sessions.is_connected, lower_priority=nicer_thread, spending=spending)


@st.cache_resource(show_spinner=False)
def tiny_training_runs(slots: int) -> TinyTrainingRuns:
    """The server's live tiny-BERT runs: one at a time, in one of the heavy computations' `slots` (the same
    `heavy_jobs`), finished runs kept per settings while the session that started them lasts
    (viz_app/server/sessions.py)."""
    shared = store()
    return TinyTrainingRuns(connected=sessions.is_connected, grace_s=sessions.reconnect_window_s(),
                            jobs=heavy_jobs(slots), hall_slot=class_store.RedisSlot(shared) if shared else None)


@st.cache_resource(show_spinner=False)
def class_room(key: str | None) -> ClassRoom | class_store.RedisClassRoom:
    """The server's class: one per presenter key (the teacher's, or None: a random key made now, once per server
    start). Says the two links on the server's console when it is made."""
    shared = store()
    room = class_store.RedisClassRoom(shared, key) if shared is not None else ClassRoom(key)
    links = class_links(f"http://{network_host()}:{st.get_option('server.port')}", room.key)
    print(f"Class mode. Presenter (keep this link to yourself): {links.presenter}\nStudents: {links.students}",
          file=sys.stderr, flush=True)
    return room
