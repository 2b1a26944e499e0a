"""The speedup figure (log2 axes, ideal line, oversubscription marks) and the CLI's parsing."""

import pytest
from matplotlib.figure import Figure

from mpiworkbench.cli import build_parser, main
from mpiworkbench.plot.speedup import scaling_figure
from mpiworkbench.speedup.analysis import SpeedupResult
def result(label=""):
    r = SpeedupResult("inner", label=label)
    for n, t, over in [(1, 4.0, False), (2, 2.1, False), (4, 1.3, True)]:
        r.add(
            {
                "experiment": "inner", "variant": "c", "nranks": n, "size": 10, "times": [t, t * 1.1],
                "oversubscribed": over, "placement": {"cores": 2, "oversubscribed": over, "hosts": {}},
            }
        )
    return r


def test_figure_has_log2_axes_ideal_line_and_oversubscription_label():
    fig = scaling_figure(result(), "n", title="inner")
    assert isinstance(fig, Figure)
    ax_t, ax_s, ax_e = fig.axes[:3]
    for ax in (ax_t, ax_s, ax_e):
        assert ax.get_xscale() == "log"
    assert ax_t.get_yscale() == "log" and ax_s.get_yscale() == "log"
    labels = [line.get_label() for line in ax_s.get_lines()]
    assert "ideal speedup" in labels
    texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
    assert "oversubscribed" in texts and "> 2 cores" in texts


def test_figure_overlays_several_results_with_their_labels():
    fig = scaling_figure([result("today"), result("yesterday")], "n")
    legend = [t.get_text() for t in fig.axes[1].get_legend().get_texts()]
    assert any(t.startswith("today:") for t in legend) and any(t.startswith("yesterday:") for t in legend)


def test_cli_speedup_parses_experiment_options():
    args = build_parser().parse_args(["speedup", "wave", "--np", "1,2", "--mesh", "65", "--json", "out.json"])
    assert args.experiment == "wave" and args.sizes == "65" and args.json == "out.json"


def test_cli_rejects_bad_rank_counts_before_starting_mpiexec(capsys):
    assert main(["speedup", "inner", "--np", "0,2"]) == 2
    assert "rank counts must be at least 1" in capsys.readouterr().err


def test_cli_requires_an_experiment():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["speedup"])


def test_inner_figure_has_thesis_table_2_1_beside():
    labels = [line.get_label() for line in scaling_figure(result(), "n").axes[1].get_lines()]
    assert any(label.startswith("then: thesis Table 2.1, C") for label in labels)
    assert any(label.startswith("then: thesis Table 2.1, Python") for label in labels)
