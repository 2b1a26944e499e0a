"""Tables 3.1 and 4.1 regenerated from the code agree with the thesis; snippets are complete."""

from __future__ import annotations

import ast

import pytest

from mpiworkbench.syntax import lessons, tables
from mpiworkbench.syntax.historic import HISTORIC_MODULES, routines
# Thesis Table 4.1: how many of the six modules provide each routine.
THESIS_COUNTS = {"send": 6, "recv": 6, "sendrecv": 2, "isend": 4, "irecv": 4, "bcast": 6, "reduce": 6,
                 "allreduce": 4, "gather": 5, "allgather": 3, "scatter": 5, "alltoall": 3}


def test_table_4_1_matches_the_thesis_counts():
    table = tables.table_4_1()
    for op, count in THESIS_COUNTS.items():
        assert sum(table[op][m] for m in tables.THESIS_MODULES) == count, op


def test_table_4_1_current_backends():
    table = tables.table_4_1()
    assert all(table[op]["c"] and table[op]["mpi4py-obj"] and table[op]["mpi4py-buf"] for op in THESIS_COUNTS)
    assert not table["alltoall"]["numba-mpi"]


def test_table_3_1_has_fifteen_entries_and_mpi4py_from_backends():
    table = tables.table_3_1()
    assert sum(v for row in table.values() for v in row.values()) == 15
    assert table["Arbitrary Python object"]["mpi4py"] and table["Explicit MPI_Initialize"]["MYMPI"]
    assert "|" in tables.markdown(table)


@pytest.mark.parametrize("module", list(HISTORIC_MODULES))
def test_every_emulated_routine_has_documented_syntax_and_a_snippet(module):
    for op in routines(module):
        assert tables.documented_syntax(op, module), (module, op)
        lesson = lessons.OPERATION_LESSON[op]
        assert lessons.has_snippet(lesson, module), (module, lesson)


def test_documented_syntax_only_for_provided_routines():
    table = tables.table_4_1()
    for (op, module) in tables.DOCUMENTED_SYNTAX:
        if module != "C":
            assert table[op][module], (op, module)


@pytest.mark.parametrize("lesson", list(lessons.LESSONS))
def test_current_columns_have_a_snippet_and_python_parses(lesson):
    for column in ("c", "mpi4py-obj", "mpi4py-buf"):
        assert lessons.has_snippet(lesson, column)
    for column in lessons.COLUMNS:
        if lessons.has_snippet(lesson, column) and column != "c":
            tree = ast.parse(lessons.snippet_source(lesson, column))
            assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), column


def test_expected_results_shapes():
    assert lessons.expected("send_recv", 0, 3) is None
    assert lessons.expected("alltoall", 2, 3).tolist() == [2.0, 102.0, 202.0]
    assert lessons.matches("gather", 0, 2, [[0, 0], [1, 1]])
    assert not lessons.matches("gather", 1, 2, [[0, 0], [1, 1]])
