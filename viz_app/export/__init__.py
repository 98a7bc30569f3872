"""Exports: a page's figures as one HTML file (`html`), a notebook (`notebook`), a lesson as a handout (`lesson`)."""
