"""Figures for the reports: matplotlib without a display, one size."""
from pathlib import Path

DPI = 110


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display on a lab host)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def save(fig, path: Path) -> None:
    fig.savefig(path, dpi=DPI)
    pyplot().close(fig)
