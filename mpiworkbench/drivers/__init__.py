"""One driver per feature — the micro-benchmarks (:mod:`.bench`), speedup experiments
(:mod:`.speedup`), the wave, CG and heat solvers' handles (:mod:`.wave`, :mod:`.cg`,
:mod:`.heat` over :mod:`.solver_handle`) and the syntax lessons (:mod:`.syntax`).

Each drives engine-side code through the runtime of :mod:`mpiworkbench.client` (a session's
calls, waits and turns); the widgets and the CLI call these drivers, never a copy of their
loops."""
