"""Side-by-side syntax of one MPI routine in every backend — C first, as the thesis does.

* :mod:`~mpiworkbench.syntax.lessons`: the lessons (one scenario per Table 4.1 routine),
  their snippet files (``snippets/<lesson>/<column>``) and the expected results;
* :mod:`~mpiworkbench.syntax.execution`: runs the snippets on a communicator and checks them;
* :mod:`~mpiworkbench.syntax.historic`: labelled emulations of pypar, pyMPI,
  Scientific.MPI, MYMPI and boostmpi on top of mpi4py (syntax only, never performance);
* :mod:`~mpiworkbench.syntax.tables`: thesis Tables 3.1 and 4.1 regenerated from the
  backend registry and the emulations, and the documented syntax of Tables 4.2–4.11;
* :mod:`~mpiworkbench.syntax.listings`: the thesis's own listings, runnable.

One source of truth: the code a table or notebook shows is the file that runs.
"""
