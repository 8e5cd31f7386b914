"""Interactive explorers for the notebooks, one module per notebook (ipywidgets is imported only here).

Each explorer is split in two: a plain callback (``*_view``) that takes the controls' values and
returns a figure (or HTML), which the tests call for every combination of controls, and an
``explore_*`` function that wires the callback to ipywidgets controls; figures reach an Output widget
through :mod:`._display`. Notebooks call ``widgets.<name>(...)``. A module is named like its notebook
(``multi_head.py`` for ``04_multi_head``) and lists what it gives the notebooks in its ``__all__``; every
module's ``__all__`` is exported here, with nothing to add by hand.

The experiments the explorers show are measurements with modules of their own, named for what they
measure, in :mod:`encoder_course.measure`: ``gradient_flow`` (05, 07), ``padding_drift`` (03),
``head_maps`` (04), ``counting`` (08), ``cost`` (09).

============================== ================================================================
module                         explorers
============================== ================================================================
``tokens_and_positions``       01: explore_positions / positions_view
``attention``                  00, 02: explore_attention_scale / attention_scale_view
``masks``                      03: explore_padding / padding_view
``multi_head``                 04: explore_heads / heads_view
``residual_and_layernorm``     05: explore_residual_depth / residual_depth_view
``encoder_block``              07: explore_norm_placement / norm_placement_view
``stacking``                   08: explore_config / config_view
``cost``                       09: explore_cost / cost_view
``pretrained``                 11: explore_real_attention / real_attention_view
``real_text``                  12: explore_search, explore_fine_tuning / search_view, compare_view
``modern_encoder``             13: explore_modern_encoder / modern_encoder_view
``review``                     14: quiz / quiz_view
============================== ================================================================
"""

from __future__ import annotations

import importlib
import pkgutil

__all__: list[str] = []
for _info in pkgutil.iter_modules(__path__):  # every module gives what its __all__ names
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    globals().update({name: getattr(_module, name) for name in getattr(_module, "__all__", ())})
    __all__ += getattr(_module, "__all__", [])
