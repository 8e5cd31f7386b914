"""Figures for the notebooks (matplotlib only). Every figure is titled and its axes labelled."""

from __future__ import annotations

import matplotlib.pyplot as plt

plt.rcParams.setdefault("figure.dpi", 80)
