"""Interactive explorers for the notebooks.

Each explorer is split in two: a plain callback (``*_view``) that takes the controls' values and
draws or returns a figure, which the tests call for every combination of controls, and a small
function that wires the callback to ipywidgets controls. ipywidgets is imported only here.
"""

from __future__ import annotations
