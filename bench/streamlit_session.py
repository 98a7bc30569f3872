"""One browser's session with a Streamlit server, spoken over Streamlit's own websocket protocol, as the browser
speaks it: a `rerun_script` BackMsg (the page, its query string, widget states) and the ForwardMsgs that come back
until `script_finished`. The messages the server marks cacheable are kept and their hashes reported, as the
browser's message cache does; nothing is rendered. bench/class_server.py runs a class of these.
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field

# imported once here, not in each session's first call: a hall's 120 threads importing the generated protobuf
# modules at once saw one half made (ImportError: cannot import name 'BackMsg')
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.components.v2.bidi_component.constants import EVENT_DELIM
from streamlit.runtime.state.session_state import STREAMLIT_INTERNAL_KEY_PREFIX
from websockets.sync.client import connect


@dataclass
class Page:
    """What one run of the page sent: elements by kind, the session's page and query string."""

    specs: list[str] = field(default_factory=list)  # each chart's JSON, as sent: parsed only when read (`charts`)
    markdown: list[str] = field(default_factory=list)
    widgets: dict[str, str] = field(default_factory=dict)  # text input/area label -> widget id
    buttons: dict[str, str] = field(default_factory=dict)  # button label -> widget id
    exceptions: list[str] = field(default_factory=list)

    @property
    def charts(self) -> list[dict]:
        """The charts' specs, parsed (a simulated browser that only waits for a page does not parse them: in a hall of
        them, on the server's machine, that would take CPU the server's processes need)."""
        return [json.loads(spec) for spec in self.specs]


class Session:
    """One student's websocket session with the server: send a rerun, read ForwardMsgs until the run ends."""

    def __init__(self, url: str, timeout_s: float):

        ws_url = url.replace("http://", "ws://") + "/_stcore/stream"
        self.connection = contextlib.ExitStack()
        self.socket = self.connection.enter_context(
            connect(ws_url, subprotocols=["streamlit"], max_size=None, open_timeout=timeout_s)
        )
        self.timeout_s = timeout_s
        # the cookies the server set on the websocket's answer (a lecture hall's proxy pins the browser to one process
        # by one), sent back with the browser's other requests to it, as a browser does
        self.cookies = "; ".join(value.split(";")[0] for value in self.socket.response.headers.get_all("Set-Cookie"))
        self.cache: dict[str, bytes] = {}  # hash -> message the server marked cacheable (the browser keeps them)
        self.page_hash = ""
        self.page_name = ""  # the page's address before the server names its script (e.g. "lessons")
        self.query_string = ""
        self.fragments: dict[str, float] = {}  # fragment id -> seconds between the reruns the browser asks for
        self.components: dict[str, tuple[str, dict]] = {}  # st.components.v2 name -> (element id, its data)

    def close(self) -> None:
        self.connection.close()

    def send_rerun(self, widget_states: dict[str, str] | None = None, press: str | None = None,
                   fragment: str | None = None, trigger: tuple[str, str, object] | None = None) -> None:
        """Send a rerun as `rerun` does, without reading what comes back (a reader in another thread may be
        waiting for the run before it: a browser that changes a widget while the page runs)."""

        back = BackMsg()
        state = back.rerun_script
        state.query_string = self.query_string
        state.page_script_hash = self.page_hash
        state.page_name = "" if self.page_hash else self.page_name
        state.cached_message_hashes.extend(self.cache)
        if fragment:
            state.fragment_id, state.is_auto_rerun = fragment, True
        for widget_id, text in (widget_states or {}).items():
            widget = state.widget_states.widgets.add()
            widget.id, widget.string_value = widget_id, text
        if press:
            widget = state.widget_states.widgets.add()
            widget.id, widget.trigger_value = press, True
        if trigger:  # a component's event, as its script's setTriggerValue(event, value) sends it
            component_id, event, value = trigger
            widget = state.widget_states.widgets.add()
            widget.id = f"{STREAMLIT_INTERNAL_KEY_PREFIX}_{component_id}{EVENT_DELIM}events"
            widget.json_trigger_value = json.dumps([{"event": event, "value": value}])
        self.socket.send(back.SerializeToString())

    def rerun(self, widget_states: dict[str, str] | None = None, on_chart=None, press: str | None = None,
              fragment: str | None = None, on_markdown=None, trigger: tuple[str, str, object] | None = None) -> Page:
        """Send a rerun (the query string and page as the browser would, plus `widget_states` {id: text}) and read
        until script_finished. `press`: a button's id, pressed; `fragment`: rerun only that fragment, as the
        browser's timer does for `st.fragment(run_every=...)`. `on_chart(spec)` and `on_markdown(text)` are called
        as each chart and each text arrives; `trigger`: (component id, event, value), a component's event (with
        `fragment`, the fragment it sits in)."""

        self.send_rerun(widget_states, press, fragment, trigger)
        page = Page()
        deadline = time.monotonic() + self.timeout_s
        while True:
            raw = self.socket.recv(timeout=max(0.1, deadline - time.monotonic()))
            message = ForwardMsg()
            message.ParseFromString(raw)
            if message.HasField("ref_hash"):
                message = ForwardMsg.FromString(self.cache[message.ref_hash])
            elif message.metadata.cacheable:
                self.cache[message.hash] = raw
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self.page_hash = message.new_session.page_script_hash
            elif kind == "navigation":  # st.navigation says which page runs (the browser then asks for that one)
                self.page_hash = message.navigation.page_script_hash
            elif kind == "page_info_changed":
                self.query_string = message.page_info_changed.query_string
            elif kind == "auto_rerun":  # the newest last
                self.fragments.pop(message.auto_rerun.fragment_id, None)
                self.fragments[message.auto_rerun.fragment_id] = message.auto_rerun.interval
            elif kind == "delta" and message.delta.WhichOneof("type") == "new_element":
                element = message.delta.new_element
                if element.WhichOneof("type") == "bidi_component":
                    component = element.bidi_component
                    self.components[component.component_name] = (component.id, json.loads(component.json or "null"))
                _read_element(element, page, on_chart, on_markdown)
            elif kind == "script_finished":
                if message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                    return page


def _read_element(element, page: Page, on_chart, on_markdown) -> None:
    kind = element.WhichOneof("type")
    if kind == "plotly_chart":
        page.specs.append(element.plotly_chart.spec)
        if on_chart:
            on_chart(json.loads(element.plotly_chart.spec))
    elif kind == "markdown":
        page.markdown.append(element.markdown.body)
        if on_markdown:
            on_markdown(element.markdown.body)
    elif kind == "button":
        page.buttons[element.button.label] = element.button.id
    elif kind in ("text_area", "text_input"):
        widget = getattr(element, kind)
        page.widgets[widget.label] = widget.id
    elif kind == "exception":
        page.exceptions.append(f"{element.exception.type}: {element.exception.message}")
