"""A chart is drawn from its figure as plotly's dict, made once for each Chart (viz_app/app/widgets.py): what
Streamlit sends the browser is plotly's own JSON of the figure, the dict is shared by every draw of the same Chart
(a chart kept for a whole class), and it goes with the Chart."""
from __future__ import annotations

import gc
import json

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
from streamlit.testing.v1 import AppTest

from viz_app.app import widgets
from viz_app.charts.base import Chart


def heatmap(seed: int) -> Chart:
    values = np.random.default_rng(seed).random((5, 7), dtype=np.float32)
    figure = go.Figure(go.Heatmap(z=values, x=[f"key {i}" for i in range(7)], colorscale="Blues"))
    figure.update_layout(title="a <b>head</b>", height=300)
    return Chart(figure, pd.DataFrame(values), f"heatmap_{seed}")


def test_the_drawn_dict_is_plotlys_own_made_once_and_dropped_with_its_chart():
    chart = heatmap(0)
    first, again = widgets._drawn(chart), widgets._drawn(chart)
    assert first.to_dict() is again.to_dict()  # one dict for every draw of this Chart
    assert json.loads(pio.to_json(first.to_dict(), validate=False)) == json.loads(chart.figure.to_json())
    assert widgets._drawn(heatmap(0)).to_dict() is not first.to_dict()  # another Chart, its own
    key = id(chart)
    del chart, first, again
    gc.collect()
    assert key not in widgets._DRAWN


def script():
    import numpy as np
    import pandas as pd
    import plotly.graph_objects as go
    import streamlit as st

    from viz_app.app import widgets
    from viz_app.charts.base import Chart

    values = np.arange(35, dtype=np.float32).reshape(5, 7) / 7
    chart = Chart(go.Figure(go.Heatmap(z=values)).update_layout(title="drawn twice"), pd.DataFrame(values), "twice")
    st.session_state["figure_json"] = chart.figure.to_json()
    widgets.show_chart(chart, key="first")
    widgets.show_chart(chart, key="second")


def test_streamlit_sends_the_figure_plotly_would():
    at = AppTest.from_function(script, default_timeout=60).run()
    assert not at.exception
    expected = json.loads(at.session_state["figure_json"])
    drawn = [json.loads(element.proto.spec) for element in at.get("plotly_chart")]
    assert drawn == [expected, expected]
