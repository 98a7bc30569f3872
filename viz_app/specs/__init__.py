"""One module per page, named by the page's address (viz_app/app/navigation.py): what the page computes beside
the library, its settings, its cost and its view."""
