"""The one recipe for starting ranks (:func:`mpiworkbench.core.launch.world_launch`): a
wall-clock limit only where one is asked for, whatever the caller's environment holds."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest

from mpiworkbench.client.cluster import profiles, start
from mpiworkbench.core import implementations, launch

#: What a caller's environment may hold that would cut an interactive world short.
INHERITED = {name: "1" for name in launch.LIMIT_VARIABLES}


def test_an_interactive_world_drops_every_inherited_limit():
    recipe = launch.world_launch(np=2)
    env = recipe.environ({**INHERITED, "HOME": "/home/x", launch.JOB_VARIABLES[0]: "1"})
    assert not set(env) & {*launch.LIMIT_VARIABLES, *launch.JOB_VARIABLES}
    assert env["HOME"] == "/home/x" and env[implementations.SIZE_VARIABLE] == "2"
    # and on the command line, for launchers that pass their own caller's environment on
    # (ipyparallel's copies os.environ): every variable named after `env -u`
    unset = {recipe.mpiexec[i + 1] for i, word in enumerate(recipe.mpiexec) if word == "-u"}
    assert unset >= {*launch.LIMIT_VARIABLES, *launch.JOB_VARIABLES}


def test_a_job_gets_the_limit_it_asked_for_and_keeps_its_own_variables():
    recipe = launch.world_launch(np=3, limit_s=42.7, extra={"MPIWORKBENCH_UNDER_MPIEXEC": "1"})
    env = recipe.environ({"MPIEXEC_TIMEOUT": "5", "MP_TIMEOUT": "5"})
    assert env["MPIEXEC_TIMEOUT"] == "42" and "MP_TIMEOUT" not in env
    assert env["MPIWORKBENCH_UNDER_MPIEXEC"] == "1"
    # what the recipe sets is never also removed on its command line
    assert not set(recipe.unset) & set(recipe.environment)
    assert "MPIEXEC_TIMEOUT" not in recipe.mpiexec and "MPIWORKBENCH_UNDER_MPIEXEC" not in recipe.mpiexec


@pytest.mark.parametrize("name", implementations.names())
def test_each_implementation_is_clean_of_the_others(name):
    impl = implementations.get(name)
    if not impl.installed():
        pytest.skip(impl.missing())
    others = implementations.foreign_variables(impl)
    env = launch.world_launch(impl, 2).environ({name: "stale" for name in others})
    assert not set(env) & set(others)
    assert env[implementations.VARIABLE] == impl.name


def test_every_starter_uses_the_recipe(tmp_path):
    recipe = launch.world_launch()
    cluster = start.new_cluster(2, "recipe-check")
    assert cluster.config.MPILauncher.mpi_cmd == list(recipe.mpiexec)
    for name in ("mpi", "slurm"):
        with pytest.warns(UserWarning) if name in profiles.REMOTE_ENGINES else contextlib.nullcontext():
            directory = profiles.create_profile(f"p{name}", launcher=name, ipython_dir_=tmp_path)
        text = (directory / "ipcluster_config.py").read_text()
        assert "-u" in text and "MPIEXEC_TIMEOUT" in text, text


def test_an_inherited_limit_does_not_end_a_world_under_mpiexec():
    """Hydra itself, given a caller's MPIEXEC_TIMEOUT of 1 s: the recipe's command runs a rank
    for 3 s to the end."""
    recipe = launch.world_launch(np=1)
    program = [sys.executable, "-c", "import time; time.sleep(3); print('finished')"]
    done = subprocess.run(recipe.command(1, program), env={**recipe.environ(), **INHERITED},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "finished" in done.stdout, (done.returncode, done.stdout, done.stderr)
