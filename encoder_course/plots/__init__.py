"""Figures for the notebooks, one module per notebook, all drawn through :mod:`encoder_course.plots.style`.

Notebooks call ``plots.<name>(...)``; each function returns a titled matplotlib Figure with labelled
axes and an alt text (see :func:`alt_text`). Importing this package changes no matplotlib setting.
A module is named like its notebook (``multi_head.py`` for ``04_multi_head``) and lists what it gives the
notebooks in its ``__all__``; every module's ``__all__`` is exported here, with nothing to add by hand.

================================== ==========================================================================
module                             figures
================================== ==========================================================================
``style``                          the shared vocabulary: to_numpy, new figures and axes, finish, palette, alt text
``encoder_map`` (00)               the map of a post-LN or pre-LN encoder (also in 05, 07)
``tokens_and_positions`` (01)      position tables, similarity by offset, wavelengths, the positions explorer
``attention`` (02)                 score variance, softmax saturation, query gradients; attention rows and maps
``masks`` (03)                     masks, the padding explorer, drift against padding (also in 11)
``multi_head`` (04)                per-head maps (also in 11), the heads explorer, rank of a head's scores
``residual_and_layernorm`` (05)    gradients through deep stacks with and without residual paths; two LayerNorms
``feed_forward`` (06)              activation functions, which positions reach which, the FFN as a key-value memory
``encoder_block`` (07)             post-LN vs pre-LN at initialisation, the norm-placement explorer
``stacking`` (08)                  parameters by component, the configuration explorer
``cost`` (09)                      FLOPs, time and memory against L, the cost explorer
``training`` (10)                  loss and accuracy curves, padding at evaluation, norm placement, trained attention
``pretrained`` (11)                sentence similarity ([CLS] vs mean pooling too), real attention maps
``real_text`` (12)                 passage lengths, retrieval measured three ways
``modern_encoder`` (13)            rotary scores, length extrapolation, windows per layer, local attention's cost,
                                   unpadding's time, the same-budget comparison
================================== ==========================================================================
"""

from __future__ import annotations

import importlib
import pkgutil

__all__: list[str] = []
for _info in pkgutil.iter_modules(__path__):  # every module gives what its __all__ names
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    globals().update({name: getattr(_module, name) for name in getattr(_module, "__all__", ())})
    __all__ += getattr(_module, "__all__", [])
