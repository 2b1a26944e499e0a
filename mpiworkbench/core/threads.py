"""The workbench's own background threads.

A rank's kernel and a notebook's kernel can have a debugger attached (JupyterLab's Debugger,
``%%px --debug``: debugpy). debugpy traces every thread of the process, lists each in the
Debugger's *Threads*, and stops them all at a breakpoint or a *Pause*; a *Pause* then shows
whichever thread it caught first. The workbench's own threads (the hang reporter, the kernel
proxies…) are none of the user's business there, and must run on while the user's code is
stopped (the hang reporter says the rank is *stopped*, not hung). They are marked as
ipykernel marks its own threads (its IOPub, control and heartbeat threads), with the attributes
debugpy reads: never traced, stopped or listed.
"""

from __future__ import annotations

import threading
from typing import Any, Callable


def start_daemon(target: Callable[..., Any], name: str, *args: Any) -> threading.Thread:
    """Start *target* (with *args*) in a daemon thread named *name*, that no debugger attached to
    this process traces, stops or lists; return the thread."""
    thread = threading.Thread(target=target, args=args, name=name, daemon=True)
    thread.pydev_do_not_trace = True  # debugpy's pydevd: not traced, not suspended with the others
    thread.is_pydev_daemon_thread = True  # … and not one of the program's threads it lists
    thread.start()
    return thread
