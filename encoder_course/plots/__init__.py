"""Figures for the notebooks, one module per notebook, all drawn through :mod:`encoder_course.plots.style`.

Notebooks call ``plots.<name>(...)``; each function returns a titled matplotlib Figure with labelled
axes and an alt text (see :func:`alt_text`). Importing this package changes no matplotlib setting.

=====================  ==========================================================================
module                 figures
=====================  ==========================================================================
``style``              the shared vocabulary: to_numpy, new figures and axes, finish, palette, alt text
``encoder_map`` (00)   the map of a post-LN or pre-LN encoder (also in 05, 07)
``positions`` (01)     position tables, similarity by offset, wavelengths, the positions explorer
``attention`` (02)     score variance, softmax saturation, query gradients; attention rows and maps
``masks`` (03)         masks, the padding explorer, drift against padding (also in 11)
``heads`` (04)         per-head maps (also in 11), the heads explorer, rank of a head's scores
``residual`` (05)      gradients through deep stacks with and without residual paths; two LayerNorms
``feed_forward`` (06)  activation functions, which positions reach which, the FFN as a key-value memory
``block`` (07)         post-LN vs pre-LN at initialisation, the norm-placement explorer
``stacking`` (08)      parameters by component, the configuration explorer
``cost`` (09)          FLOPs, time and memory against L, the cost explorer
``training`` (10)      loss and accuracy curves, padding at evaluation, norm placement, trained attention
``pretrained`` (11)    sentence similarity ([CLS] vs mean pooling too), real attention maps
=====================  ==========================================================================
"""

from .attention import (
    attention_row_bars,
    attention_weights_heatmap,
    qk_variance_by_dk,
    query_gradient_spread,
    softmax_saturation,
)
from .block import norm_placement_curves, norm_placement_panel
from .cost import attention_peak_memory_vs_length, attention_time_vs_length, cost_overview, layer_flops_vs_length
from .encoder_map import draw_encoder_block, draw_post_and_pre_ln
from .feed_forward import activation_curves, key_value_memory, position_mixing_maps
from .heads import head_maps, head_view_figure, score_rank_plot
from .masks import drift_vs_padding, mask_grid, padding_drift_figure
from .positions import position_offset_similarity, position_table_heatmap, position_wavelengths, positions_panel
from .pretrained import real_attention_figure, similarity_by_pooling, similarity_heatmap
from .residual import gradient_norm_per_layer, gradient_ratio_vs_depth, layer_norm_variants, toy_loss_curves
from .stacking import config_error_figure, parameter_breakdown
from .style import alt_text as alt_text  # the alt text of any figure
from .training import (
    accuracy_vs_padding,
    norm_placement_training,
    predictions_by_padding,
    trained_attention_maps,
    training_accuracy_curves,
    training_loss_curves,
)

# Every plot function, in notebook order (each returns a Figure with an alt text).
__all__ = [
    "draw_encoder_block", "draw_post_and_pre_ln",  # 00
    "position_table_heatmap", "position_offset_similarity", "positions_panel", "position_wavelengths",  # 01
    "qk_variance_by_dk", "softmax_saturation", "query_gradient_spread", "attention_row_bars",  # 02
    "attention_weights_heatmap",
    "mask_grid", "padding_drift_figure", "drift_vs_padding",  # 03
    "head_maps", "head_view_figure", "score_rank_plot",  # 04
    "gradient_ratio_vs_depth", "gradient_norm_per_layer", "toy_loss_curves", "layer_norm_variants",  # 05
    "activation_curves", "position_mixing_maps", "key_value_memory",  # 06
    "norm_placement_curves", "norm_placement_panel",  # 07
    "parameter_breakdown", "config_error_figure",  # 08
    "layer_flops_vs_length", "attention_time_vs_length", "attention_peak_memory_vs_length", "cost_overview",  # 09
    "training_loss_curves", "training_accuracy_curves", "accuracy_vs_padding", "predictions_by_padding",  # 10
    "norm_placement_training", "trained_attention_maps",
    "similarity_heatmap", "similarity_by_pooling", "real_attention_figure",  # 11
]
