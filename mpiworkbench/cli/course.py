"""``mpiworkbench course --nbgrader DIR``: the teaching notebooks' exercises as an nbgrader
course, graded against a live MPI cluster (:mod:`mpiworkbench.course`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mpiworkbench import course


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "course",
        help="write the exercises as an nbgrader course (autograded on an MPI cluster)",
        description="Write an nbgrader course directory: one assignment per notebook with exercises, each "
        "exercise a solution cell and a graded, locked test cell. Then, in DIR: `nbgrader generate_assignment "
        "NAME`, collect submissions into submitted/<student>/NAME/, `nbgrader autograde NAME` (on one MPI "
        "cluster, fresh for each submission; a hung MPI call fails its exercise with the hang report) and "
        "`nbgrader generate_feedback NAME`. Needs the `course` extra (nbgrader).",
    )
    parser.add_argument("--nbgrader", required=True, metavar="DIR",
                        help="the course directory to write (an existing one keeps its submissions and gradebook)")
    parser.add_argument("--notebooks", default="notebooks", metavar="DIR",
                        help="where the teaching notebooks are (default: ./notebooks)")
    parser.add_argument("--only", metavar="NAMES",
                        help="comma-separated notebooks to include, e.g. 00_start_here,03_wave_equation "
                        "(default: every notebook with exercises)")
    parser.add_argument("--ranks", type=int, default=course.RANKS,
                        help=f"MPI ranks the grader starts when no cluster of profile {course.PROFILE!r} runs "
                        f"(default {course.RANKS})")
    parser.add_argument("--timeout", type=float, default=course.TIMEOUT_S, metavar="S",
                        help=f"seconds an MPI call may take when graded before it counts as hung (default "
                        f"{course.TIMEOUT_S:g})")
    parser.add_argument("--cell-timeout", type=int, default=course.CELL_TIMEOUT_S, metavar="S",
                        help=f"seconds any cell may take when graded (default {course.CELL_TIMEOUT_S})")
    parser.add_argument("--points", type=int, default=course.POINTS,
                        help=f"points per exercise (default {course.POINTS})")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.points < 1:
        raise ValueError(f"--points {args.points}: an exercise is worth at least 1 point")
    only = [name.strip() for name in args.only.split(",") if name.strip()] if args.only else None
    written = course.build(args.nbgrader, args.notebooks, only=only, ranks=args.ranks, timeout=args.timeout,
                           cell_timeout=args.cell_timeout, points=args.points)
    print(f"wrote the nbgrader course {args.nbgrader} with {len(written)} assignment(s): {', '.join(written)}")
    nbgrader = Path(sys.executable).with_name("nbgrader")
    command = str(nbgrader) if nbgrader.exists() else "nbgrader  # pip install 'mpiworkbench[course]'"
    print(f"next: cd {args.nbgrader} && {command} generate_assignment {written[0]}")
    return 0
