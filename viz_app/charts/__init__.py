"""Plotly figure builders, one module per page or per chart that pages share. Each returns a Chart: the figure
plus the numbers behind it (a pandas DataFrame, offered as CSV under the chart). Pure functions of numpy arrays and
analysis results: no Streamlit here."""
from viz_app.charts.base import Chart

__all__ = ["Chart"]
