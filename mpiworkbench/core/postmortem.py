"""A rank's last failure, frame by frame: what ``wb.post_mortem(rank)`` shows.

When code run on an engine raises (a ``%%px`` cell, ``wb.run``), IPython keeps the exception
and its traceback on that engine (``sys.last_traceback``) until the next one. :func:`last_failure`
reads them there, on the rank, and returns plain data a notebook can show: the exception, and
for every frame from the first of the user's code to the raise, its file, line, function, source
line and local variables (each as a bounded ``repr``). The frames stay on the rank; only this
summary travels.

Engine-side and MPI-free: it runs in an engine (``Session.post_mortem``) the same as under
``mpiexec``.
"""

from __future__ import annotations

import linecache
import reprlib
import sys
from typing import Any

#: Frames of these files are the machinery that ran the code, not the code: left out.
_MACHINERY = ("/IPython/", "/ipykernel/", "/ipyparallel/", "/site-packages/traitlets/", "/asyncio/")

_repr = reprlib.Repr()
_repr.maxstring = _repr.maxother = 120
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 8
_repr.maxarray = 8


def _value(value: Any) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    text = _repr.repr(value)
    if shape is not None and dtype is not None:  # NumPy and friends: say what it is, not only its start
        return f"{type(value).__name__} {dtype} {tuple(shape)}: {text}"
    return text


def last_failure(max_locals: int = 40) -> dict[str, Any] | None:
    """This process's last exception raised by code the engine ran, or ``None`` when none was.

    Returns
    -------
    dict or None
        ``exception`` (type name), ``message``, and ``frames``: innermost last, each with
        ``file``, ``line``, ``function``, ``source`` (the line's text) and ``locals`` (name →
        bounded ``repr``, at most *max_locals* per frame, names starting with ``_`` left out; in
        a cell, the names the failing statement uses).
    """
    value = getattr(sys, "last_value", None)
    tb = getattr(sys, "last_traceback", None)
    if value is None or tb is None:
        return None
    frames = []
    while tb is not None:
        frame, code = tb.tb_frame, tb.tb_frame.f_code
        wrapper = code.co_filename.startswith("<") and not linecache.getline(code.co_filename, tb.tb_lineno)
        if not wrapper and not any(part in code.co_filename for part in _MACHINERY):
            scope = frame.f_locals
            names = [n for n in scope if not n.startswith("_")]
            if frame.f_locals is frame.f_globals:  # a cell's statement: the names it uses, not the namespace
                names = [n for n in code.co_names if n in scope and not n.startswith("_")
                         and not isinstance(scope[n], type(sys))]
            frames.append({
                "file": code.co_filename, "line": tb.tb_lineno, "function": code.co_name,
                "source": linecache.getline(code.co_filename, tb.tb_lineno, frame.f_globals).strip(),
                "locals": {n: _value(scope[n]) for n in names[:max_locals]},
            })
        tb = tb.tb_next
    return {"exception": type(value).__name__, "message": str(value), "frames": frames}
