"""What every figure module shares: the figure record, PNG rendering and scheme colours."""

from __future__ import annotations

import io
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.figure import Figure as MplFigure

#: Resolution of the PNG images.
DPI = 100


@dataclass
class Figure:
    """One rendered figure of the report."""

    #: A file-name-safe identifier, unique in the report (``fig5-CampusWalk``).
    key: str
    #: The section it belongs to (``fig5``, ``fig6``, ...).
    section: str
    #: A one-line title.
    title: str
    #: What the figure shows, one or two sentences.
    caption: str
    #: The PNG image.
    png: bytes


def new_figure(rows: int = 1, cols: int = 1, size: tuple[float, float] = (9.0, 5.0), **kwargs):
    """A matplotlib figure with ``rows`` x ``cols`` axes (not attached to pyplot's state)."""
    fig = MplFigure(figsize=size, dpi=DPI, layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False, **kwargs)
    return fig, axes


def to_png(fig: MplFigure) -> bytes:
    """Renders ``fig`` as PNG bytes."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    return buffer.getvalue()


def safe_key(text: str) -> str:
    """``text`` with everything but letters, digits, ``-``, ``_`` and ``.`` replaced by ``_``."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in text)


class Palette:
    """A fixed colour per scheme, the same in every figure (tab10, then tab20)."""

    def __init__(self, schemes: list[str]):
        """Assigns colours to ``schemes`` in sorted order."""
        colors = list(plt.get_cmap("tab10").colors) + list(plt.get_cmap("tab20").colors)
        self._colors = {s: colors[i % len(colors)] for i, s in enumerate(sorted(set(schemes)))}

    def __call__(self, scheme: str):
        """The colour of ``scheme`` (grey when unknown)."""
        return self._colors.get(scheme, (0.5, 0.5, 0.5))
