"""One module per page that has a view: a function that turns the page's settings and its result into the page's
charts, called by the page, the lessons and the exported handouts alike."""
