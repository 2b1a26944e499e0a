"""Whether this user's JupyterLab shows the MPI world sidebar, and if not, what works instead.

A lab serves the sidebar only when its own environment has the lab part (:mod:`mpiworkbench.lab`):
a centre's JupyterLab, with the user's kernel from another environment, has not — no sidebar, and
no rank kernels listed. The lab part leaves a marker while its server runs
(:func:`mpiworkbench.lab.protocol.live_labs`); without one, ``%%px --debug``,
``wb.connection_file`` and ``wb.panel()`` name the one command that adds it (with the Python of
the lab this user runs, read from the server's process) and a way that works in any lab: a
terminal console on a rank's connection file (``python -m jupyter_console --existing FILE``), or
for a rank stopped at a breakpoint (whose console would not answer) its debugger in a terminal
(``python -m mpiworkbench debug FILE``).
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from mpiworkbench.lab.protocol import INSTALL_COMMAND, live_labs


def runtime_dir() -> str:
    from jupyter_core.paths import jupyter_runtime_dir  # (lazy: only a kernel that debugs asks)

    return jupyter_runtime_dir()


def in_a_kernel() -> bool:
    """Whether this process is a Jupyter kernel (a script or the CLI has no lab to advise on)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return getattr(shell, "kernel", None) is not None


def sidebar_shown() -> bool:
    """Whether a lab of this user, on this host, serves the sidebar and lists rank kernels."""
    return any(lab.get("external_kernels") for lab in live_labs(runtime_dir()))


def lab_pythons() -> list[str]:
    """The Pythons that run this user's Jupyter servers on this host (the first word of each
    server's command line, when it is a path: a venv's ``bin/python`` as it was started, not the
    interpreter it links to)."""
    found = []
    for path in sorted(Path(runtime_dir()).glob("jpserver-*.json")):
        try:
            pid = int(json.loads(path.read_text())["pid"])
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                first = f.read().split(b"\0")[0].decode()
            if os.sep in first and not os.path.isabs(first):  # started as .venv/bin/python: from its directory
                first = os.path.normpath(os.path.join(os.readlink(f"/proc/{pid}/cwd"), first))
        except (OSError, ValueError, KeyError):
            continue  # a server gone, or not readable
        if os.path.isabs(first) and "python" in os.path.basename(first) and first not in found:
            found.append(first)
    return found


def install_line() -> str:
    """The command that adds the sidebar to the lab this user runs (its Python named when one
    server runs; a placeholder to fill in otherwise)."""
    pythons = lab_pythons()
    lab_python = pythons[0] if len(pythons) == 1 else "LAB_PYTHON"
    line = INSTALL_COMMAND.format(python=shlex.quote(sys.executable), lab_python=shlex.quote(lab_python))
    if lab_python == "LAB_PYTHON":
        line += " (LAB_PYTHON: the Python that runs your JupyterLab; `head -1 $(which jupyter-lab)` names it)"
    return line


def console_line(path: Path) -> str:
    """The command that opens a terminal console on the kernel of connection file *path*, with
    this kernel side's Python (whose environment has jupyter_console: a lab's may not)."""
    return f"{shlex.quote(sys.executable)} -m jupyter_console --existing {shlex.quote(str(path))}"


def debugger_line(path: Path) -> str:
    """The command that opens a terminal debugger on the rank of connection file *path*
    (:mod:`mpiworkbench.cli.debug`: a stopped rank's console would not answer, its debugger does)."""
    return f"{shlex.quote(sys.executable)} -m mpiworkbench debug {shlex.quote(str(path))}"


def advice(files: dict[int, Path] | None = None, debugging: bool = False) -> str:
    """``""`` when the sidebar is shown; else, in a few lines, the command that adds it and, for
    the ranks of *files* (rank → connection file), how to reach them from any lab: a console on
    the rank's kernel, or when *debugging* (ranks that stop at breakpoints) the rank's debugger.
    Outside a Jupyter kernel (a script), ``""`` too."""
    if not in_a_kernel() or sidebar_shown():
        return ""
    lines = ["No JupyterLab of yours on this host shows the MPI world sidebar (the lab's environment lacks the "
             f"lab part), so none lists the ranks' kernels. Add it, then restart the lab: {install_line()}"]
    reach, what = (debugger_line, "debugger: n, s, c, p EXPR as in pdb") if debugging else (console_line, "kernel")
    for rank, path in sorted((files or {}).items()):
        lines.append(f"Meanwhile, in any terminal of this host: {reach(path)}   (rank {rank}'s {what})")
    return "\n".join(lines)
