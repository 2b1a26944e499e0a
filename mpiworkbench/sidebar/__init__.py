"""The MPI world sidebar's kernel side: what runs in the environment of the kernels that use the
worlds, whatever environment the lab runs in.

* :mod:`~mpiworkbench.sidebar.worlds`: every world of this host as the sidebar shows it, read from
  the world's files;
* :mod:`~mpiworkbench.sidebar.reader`: the process the lab part (:mod:`mpiworkbench.lab`) runs with
  this environment's Python to have those worlds read (``python -m mpiworkbench.sidebar.reader``);
* :mod:`~mpiworkbench.sidebar.actions`: the sidebar's Restart, Stop and the opening of ranks for
  debugging, run inside a notebook's kernel.
"""
