"""A notebook session's MPI work saved as a batch job that reproduces it.

``wb.export_job(path)`` (:mod:`mpiworkbench.drivers.job`) writes a directory from what the
session's journal (:mod:`mpiworkbench.client.calls.journal`) kept of the calls its ranks ran
since the world started: the ``%%px`` cells and the functions of ``wb.run``, the solvers'
handles and benchmarks (their drivers' calls), in the order they ran, with what each rank printed
(a digest per cell and rank). The directory (:mod:`~mpiworkbench.jobs.layout`):

``job.py``
    One MPI program every rank runs (:class:`~mpiworkbench.jobs.runner.Job`): the cells, as
    text you can read and edit, and the calls, in order, in one namespace per rank as on the
    engines.
``job.json``
    What was captured: the world (size, hosts, MPI implementation and library, launcher), each
    call (its label, outcome, per-rank digests), the values named at export and theirs.
``data/``
    The functions and arguments of the calls that are not cells (pickled as ipyparallel sends them).
``run.sh``, ``job.sbatch``
    The job on a workstation (``mpiexec``) and under Slurm (``sbatch``): both run
    ``mpiworkbench job run``, which starts the ranks as the session's world was started.
``README.md``
    What was captured, what was not, and how to run it at another size.

A run writes ``output/np-N/`` beside them (:mod:`~mpiworkbench.jobs.compare`): each rank's
record of each call, ``cells.txt`` (each cell's output as ``%%px`` shows it), ``values.npz``,
a Chrome trace per ``%%px --trace`` cell, and ``compare.json``: which cells' output equals the
session's, which values do.
"""
