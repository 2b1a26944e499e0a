"""On a rank: its kernel opened for Jupyter clients (a JupyterLab console, the Debugger sidebar, the
workbench's own multi-rank debugger): the kernel's sockets bound once, its debugger made startable
once, and the connection information the notebook writes into a connection file
(:mod:`mpiworkbench.client.calls.debugging`)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from mpiworkbench.client import upstream
from mpiworkbench.core.addresses import own_address

#: The kernel spec named in the connection files (what JupyterLab shows and styles them as).
KERNEL_NAME = "python3"


_debug_shells: set[int] = set()  # ids of the kernels whose debugger's shell link is made (one per engine)


def hide_the_runtime(debugger: Any) -> None:
    """Keep the workbench's runtime out of the rank's debugger, as ipykernel keeps its own: a step
    out of a cell's last line ran into the runtime's hook on the kernel's status (a stop "in
    publish_filtered"). ipykernel's debugger excludes each path of its ``kernel_modules`` (the
    modules loaded when it was made) from stepping and stacks, a debugpy rule each time a client
    attaches; the runtime's folder is added there. The workbench's science (its solvers, kernels,
    benchmarks) stays steppable."""
    modules = getattr(debugger, "kernel_modules", None)
    if isinstance(modules, list):
        runtime = os.path.join(os.path.dirname(os.path.abspath(upstream.__file__)), "**")
        if runtime not in modules:
            modules.append(runtime)


def open_kernel(bind: bool = True) -> dict[str, Any]:
    """On an engine: make its kernel's debugger startable (once) and, with *bind*, bind the
    kernel's sockets for Jupyter clients (once); return the connection information (without
    *bind*: whether the rank is debuggable, and its process). The sockets listen on loopback
    when the controller is reached through loopback, else on the address this host reaches
    the controller from. Unbound, the rank is reached through the controller
    (:mod:`mpiworkbench.client.calls.kernel_proxy`)."""
    from ipyparallel.engine.app import IPEngine

    engine = IPEngine.instance()
    app = engine.kernel_app
    kernel = engine.kernel
    if bind and not upstream.kernel_bound(engine):
        app.ip = own_address(engine.registration_url)
        engine.bind_kernel()
        with contextlib.suppress(OSError):
            Path(app.abs_connection_file).unlink()  # ipyparallel's copy; the client writes its own
    shell = getattr(kernel, "debug_shell_socket", None)
    if shell is not None and id(kernel) not in _debug_shells:
        import atexit
        import shutil

        from ipykernel.compiler import get_tmp_directory

        # how the debugger starts debugpy: an execute_request to the kernel's own shell, over a
        # link inside the process (nothing listens on the network for it)
        address = f"inproc://mpiworkbench-debug-shell-{os.getpid()}"
        engine.shell_socket.bind(address)
        shell.connect(address)
        _debug_shells.add(id(kernel))
        # the debugger writes the cells it is shown (dumpCell) there, and never removes them
        atexit.register(shutil.rmtree, get_tmp_directory(), ignore_errors=True)
        hide_the_runtime(getattr(kernel, "debugger", None))
    info = {}
    if bind:
        info = dict(app.get_connection_info())
        key = info.get("key", b"")
        info["key"] = key.decode() if isinstance(key, bytes) else key
    info["kernel_name"] = KERNEL_NAME
    info["debuggable"] = shell is not None and getattr(kernel, "debugger", None) is not None
    info["pid"] = os.getpid()
    return info
