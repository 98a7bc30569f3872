"""The How BERT was trained page: its figures (`figures`), the live run's panel (`live_run`) and the successors'
tiny runs (`successors`)."""
