"""What the server keeps for every visitor: who may do what (`access`, `visitor`, `settings`), browser sessions,
the class a presenter moves, the budgets and the heavy computations' slots (`budget`, `heavy`, `heavy_jobs`), the
live training room, uploads, safe parsers and downloads."""
