"""``mpiworkbench lab-part``: the MPI world sidebar for a JupyterLab of another environment.

At a centre, JupyterLab runs from the centre's environment (an Open OnDemand app, a JupyterHub)
and users bring their kernels; a lab extension lives in the lab's environment, so the sidebar must
be added there. This command builds the lab part (:mod:`mpiworkbench.lab`: the server extension,
its protocol, the prebuilt lab extension) as a wheel of its own, ``mpiworkbench-lab``, from the
files of this installation — no Node.js, nothing of the workbench's scientific stack — and
installs it with the lab's Python::

    mpiworkbench lab-part wheel --dir DIR            # the wheel, for a centre to install
    mpiworkbench lab-part install --python LAB_PYTHON
    mpiworkbench lab-part ondemand --dir APPS/mpiworkbench   # the Open OnDemand app (mpiworkbench.deploy)

The wheel is written by hand (:func:`build_wheel`): a zip with the package, its data files
(``share/jupyter/labextensions/…``, ``etc/jupyter/jupyter_server_config.d/…``) and the
``.dist-info`` that pip reads.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import json
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import mpiworkbench
from mpiworkbench import lab
from mpiworkbench.deploy import ondemand_app_dir

#: The lab part's distribution and import names.
DISTRIBUTION, PACKAGE = "mpiworkbench-lab", "mpiworkbench_lab"
#: The lab part's modules (its whole Python side: they import nothing else of the package).
MODULES = ("__init__.py", "server.py", "protocol.py")
#: What the lab's environment needs already (every JupyterLab has it).
REQUIRES = ("jupyter_server>=2.4",)
#: The server's settings the wheel installs: the extension on (it has the lab list the ranks' kernels).
SERVER_CONFIG = {"ServerApp": {"jpserver_extensions": {PACKAGE: True}}}


def _record_line(name: str, data: bytes) -> list[str]:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return [name, f"sha256={digest}", str(len(data))]


def build_wheel(out: Path, version: str = mpiworkbench.__version__) -> Path:
    """Write the lab part's wheel into directory *out*; its path. ``FileNotFoundError`` (saying
    how to build it) when this installation has no built lab extension."""
    source = Path(lab.__file__).parent
    extension = source / "labextension"
    if not (extension / "package.json").is_file():
        raise FileNotFoundError(f"the lab extension is not built in {extension}: run `make labextension` in the "
                                "repository (Node.js needed there once; the wheel then needs none)")
    files: dict[str, bytes] = {f"{PACKAGE}/{name}": (source / name).read_bytes() for name in MODULES}
    data = f"{PACKAGE}-{version}.data/data"
    for path in sorted(p for p in extension.rglob("*") if p.is_file()):
        relative = path.relative_to(extension).as_posix()
        files[f"{PACKAGE}/labextension/{relative}"] = path.read_bytes()
        files[f"{data}/share/jupyter/labextensions/{lab.LABEXTENSION_NAME}/{relative}"] = path.read_bytes()
    files[f"{data}/etc/jupyter/jupyter_server_config.d/{PACKAGE}.json"] = json.dumps(SERVER_CONFIG, indent=2).encode()
    info = f"{PACKAGE}-{version}.dist-info"
    files[f"{info}/METADATA"] = "\n".join([
        "Metadata-Version: 2.1", f"Name: {DISTRIBUTION}", f"Version: {version}",
        "Summary: The MPI world sidebar of mpiworkbench, for a JupyterLab of its own environment",
        *(f"Requires-Dist: {need}" for need in REQUIRES), ""]).encode()
    files[f"{info}/WHEEL"] = b"Wheel-Version: 1.0\nGenerator: mpiworkbench lab-part\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    files[f"{info}/top_level.txt"] = f"{PACKAGE}\n".encode()
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for name, content in files.items():
        writer.writerow(_record_line(name, content))
    writer.writerow([f"{info}/RECORD", "", ""])
    files[f"{info}/RECORD"] = record.getvalue().encode()
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"{PACKAGE}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return wheel


#: What the install asks of the lab's Python: may it write its environment, has it a user site,
#: and the user's Jupyter data and config directories (as that Python's jupyter_core names them).
LAB_FACTS = ("import json, os, site, sysconfig\n"
             "from jupyter_core.paths import jupyter_config_dir, jupyter_data_dir\n"
             "print(json.dumps({'writable': os.access(sysconfig.get_paths()['purelib'], os.W_OK),\n"
             "                  'user_site': bool(site.ENABLE_USER_SITE),\n"
             "                  'data': jupyter_data_dir(), 'config': jupyter_config_dir()}))")
#: The lines of the user's ``jupyter_server_config.py`` that hand a lab part of the user's own folder
#: to a lab whose environment has none (:func:`config_block`).
BLOCK_BEGIN, BLOCK_END = "# >>> mpiworkbench lab part >>>", "# <<< mpiworkbench lab part <<<"


def lab_facts(python: str) -> dict:
    """:data:`LAB_FACTS` of the lab's *python*."""
    out = subprocess.run([python, "-c", LAB_FACTS], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        raise ValueError(f"--python {python!r} could not say where its lab keeps extensions: {out.stderr.strip()[-300:]}")
    return json.loads(out.stdout)


def install_command(python: str, wheel: Path, facts: dict) -> list[str]:
    """The pip command that installs *wheel* with the lab's *python*: into its environment when
    that is writable; else into the user's site when that Python has one; else (a read-only venv,
    which sees no user site) into :func:`own_folder`, which :func:`config_block` hands to the lab."""
    pip = [python, "-m", "pip", "install", "--no-deps", "--force-reinstall"]
    where = place(facts)
    if where == "environment":
        return [*pip, str(wheel)]
    if where == "user site":
        return [*pip, "--user", str(wheel)]
    return [*pip, "--upgrade", "--target", str(own_folder(facts)), str(wheel)]


def place(facts: dict) -> str:
    """Where the lab part goes for a lab of *facts*: ``environment``, ``user site`` or ``own folder``."""
    return "environment" if facts["writable"] else "user site" if facts["user_site"] else "own folder"


def own_folder(facts: dict) -> Path:
    """Where the lab part goes for a lab whose environment is read-only and sees no user site: a
    folder of the user's Jupyter data directory."""
    return Path(facts["data"]) / DISTRIBUTION


def config_block(folder: Path) -> str:
    """The lines of ``jupyter_server_config.py`` that hand the lab part in *folder* to the lab:
    its package on the path, its server extension on, its lab extension's folder. They do nothing
    when the folder is gone, or when the lab's environment has a lab part of its own (the
    workbench's environment, or the wheel installed there)."""
    return f"""{BLOCK_BEGIN} (written by `mpiworkbench lab-part install`; delete these lines to remove it)
def _mpiworkbench_lab_part(c, folder={str(folder)!r}):
    import importlib.util, os, sys
    own = importlib.util.find_spec("{PACKAGE}") or importlib.util.find_spec("mpiworkbench")
    if own or not os.path.isdir(os.path.join(folder, "{PACKAGE}")):
        return
    sys.path.append(folder)
    c.ServerApp.jpserver_extensions.update({{"{PACKAGE}": True}})
    c.LabApp.extra_labextensions_path.append(os.path.join(folder, "share", "jupyter", "labextensions"))
_mpiworkbench_lab_part(c)
{BLOCK_END}
"""


def with_block(text: str, block: str) -> str:
    """*text* (a ``jupyter_server_config.py``) with *block* in place of an earlier one, or added."""
    if BLOCK_BEGIN in text and BLOCK_END in text:
        head, rest = text.split(BLOCK_BEGIN, 1)
        return head + block + rest.split(BLOCK_END, 1)[1].lstrip("\n")
    return text + ("\n" if text and not text.endswith("\n") else "") + block


def hand_to_the_lab(facts: dict) -> Path:
    """Write :func:`config_block` into the user's ``jupyter_server_config.py``; its path."""
    config = Path(facts["config"]) / "jupyter_server_config.py"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(with_block(config.read_text() if config.is_file() else "", config_block(own_folder(facts))))
    return config


def run(args: argparse.Namespace) -> int:
    if args.action == "wheel":
        print(build_wheel(Path(args.directory)))
        return 0
    if args.action == "ondemand":
        target = Path(args.directory)
        if target.exists():
            raise ValueError(f"--dir {args.directory!r} exists already: name a new folder (e.g. APPS/mpiworkbench), "
                             "or remove the old app first, keeping its form.yml")
        shutil.copytree(ondemand_app_dir(), target)
        print(f"{target}: the Open OnDemand app; edit its form.yml (the lines marked EDIT), as its README.md says")
        return 0
    python = args.python
    check = subprocess.run([python, "-c", "import jupyter_server"], capture_output=True, text=True, timeout=120)
    if check.returncode != 0:
        raise ValueError(f"--python {python!r} is not the Python of a Jupyter server's environment "
                         f"(`{python} -c 'import jupyter_server'` failed: {check.stderr.strip()[-300:]}); "
                         "give the Python that runs the lab (`which jupyter-lab` shows its environment)")
    facts = lab_facts(python)
    with tempfile.TemporaryDirectory(prefix="mpiworkbench-lab-part-") as directory:
        command = install_command(python, build_wheel(Path(directory)), facts)
        print("$", " ".join(command), flush=True)
        if subprocess.call(command) != 0:
            return 1
    if place(facts) == "own folder":
        print(f"The lab's environment is read-only and sees no user site: the lab part is in {own_folder(facts)}, "
              f"handed to the lab by a marked block of {hand_to_the_lab(facts)}.")
    print("The MPI world sidebar is installed for that lab: restart the lab (it loads extensions when it starts).")
    return 0


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "lab-part", help="the MPI world sidebar for a JupyterLab of another environment (a centre's)",
        description="Build the lab part (the MPI world sidebar: server extension and prebuilt lab extension) "
                    "as the wheel mpiworkbench-lab, or install it with the lab's Python.")
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    wheel = actions.add_parser("wheel", help="write the wheel into a directory")
    wheel.add_argument("--dir", dest="directory", default=".", help="directory to write the wheel into (default: here)")
    install = actions.add_parser("install", help="install it into the environment of the lab's Python")
    install.add_argument("--python", required=True, help="the Python that runs the lab (its environment gets the sidebar)")
    ondemand = actions.add_parser("ondemand", help="copy the Open OnDemand app into a new folder")
    ondemand.add_argument("--dir", dest="directory", required=True, help="the app's new folder, in your OOD apps directory")
    parser.set_defaults(func=run)
