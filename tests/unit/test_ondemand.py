"""The Open OnDemand app (``mpiworkbench/deploy/ondemand``), rendered as OOD renders it and its
scripts run against stand-ins of OOD's helpers, without OOD, Slurm or JupyterLab.

Ruby's ERB renders every ``.erb`` with the bindings OOD's dashboard gives them (``ondemand``'s
``BatchConnect::App#submit_opts``, ``BatchConnect::Session#stage``, the connection view):
``submit.yml.erb`` sees the form's values as bare names, ``template/*.erb`` see ``context`` (the
form's values) and ``session``, ``view.html.erb`` sees ``connection.yml``'s host, port and
password. Every value is a String, as OOD's form gives them. The sample form: 2 hours, 2 nodes,
2 tasks per node, the module ``mpich`` and a line that activates a stand-in environment.

Not covered (needs a real OOD and Slurm): OOD's own job script around the templates, sbatch
reading the native options, OOD's reverse proxy and the login through it, JupyterLab starting.
"""

from __future__ import annotations

import ast
import glob
import importlib.util
import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from mpiworkbench.deploy import ondemand_app_dir
from tests.ondemand import render_app

REPO = Path(__file__).resolve().parents[2]
APP = ondemand_app_dir()
RUBY = shutil.which("ruby")
#: Seconds a stand-in script may take (each runs in milliseconds).
LIMIT_S = 30

#: What the sample form's user typed, on top of form.yml's defaults (OOD's form gives Strings).
SAMPLE = {"bc_num_hours": "2", "num_nodes": "2", "tasks_per_node": "2", "modules": "mpich"}
#: connection.yml of the sample session (before.sh's port and password, OOD's host).
CONNECTION = {"host": "node1", "port": 40123, "password": "s3cretT0ken16chr"}
#: The job's Slurm variables as sbatch --nodes 2 --ntasks-per-node 2 --export=NONE sets them.
SLURM_JOB = {"SLURM_JOB_ID": "4242", "SLURM_NTASKS": "4", "SLURM_TASKS_PER_NODE": "2(x2)",
             "SLURM_JOB_NUM_NODES": "2", "SLURM_JOB_NODELIST": "node[1-2]", "SLURM_EXPORT_ENV": "NONE"}

#: OOD's helpers as its basic template defines them for before.sh and after.sh (ood_core's
#: BatchConnect::Template), stood in. The contract: ``find_port [HOST] [MIN] [MAX]`` prints a port
#: nothing listens on at HOST; ``create_passwd [SIZE]`` prints SIZE random letters and digits;
#: ``wait_until_port_used HOST:PORT [SECONDS]`` returns 0 once something listens there, 1 after
#: SECONDS; ``clean_up [CODE]`` ends the job's processes and exits with CODE. These record their
#: arguments instead, and ``wait_until_port_used`` answers $PORT_ANSWER.
OOD_HELPERS = r"""
find_port () { echo "$*" > find_port.args; echo 40123; }
create_passwd () { local letters=aB3dE5gH7jK9mN1pQ2sT4vW6yZ8cF0hL2rX5uY7; echo -n "${letters:0:${1:-32}}"; }
wait_until_port_used () { echo "$*" > wait.args; return "${PORT_ANSWER:-0}"; }
clean_up () { echo "clean_up $*" > clean_up.args; exit "${1:-0}"; }
"""


def _sample_form(environment: Path) -> dict[str, str]:
    """The form's values as OOD's session context holds them: form.yml's defaults (and its
    cluster), with :data:`SAMPLE` typed over them and the line activating *environment*."""
    form = yaml.safe_load((APP / "form.yml").read_text())
    values = {"cluster": form["cluster"]}
    for name in form["form"]:
        values[name] = str(form.get("attributes", {}).get(name, {}).get("value", ""))
    return values | SAMPLE | {"activate_environment": f"source {environment}/bin/activate"}


def _stand_in_environment(root: Path, *, importable: bool = True) -> Path:
    """A Python environment for script.sh: ``bin/activate`` puts its ``bin`` first on PATH;
    ``jupyter`` records its arguments and environment instead of starting; ``python`` is this
    interpreter (which imports mpiworkbench), or one that cannot import it."""
    bin_dir = root / "env" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "activate").write_text(f'export PATH="{bin_dir}:$PATH"\n')
    programs = {
        "jupyter": f'#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "{root}/jupyter.argv"\nenv > "{root}/jupyter.env"\n',
        "python": f'#!/usr/bin/env bash\nexec "{sys.executable}" "$@"\n' if importable else "#!/usr/bin/env bash\nexit 1\n",
    }
    for name, text in programs.items():
        (bin_dir / name).write_text(text)
        (bin_dir / name).chmod(0o755)
    return bin_dir.parent


def _render(tmp_path: Path, environment: Path) -> Path:
    """The app rendered into ``tmp_path/session`` (OOD's staged session directory)."""
    if RUBY is None:
        pytest.skip("needs Ruby to render the app's ERB as OOD does: apt-get install ruby (make test installs it)")
    return render_app(tmp_path, _sample_form(environment), CONNECTION)


def _bash(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=env, timeout=LIMIT_S, capture_output=True, text=True)


def _clean_env(home: Path, **more: str) -> dict[str, str]:
    """A job's environment: PATH and HOME only, plus *more* (nothing of this process's Slurm)."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), **more}


def _class_names(module: str, cls: str) -> set[str]:
    """The names a class of an installed module assigns in its body (its traits), read from the
    source: importing jupyter_server's ServerApp would cost seconds."""
    tree = ast.parse(Path(importlib.util.find_spec(module).origin).read_text())
    body = next(node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls).body
    return {target.id for node in body for target in getattr(node, "targets", [getattr(node, "target", None)])
            if isinstance(target, ast.Name)}


@pytest.fixture
def session(tmp_path):
    """The sample session rendered, its stand-in environment beside it."""
    environment = _stand_in_environment(tmp_path)
    return _render(tmp_path, environment), environment


def test_the_app_is_the_packages_data():
    """The folder holds what OOD reads, script.sh executable (OOD forks it), and pyproject's
    package data ships every file of it in a wheel."""
    files = {p.relative_to(APP).as_posix() for p in APP.rglob("*") if p.is_file()}
    assert {"manifest.yml", "form.yml", "submit.yml.erb", "view.html.erb", "README.md", "template/before.sh.erb",
            "template/script.sh.erb", "template/after.sh.erb"} <= files
    assert (APP / "template" / "script.sh.erb").stat().st_mode & stat.S_IXUSR
    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["mpiworkbench"]
    package = APP.parents[1]
    shipped = {f for pattern in patterns for f in glob.glob(pattern, root_dir=package, recursive=True)}
    missing = sorted(f for f in files if f"deploy/ondemand/{f}" not in shipped)
    assert not missing, f"files of the OOD app no wheel would ship: {missing} (pyproject's package-data)"


def test_the_templates_ask_only_for_the_forms_fields():
    """A name the form does not define renders as nothing in OOD (an OpenStruct answers nil)."""
    form = yaml.safe_load((APP / "form.yml").read_text())
    known = {"cluster", *form["form"]}
    used = {name for path in APP.rglob("*.erb") for name in re.findall(r"context\.(\w+)", path.read_text())}
    assert used and used <= known, f"fields the form does not define: {sorted(used - known)}"


def test_submit_asks_slurm_for_nodes_times_tasks(session):
    out, _ = session
    submit = yaml.safe_load((out / "submit.yml").read_text())
    assert submit["batch_connect"]["template"] == "basic"
    native = submit["script"]["native"]
    assert all(isinstance(word, str) for word in native), native
    pairs = dict(zip(native[::2], native[1::2]))
    assert pairs == {"--nodes": "2", "--ntasks-per-node": "2"}, native  # the hours are OOD's (bc_num_hours)


def test_the_scripts_are_bash(session):
    out, _ = session
    for script in sorted((out / "template").glob("*.sh")):
        checked = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, timeout=LIMIT_S)
        assert checked.returncode == 0, f"{script.name}: {checked.stderr}"


def test_before_takes_a_port_and_password_and_writes_jupyters_settings(session, tmp_path):
    out, _ = session
    shown = _bash(OOD_HELPERS + 'host=localhost\nsource template/before.sh\n'
                  'printf "%s\\n" "$port" "$password" "$jupyter_config"; declare -p jupyter_config\n',
                  out, _clean_env(tmp_path))
    assert shown.returncode == 0, shown.stderr
    port, password, config_path, declared = shown.stdout.splitlines()
    assert (port, (out / "find_port.args").read_text().strip()) == ("40123", "localhost")
    assert len(password) == 16 and password.isalnum()
    assert declared.startswith("declare -x"), "script.sh (a new process) must inherit the config's path"
    config_file = Path(config_path)
    assert config_file.parent == out and stat.S_IMODE(config_file.stat().st_mode) == 0o600
    config = json.loads(config_file.read_text())
    assert config["IdentityProvider"]["token"] == password
    assert config["IdentityProvider"]["cookie_options"] == {"samesite": "Lax"}
    assert config["ServerApp"] == {"disable_check_xsrf": True, "allow_origin": "*"}
    assert set(config["IdentityProvider"]) <= _class_names("jupyter_server.auth.identity", "IdentityProvider")
    assert set(config["ServerApp"]) <= _class_names("jupyter_server.serverapp", "ServerApp")


def test_script_starts_jupyterlab_on_the_nodes_port_in_the_job(session, tmp_path):
    """Modules loaded, the environment activated, JupyterLab on host:port under OOD's /node/
    path with external kernels; the job's Slurm variables reach it as the job got them."""
    out, environment = session
    config = out / "jupyter_config.json"
    env = _clean_env(tmp_path, host="node1", port="40123", jupyter_config=str(config), **SLURM_JOB)
    ran = _bash(f'module () {{ echo "$*" >> "{tmp_path}/module.calls"; }}\nexport -f module\n./template/script.sh',
                out, env)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "module.calls").read_text() == "load mpich\n"
    argv = (tmp_path / "jupyter.argv").read_text().splitlines()
    assert argv[0] == "lab"
    assert {f"--config={config}", "--ServerApp.ip=node1", "--ServerApp.port=40123", "--ServerApp.port_retries=0",
            "--ServerApp.base_url=/node/node1/40123/", "--ServerApp.allow_external_kernels=True"} <= set(argv)
    options = {arg[len("--ServerApp."):].split("=")[0] for arg in argv if arg.startswith("--ServerApp.")}
    assert options <= _class_names("jupyter_server.serverapp", "ServerApp")
    seen = dict(line.split("=", 1) for line in (tmp_path / "jupyter.env").read_text().splitlines() if "=" in line)
    assert {k: seen.get(k) for k in SLURM_JOB} == SLURM_JOB | {"SLURM_EXPORT_ENV": "ALL"}
    assert seen["PATH"].startswith(f"{environment}/bin:")
    commands = [line for line in (out / "template" / "script.sh").read_text().splitlines()
                if not line.lstrip().startswith("#")]
    assert not [line for line in commands if re.search(r"\b(srun|mpiexec|mpirun)\b", line)], "the kernels start MPI"


def test_script_stops_when_the_environment_lacks_mpiworkbench(tmp_path):
    environment = _stand_in_environment(tmp_path, importable=False)
    out = _render(tmp_path, environment)
    env = _clean_env(tmp_path, host="node1", port="40123", jupyter_config=str(out / "jupyter_config.json"))
    ran = _bash(f'module () {{ :; }}\nexport -f module\n./template/script.sh', out, env)
    assert ran.returncode == 1 and "mpiworkbench is not importable" in ran.stderr
    assert not (tmp_path / "jupyter.argv").exists()


@pytest.mark.parametrize("listening", [True, False])
def test_after_waits_for_jupyterlab_before_the_connect_button(session, tmp_path, listening):
    out, _ = session
    ran = _bash(OOD_HELPERS + "host=node1 port=40123\nsource template/after.sh\necho waited\n", out,
                _clean_env(tmp_path, PORT_ANSWER="0" if listening else "1"))
    assert (out / "wait.args").read_text().split()[0] == "node1:40123"
    if listening:
        assert ran.returncode == 0 and ran.stdout.rstrip().endswith("waited")
    else:
        assert ran.returncode == 1 and (out / "clean_up.args").read_text().strip() == "clean_up 1"


def test_the_view_posts_the_password_to_jupyterlabs_login_through_ood(session):
    out, _ = session
    view = (out / "view.html").read_text()
    assert '<form action="/node/node1/40123/login" method="post"' in view
    assert f'name="password" value="{CONNECTION["password"]}"' in view
    assert "<%" not in view
