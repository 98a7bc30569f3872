"""The app's shared helpers and widgets: the page registry (`navigation`), session state and the URL
(`state`, `url_params`), widgets, the sidebar, the sentence box, the loaded models and the recorded pass."""
