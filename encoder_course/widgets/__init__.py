"""Interactive explorers for the notebooks, one module per notebook (ipywidgets is imported only here).

Each explorer is split in two: a plain callback (``*_view``) that takes the controls' values and
returns a figure (or HTML), which the tests call for every combination of controls, and an
``explore_*`` function that wires the callback to ipywidgets controls; figures reach an Output widget
through :mod:`._display`. Notebooks call ``widgets.<name>(...)``.

The experiments the explorers show are measurements with modules of their own, named for what they
measure: :mod:`encoder_course.gradient_flow` (05, 07), :mod:`encoder_course.padding_drift` (03),
:mod:`encoder_course.head_maps` (04), :mod:`encoder_course.counting` (08), :mod:`encoder_course.cost` (09).

=================  ================================================================
module             explorers
=================  ================================================================
``positions``      01: explore_positions / positions_view
``attention``      00, 02: explore_attention_scale / attention_scale_view
``masks``          03: explore_padding / padding_view
``heads``          04: explore_heads / heads_view
``residual``       05: explore_residual_depth / residual_depth_view
``block``          07: explore_norm_placement / norm_placement_view
``stacking``       08: explore_config / config_view
``cost``           09: explore_cost / cost_view
``pretrained``     11: explore_real_attention / real_attention_view
``review``         12: quiz / quiz_view
=================  ================================================================
"""

from .attention import ATTENTION_SCALE_D_KS, ATTENTION_SCALE_EXPONENTS, attention_scale_view, explore_attention_scale
from .block import NORM_PLACEMENT_DEPTHS, explore_norm_placement, norm_placement_view
from .cost import COST_D_MODELS, COST_LENGTHS, cost_view, explore_cost
from .heads import explore_heads, heads_view
from .masks import explore_padding, padding_view
from .positions import POSITIONS_D_MODELS, POSITIONS_SEQ_LEN, POSITIONS_STEP, explore_positions, positions_view
from .pretrained import REAL_ATTENTION_SENTENCES, explore_real_attention, real_attention_view
from .residual import RESIDUAL_DEPTHS, explore_residual_depth, residual_depth_view
from .review import quiz, quiz_view
from .stacking import (
    CONFIG_D_MODELS,
    CONFIG_FF_RATIOS,
    CONFIG_HEADS,
    CONFIG_LAYERS,
    CONFIG_VOCABS,
    config_view,
    explore_config,
)

__all__ = [
    # 01
    "explore_positions", "positions_view", "POSITIONS_D_MODELS", "POSITIONS_SEQ_LEN", "POSITIONS_STEP",
    # 00, 02
    "explore_attention_scale", "attention_scale_view", "ATTENTION_SCALE_EXPONENTS", "ATTENTION_SCALE_D_KS",
    # 03
    "explore_padding", "padding_view",
    # 04
    "explore_heads", "heads_view",
    # 05
    "explore_residual_depth", "residual_depth_view", "RESIDUAL_DEPTHS",
    # 07
    "explore_norm_placement", "norm_placement_view", "NORM_PLACEMENT_DEPTHS",
    # 08
    "explore_config", "config_view", "CONFIG_LAYERS", "CONFIG_D_MODELS", "CONFIG_HEADS", "CONFIG_FF_RATIOS",
    "CONFIG_VOCABS",
    # 09
    "explore_cost", "cost_view", "COST_LENGTHS", "COST_D_MODELS",
    # 11
    "explore_real_attention", "real_attention_view", "REAL_ATTENTION_SENTENCES",
    # 12
    "quiz", "quiz_view",
]
