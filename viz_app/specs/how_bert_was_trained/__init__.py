"""The How BERT was trained page's plain parts: the built-in model on its pairs and loss (`examples`) and the
successors' tiny runs (`successors`), each a computation. Its widgets: viz_app/app/training_figures.py (the notes
and the shipped runs' figures), viz_app/app/live_run.py (the live run's panel), viz_app/app/successor_runs.py."""
