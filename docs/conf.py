"""Sphinx configuration of the mpiworkbench site (built by ``docs/build.py``: ``make docs``)."""

from __future__ import annotations

import argparse
import os

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

import mpiworkbench

project = "mpiworkbench"
author = "the mpiworkbench developers"
copyright = "mpiworkbench developers"  # noqa: A001 - Sphinx's name
release = version = mpiworkbench.__version__

extensions = ["myst_nb", "sphinx.ext.autodoc", "numpydoc"]
exclude_patterns = ["_build", "notebooks/README.md", "**/.ipynb_checkpoints"]
myst_enable_extensions = ["colon_fence"]
myst_heading_anchors = 3

# the notebooks as handed out, executed by docs/build.py (small sizes, clusters of their own)
nb_execution_mode = os.environ.get("MPIWORKBENCH_DOCS_EXECUTE", "off")
nb_execution_timeout = 600
nb_execution_raise_on_error = True
nb_execution_in_temp = True
nb_execution_show_tb = True
# live widgets have no state to show on a static page; their text fallback is shown instead
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]

# an error output's text (a hang report: "…", "↔") is not always valid input for Pygments's
# IPython-traceback lexer; Sphinx then shows it unhighlighted, which is all we want
suppress_warnings = ["misc.highlighting_failure"]

autodoc_member_order = "bysource"
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_attributes_as_param_list = False

html_theme = "pydata_sphinx_theme"
html_title = "mpiworkbench"
html_theme_options = {"navigation_depth": 2, "show_toc_level": 2}
html_static_path: list[str] = []


class CommandLine(SphinxDirective):
    """``.. mpiworkbench-cli::`` — the ``--help`` of ``mpiworkbench`` and of every command and
    experiment, from the parser itself (never a copy that drifts)."""

    def run(self):
        from mpiworkbench.cli import build_parser

        out = []

        def walk(parser: argparse.ArgumentParser, name: str) -> None:
            section = nodes.section(ids=[nodes.make_id(name)])
            section += nodes.title(text=name)
            section += nodes.literal_block(text=parser.format_help())
            out.append(section)
            for action in parser._actions:  # argparse keeps its subcommands here
                if isinstance(action, argparse._SubParsersAction):
                    for sub_name, sub in action.choices.items():
                        walk(sub, f"{name} {sub_name}")

        os.environ.setdefault("COLUMNS", "100")
        walk(build_parser(), "mpiworkbench")
        return out


def setup(app):
    app.add_directive("mpiworkbench-cli", CommandLine)
