"""The file row of a measurement panel: a path box, then **Save**, **Load** and a **Clear** button.

The buttons only call what the panel gives them (its ordinary methods, wrapped in the way the
panel reports an error); the row holds no logic of its own.
"""

from __future__ import annotations

from typing import Callable


def file_bar(path: str, save: Callable[[], object], load: Callable[[], object], clear: Callable[[], object],
             *, path_label: str = "File", clear_label: str = "Clear overlays"):
    """An ``HBox`` of a ``Text`` holding *path* (description *path_label*) and the buttons
    ``Save``, ``Load`` and *clear_label*, which call *save*, *load* and *clear* (no arguments).

    Its ``children`` are those four widgets, in that order, for the panel to keep by name.
    """
    import ipywidgets as w

    box = w.Text(value=path, description=path_label)
    buttons = [w.Button(description=label) for label in ("Save", "Load", clear_label)]
    for button, action in zip(buttons, (save, load, clear)):
        button.on_click(lambda _, action=action: action())
    return w.HBox([box, *buttons])
