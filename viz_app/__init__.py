"""The Streamlit app's shared code: cached loading, the shared sidebar, plot builders and widgets.

`streamlit run viz_app/Home.py` starts the app; the page scripts live in the top-level `pages/`.
"""
