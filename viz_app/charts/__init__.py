"""Plotly figure builders, one module per page. Each returns a Chart: the figure plus the numbers behind it
(a pandas DataFrame, offered as CSV under the chart). Pure functions of numpy arrays: no Streamlit here."""
from viz_app.charts.base import Chart

__all__ = ["Chart"]
