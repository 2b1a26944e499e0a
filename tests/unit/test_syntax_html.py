"""The side-by-side HTML table (no cluster): code shown is the snippet file, C first."""

from __future__ import annotations

from mpiworkbench.widgets.syntax import side_by_side_html, summary_line
from mpiworkbench.syntax import lessons
def test_table_shows_the_files_c_first():
    page = side_by_side_html("bcast")
    assert page.index("MPI_Bcast(data, 4") < page.index("comm.Bcast(data, root=0)")
    assert "bcast/c.c" in page and "emulated on mpi4py" in page
    assert "thesis Table 4.5" in page


def test_table_with_a_report_shows_status_and_reason():
    report = {c: {"status": "ok", "outputs": ["", ""], "results": [[1.0], [1.0]]} for c in lessons.COLUMNS}
    report["numba-mpi"] = {"status": "unsupported", "reason": "numba-mpi 1.3 has no MPI_Alltoall", "outputs": []}
    page = side_by_side_html("alltoall", report=report)
    assert "numba-mpi 1.3 has no MPI_Alltoall" in page and "matches the reference" in page
    assert "numba-mpi —" in summary_line(report)
