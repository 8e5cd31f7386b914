"""The figures of every notebook: the shared style, alt text on every figure, and the encoder map."""

import itertools
import json
import os
import re
import subprocess
import sys
from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch
from matplotlib.colors import to_hex
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch

import encoder_course as ec
from encoder_course import plots
from encoder_course.measure.modern import BudgetRun
from encoder_course.plots import style

TOKENS = ["the", "bank", "approved", "it"]
WEIGHTS = torch.softmax(torch.randn(4, 4, generator=torch.Generator().manual_seed(0)), dim=-1)  # (4, 4)
HEADS = torch.softmax(torch.randn(8, 4, 4, generator=torch.Generator().manual_seed(1)), dim=-1)  # (8, 4, 4)
LENGTHS = [64, 128, 256, 512]
FORMULA = {"projections": [8 * L * 768**2 for L in LENGTHS], "scores": [2 * L * L * 768 for L in LENGTHS],
           "weighted_values": [2 * L * L * 768 for L in LENGTHS], "ffn": [4 * L * 768 * 3072 for L in LENGTHS]}
SWEEP = [{"method": m, "seq_len": L, "status": "ok", "median_s": 1e-6 * L * k, "min_s": 1e-6 * L * k,
          "peak_bytes": L * L * k} for m, k in (("naive", 2), ("sdpa", 1), ("chunked", 1.5)) for L in LENGTHS]
COUNTS = {"embeddings": 23_837_184, "attention": 28_348_416, "feed_forward": 56_669_184, "norms": 36_864,
          "other": 0, "total": 108_891_648}
LOSSES = [2.0 / (1 + 0.05 * s) for s in range(60)]

# One call of every public plot function, with small made-up data of the right shapes.
SAMPLES = {
    "draw_encoder_block": lambda: plots.draw_encoder_block(norm_first=True, n_layers=6),
    "draw_post_and_pre_ln": lambda: plots.draw_post_and_pre_ln(),
    "position_table_heatmap": lambda: plots.position_table_heatmap(torch.rand(16, 8) * 2 - 1),
    "position_offset_similarity": lambda: plots.position_offset_similarity(
        np.arange(10), {"d_model 16": torch.linspace(1, 0, 10), "d_model 64": torch.linspace(1, 0.5, 10)}),
    "positions_panel": lambda: plots.positions_panel(torch.rand(16, 8) * 2 - 1, 3, torch.linspace(0, 1, 16)),
    "position_wavelengths": lambda: plots.position_wavelengths(
        [2 * np.pi * 10000 ** (2 * i / 8) for i in range(4)], 8),
    "qk_variance_by_dk": lambda: plots.qk_variance_by_dk([4, 16, 64], [4.1, 15.8, 63.0], [1.02, 0.99, 0.98]),
    "softmax_saturation": lambda: plots.softmax_saturation(
        [4, 16, 64], {"max weight": [0.5, 0.8, 0.99], "entropy": [1.5, 0.7, 0.05], "gradient norm": [0.4, 0.2, 0.01]},
        {"max weight": [0.4, 0.4, 0.4], "entropy": [1.7, 1.7, 1.7], "gradient norm": [0.4, 0.4, 0.4]}),
    "query_gradient_spread": lambda: plots.query_gradient_spread(
        torch.tensor([0.0, 1e-9, 1e-3, 2.0, 40.0]), torch.tensor([0.8, 1.0, 1.1, 1.3, 1.5]), 1024),
    "attention_row_bars": lambda: plots.attention_row_bars(WEIGHTS[0], TOKENS),
    "attention_weights_heatmap": lambda: plots.attention_weights_heatmap(WEIGHTS, TOKENS),
    "mask_grid": lambda: plots.mask_grid([torch.ones(4, 4, dtype=torch.bool), torch.ones(4, 4).tril().bool()],
                                         ["padding", "causal"], TOKENS),
    "padding_drift_figure": lambda: plots.padding_drift_figure(torch.rand(7, 7), torch.rand(4), TOKENS, 4, False, 1.0),
    "drift_vs_padding": lambda: plots.drift_vs_padding([1, 2, 4], [0.1, 0.2, 0.3], [0.0, 1e-7, 0.0]),
    "head_maps": lambda: plots.head_maps(HEADS, TOKENS, highlight=2),
    "head_view_figure": lambda: plots.head_view_figure(HEADS, 3, TOKENS, layer=0),
    "score_rank_plot": lambda: plots.score_rank_plot([8, 16, 32, 64], [8, 16, 32, 48], 48),
    "gradient_ratio_vs_depth": lambda: plots.gradient_ratio_vs_depth(
        [1, 4, 16], {"plain, default init": [1, 1e-2, 1e-8], "residual, default init": [1, 0.9, 0.8]}),
    "gradient_norm_per_layer": lambda: plots.gradient_norm_per_layer([1e-6, 1e-3, 1.0], False,
                                                                     reference=[0.8, 0.9, 1.0],
                                                                     reference_label="with residual"),
    "toy_loss_curves": lambda: plots.toy_loss_curves({"24 plain layers, default init": LOSSES,
                                                      "24 residual layers, default init": LOSSES[::2]}),
    "layer_norm_variants": lambda: plots.layer_norm_variants(
        [4, 16, 512], [0.13, 0.03, 0.001], [1.0, 1e-3, 1e-6],
        {"nn.LayerNorm, eps 1e-5": [1.0, 0.3, 0.0], "Annotated Transformer, eps 1e-6": [1.0, 1.0, 0.5]}),
    "activation_curves": lambda: plots.activation_curves(
        torch.linspace(-3, 3, 7), {"ReLU": (torch.linspace(-3, 3, 7).relu(), (torch.linspace(-3, 3, 7) > 0).float())}),
    "position_mixing_maps": lambda: plots.position_mixing_maps({"self-attention": torch.rand(4, 4),
                                                                "feed-forward network": torch.eye(4)}),
    "key_value_memory": lambda: plots.key_value_memory(torch.eye(3) * 1.6 - 0.3, torch.eye(3), ["key 0", "key 1", "x"],
                                                       threshold=0.5),
    "norm_placement_curves": lambda: plots.norm_placement_curves(
        {"post-LN": (False, [0.1, 0.2, 0.4], [1, 1, 1, 1]), "pre-LN": (True, [0.3, 0.2, 0.1], [1, 1.4, 1.7, 2])}),
    "norm_placement_panel": lambda: plots.norm_placement_panel(True, [0.3, 0.2, 0.1], [1, 1.4, 1.7, 2]),
    "parameter_breakdown": lambda: plots.parameter_breakdown(COUNTS, title="BERT-base"),
    "config_error_figure": lambda: plots.config_error_figure("d_model 768 is not divisible by n_heads 16"),
    "layer_flops_vs_length": lambda: plots.layer_flops_vs_length(LENGTHS, FORMULA, measured=FORMULA, crossover=256),
    "attention_time_vs_length": lambda: plots.attention_time_vs_length(SWEEP, {"naive": 2.0, "sdpa": 1.9}),
    "attention_peak_memory_vs_length": lambda: plots.attention_peak_memory_vs_length(SWEEP),
    "cost_overview": lambda: plots.cost_overview(
        128, LENGTHS, FORMULA, {k: v[1] for k, v in FORMULA.items()},
        {"one head, float16": [2 * L * L for L in LENGTHS]}, {"one head, float16": 2 * 128 * 128}, 256, "one layer"),
    "training_loss_curves": lambda: plots.training_loss_curves({"with padding mask": LOSSES,
                                                                "without padding mask": LOSSES[::-1]}),
    "training_accuracy_curves": lambda: plots.training_accuracy_curves(
        {"with padding mask": ([25, 50], [0.5, 0.9]), "without padding mask": ([25, 50], [0.4, 0.6])}, baseline=0.3),
    "accuracy_vs_padding": lambda: plots.accuracy_vs_padding(
        [0, 4, 16], {"with padding mask": [0.9, 0.9, 0.9], "without padding mask": [0.9, 0.6, 0.4]}, baseline=0.3),
    "predictions_by_padding": lambda: plots.predictions_by_padding(
        [6, 1, 6, 6], [2, 0, 2, 2], {"no mask, 3 pads": [2, 0, 1, 2], "mask, 3 pads": [2, 0, 2, 2]}),
    "norm_placement_training": lambda: plots.norm_placement_training(
        {"2 layers": {"post-LN, no warmup": LOSSES, "pre-LN, warmup": LOSSES},
         "6 layers": {"post-LN, warmup": LOSSES, "pre-LN, no warmup": LOSSES}}),
    "trained_attention_maps": lambda: plots.trained_attention_maps([HEADS[:4], HEADS[4:]], [3, 1, 3, 5]),
    "similarity_heatmap": lambda: plots.similarity_heatmap(torch.tensor([[1.0, 0.8, 0.1], [0.8, 1.0, 0.2],
                                                                          [0.1, 0.2, 1.0]]), ["a", "b", "c"]),
    "similarity_by_pooling": lambda: plots.similarity_by_pooling(
        {"mean": torch.tensor([[1.0, 0.7, 0.0], [0.7, 1.0, 0.1], [0.0, 0.1, 1.0]]),
         "[CLS]": torch.tensor([[1.0, 0.9, 0.6], [0.9, 1.0, 0.5], [0.6, 0.5, 1.0]])},
        {"paraphrases": [(0, 1)], "unrelated": [(0, 2), (1, 2)]}),
    "real_attention_figure": lambda: plots.real_attention_figure(HEADS, 1, ["[CLS]", "bank", "it", "[SEP]"], 2),
    "passage_lengths": lambda: plots.passage_lengths([3, 5, 5, 9, 14, 14, 20, 64], cut=16),
    "rotary_scores": lambda: plots.rotary_scores(torch.randn(16), torch.randn(16), positions=8),
    "extrapolation_lines": lambda: plots.extrapolation_lines(
        {"loss": {"learned": {32: 6.3, 64: 6.35}, "rotary": {32: 5.6, 64: 5.65}}, "unigram": {32: 6.2, 64: 6.2}}),
    "layer_windows": lambda: plots.layer_windows(
        ec.EncoderConfig(d_model=16, n_heads=2, d_ff=16, n_layers=3, window=4, global_every=3), length=12),
    "local_cost": lambda: plots.local_cost(
        [{"length": L, "window": w, "global_ms": L * L / 1e4, "masked_ms": L * L / 9e3, "banded_ms": L * w / 1e4,
          "global_pairs": L * L, "window_pairs": L * (w + 1), "banded_pairs": L * 3 * (w // 2)}
         for L in (256, 512) for w in (32, 64)]),
    "unpadding_bars": lambda: plots.unpadding_bars(
        [{"shape": (32, 28), "padding": 0.56, "padded_ms": 90.0, "unpadded_ms": 40.0, "torch_ms": 75.0},
         {"shape": (32, 256), "padding": 0.88, "padded_ms": 860.0, "unpadded_ms": 100.0, "torch_ms": 1100.0}]),
    "budget_points": lambda: plots.budget_points(
        [BudgetRun(d, s, 200, 7.0, 5.8 + 0.1 * i, 0.1, 6.1)
         for i, d in enumerate(("BERT-style", "modern")) for s in range(3)], 6.1),
    "retrieval_bars": lambda: plots.retrieval_bars(
        {"BM25": {"recall@1": 0.2, "recall@5": 0.4, "MRR": 0.3},
         "tuned": {"recall@1": 0.35, "recall@5": 0.6, "MRR": 0.5}},
        spread={"tuned": {"recall@1": (0.33, 0.37), "recall@5": (0.58, 0.62), "MRR": (0.48, 0.52)}}),
}


def _lines(fig):
    return [line for ax in fig.axes for line in ax.lines]


def _colour_of(fig, label):
    """The colour of every line labelled ``label`` in the figure (one colour, or the test fails)."""
    (colour,) = {to_hex(line.get_color()) for line in _lines(fig) if line.get_label() == label}
    return colour


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def test_samples_cover_every_public_plot_function():
    assert set(SAMPLES) == set(plots.__all__) - {"alt_text"}  # alt_text reads a figure, it draws none
    for name in plots.__all__:
        assert callable(getattr(plots, name))


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_figure_is_titled_and_has_an_alt_text(name):
    fig = SAMPLES[name]()
    assert isinstance(fig, Figure)
    alt = plots.alt_text(fig)
    assert len(alt) > 60 and alt.endswith("."), alt
    assert not re.search(r"\bnan\b", alt.lower()), alt
    titles = [ax.get_title() for ax in fig.axes] + [fig._suptitle.get_text() if fig._suptitle else ""]
    assert any(titles), f"{name} draws an untitled figure"
    assert fig.dpi == style.DPI  # given per figure, never read from rcParams


def test_alt_text_is_built_from_the_data():
    alt = plots.alt_text(plots.attention_weights_heatmap(WEIGHTS, TOKENS))
    assert alt.startswith("Heatmap of attention weights: 4 queries (rows) by 4 keys (columns)")
    i, j = divmod(int(WEIGHTS.argmax()), 4)
    assert f"from query {TOKENS[i]} to key {TOKENS[j]}" in alt
    alt = plots.alt_text(plots.score_rank_plot([8, 16], [8, 16], 48))
    assert "d_head 8: rank 8, d_head 16: rank 16" in alt


def test_finish_requires_an_alt_text():
    fig, ax = style.new_figure()
    with pytest.raises(ValueError, match="alt text"):
        style.finish(fig, alt="  ")


def test_axes_drawn_into_a_callers_figure_keep_their_own_alt_texts():
    fig, (left, right) = plt.subplots(1, 2, figsize=(9.6, 7.6))
    plots.draw_encoder_block(False, ax=left)
    plots.draw_encoder_block(True, ax=right)
    alt = plots.alt_text(fig)
    assert alt.index("post-LN") < alt.index("pre-LN")  # left first, then right
    assert plots.alt_text(plots.draw_encoder_block(True)).count("Diagram") == 1


def test_to_numpy_takes_any_tensor_array_or_list():
    for value in (torch.ones(2, 3, dtype=torch.bool), torch.ones(2, 3, dtype=torch.bfloat16),
                  torch.ones(2, 3, requires_grad=True), torch.ones(2, 3, dtype=torch.int64), np.ones((2, 3)),
                  [[1, 1, 1], [1, 1, 1]]):
        out = style.to_numpy(value)
        assert isinstance(out, np.ndarray) and out.shape == (2, 3) and out.dtype.kind == "f"
        assert (out == 1).all()
    assert style.to_numpy(torch.ones(2, dtype=torch.float64)).dtype == np.float64


def test_importing_plots_and_widgets_changes_no_global_setting():
    code = (
        "import sys\n"
        "import encoder_course\n"
        "assert not any(m.split('.')[0] in ('matplotlib', 'ipywidgets', 'IPython') for m in sys.modules), \\\n"
        "    'import encoder_course loads a visual module'\n"
        "import matplotlib\n"
        "before = {k: v for k, v in matplotlib.rcParams.items() if k != 'backend'}\n"
        "from encoder_course import plots\n"
        "assert 'ipywidgets' not in sys.modules, 'plots imports ipywidgets'\n"
        "from encoder_course import widgets\n"
        "plots.draw_encoder_block()\n"
        "assert 'IPython' not in sys.modules, 'a figure outside IPython imports IPython'\n"
        "after = {k: v for k, v in matplotlib.rcParams.items() if k != 'backend'}\n"
        "assert before == after, sorted(k for k in before if before[k] != after[k])\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            env={**os.environ, "MPLBACKEND": "Agg"})
    assert result.returncode == 0, result.stderr


# --- the palette: one colour per contrast, the same in every figure -------------------------------------------

def test_the_palette_is_okabe_ito_and_named_by_meaning():
    okabe_ito = {"#000000", "#e69f00", "#56b4e9", "#009e73", "#f0e442", "#0072b2", "#d55e00", "#cc79a7", "#999999"}
    assert {to_hex(c) for c in style.PALETTE.values()} == okabe_ito
    assert {to_hex(c) for c in style.COLOURS.values()} <= okabe_ito
    for a, b in (("post_ln", "pre_ln"), ("without_mask", "with_mask"), ("without_residual", "with_residual"),
                 ("naive", "sdpa"), ("sdpa", "chunked"), ("naive", "chunked"), ("projections", "scores"),
                 ("scores", "weighted_values"), ("weighted_values", "ffn"), ("without_scale", "with_scale")):
        assert style.COLOURS[a] != style.COLOURS[b], (a, b)


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_every_line_uses_the_palette(name):
    allowed = {to_hex(c) for c in style.PALETTE.values()} | {"#ffffff", "#333333"}
    for line in _lines(SAMPLES[name]()):
        assert to_hex(line.get_color()) in allowed, (name, line.get_label(), line.get_color())


def test_the_same_series_has_the_same_colour_in_every_figure():
    c = {k: to_hex(v) for k, v in style.COLOURS.items()}
    # with / without the padding mask: notebooks 03, 10, 11
    drift = plots.drift_vs_padding([1, 2], [0.1, 0.2], [0.0, 0.0])
    accuracy = SAMPLES["accuracy_vs_padding"]()
    training = SAMPLES["training_accuracy_curves"]()
    for label, key in (("without padding mask", "without_mask"), ("with padding mask", "with_mask")):
        assert {_colour_of(f, label) for f in (drift, accuracy, training)} == {c[key]}
    # post-LN / pre-LN: notebooks 07 and 10 (10 used to swap them)
    curves = SAMPLES["norm_placement_curves"]()
    assert _colour_of(curves, "post-LN") == c["post_ln"] and _colour_of(curves, "pre-LN") == c["pre_ln"]
    runs = SAMPLES["norm_placement_training"]()
    for line in _lines(runs):
        if "LN" in line.get_label():
            assert to_hex(line.get_color()) == c["pre_ln" if "pre-LN" in line.get_label() else "post_ln"]
            assert line.get_linestyle() == ("--" if "no warmup" in line.get_label() else "-")
    # plain / residual stacks: notebook 05's three figures and its widget (they used to swap colours)
    ratio = SAMPLES["gradient_ratio_vs_depth"]()
    loss = SAMPLES["toy_loss_curves"]()
    assert _colour_of(ratio, "plain, default init") == _colour_of(loss, "24 plain layers, default init") \
        == c["without_residual"]
    assert _colour_of(ratio, "residual, default init") == _colour_of(loss, "24 residual layers, default init") \
        == c["with_residual"]
    plain = plots.gradient_norm_per_layer([1e-3, 1.0], False, reference=[1, 1], reference_label="with residual")
    assert _colour_of(plain, "without residual: f(h)") == c["without_residual"]
    assert _colour_of(plain, "with residual") == c["with_residual"]
    # attention implementations: notebook 09
    timing = SAMPLES["attention_time_vs_length"]()
    for method in ("naive", "sdpa", "chunked"):
        (line,) = [x for x in _lines(timing) if x.get_label().startswith(
            {"naive": "naive", "sdpa": "F.scaled", "chunked": "chunked"}[method])]
        assert to_hex(line.get_color()) == c[method]
        assert _colour_of(SAMPLES["attention_peak_memory_vs_length"](), method) == c[method]


def test_a_width_keeps_its_colour_in_the_positions_figures():
    # notebook 01: the similarity curve of d_model 64 is the same colour in the static figure and the explorer
    from encoder_course.plots.tokens_and_positions import D_MODEL_COLOURS

    static = plots.position_offset_similarity(np.arange(4), {"d_model 16": [1, 0.8, 0.5, 0.2],
                                                             "d_model 64": [1, 0.9, 0.7, 0.5]})
    for width in (16, 64):
        assert _colour_of(static, f"d_model {width}") == to_hex(D_MODEL_COLOURS[width])
        panel = plots.positions_panel(torch.rand(16, width) * 2 - 1, 3, torch.linspace(0, 1, 16))
        assert {to_hex(line.get_color()) for line in panel.axes[1].lines if len(line.get_xdata()) == 16} \
            == {to_hex(D_MODEL_COLOURS[width])}


def test_identical_pad_curves_keep_the_mask_colours():
    # notebook 03 draws the padding drift with pads that all enter as one vector next to the usual curves
    c = {k: to_hex(v) for k, v in style.COLOURS.items()}
    fig = plots.drift_vs_padding([1, 2], [0.1, 0.2], [0.0, 0.0], identical_pads=([0.05, 0.1], [0.0, 0.0]))
    assert _colour_of(fig, "without padding mask, identical pad vectors") == c["without_mask"]
    assert _colour_of(fig, "with padding mask, identical pad vectors") == c["with_mask"]
    assert "identical vector" in plots.alt_text(fig)


def test_no_figure_contrasts_red_with_green():
    drift = plots.padding_drift_figure(torch.rand(7, 7), torch.rand(4), TOKENS, 4, True, 1.0)
    bars = drift.axes[-1].patches if drift.axes[-1].patches else drift.axes[1].patches
    assert {to_hex(b.get_facecolor()) for b in bars} == {to_hex(style.COLOURS["with_mask"])}
    for colour in ("tab:red", "tab:green", "red", "green"):
        assert to_hex(colour) not in {to_hex(c) for c in style.COLOURS.values()}


# --- alt text in the notebook's stored output ----------------------------------------------------------------

@pytest.fixture
def shell(tmp_path):
    pytest.importorskip("IPython")
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.enabled = False
    instance = InteractiveShell.instance(config=config, ipython_dir=str(tmp_path))
    yield instance
    InteractiveShell.clear_instance()


def test_the_png_formatter_puts_the_alt_text_into_display_metadata(shell):
    fig = plots.attention_weights_heatmap(WEIGHTS, TOKENS)  # finished inside IPython: the formatter is registered
    data, metadata = shell.display_formatter.format(fig)
    assert "image/png" in data
    assert metadata["image/png"] == {"alt": plots.alt_text(fig)}
    plain, plain_metadata = shell.display_formatter.format(plt.figure(dpi=50).add_subplot().figure)
    assert "alt" not in plain_metadata.get("image/png", {})  # figures without alt text are left as they were


def test_the_inline_backends_formatter_is_wrapped_with_its_settings(shell):
    from IPython.core.pylabtools import retina_figure, select_figure_formats

    select_figure_formats(shell, {"retina"})  # what %config InlineBackend.figure_formats = ['retina'] does
    fig = plots.mask_grid([torch.ones(3, 3, dtype=torch.bool)], ["all"])  # wraps the retina formatter
    data, metadata = shell.display_formatter.format(fig)
    assert set(metadata["image/png"]) == {"width", "height", "alt"}
    expected, sizes = retina_figure(fig, base64=True)
    assert data["image/png"] == expected and metadata["image/png"]["width"] == sizes["width"]
    select_figure_formats(shell, {"png"})  # %matplotlib inline run again: registered afresh, wrapped at the next figure
    fig = plots.mask_grid([torch.ones(3, 3, dtype=torch.bool)], ["all"])
    assert shell.display_formatter.format(fig)[1]["image/png"] == {"alt": plots.alt_text(fig)}
    select_figure_formats(shell, {"svg"})  # figures shown as SVG only: no PNG is added
    fig = plots.mask_grid([torch.ones(3, 3, dtype=torch.bool)], ["all"])
    data, _ = shell.display_formatter.format(fig)
    assert "image/svg+xml" in data and "image/png" not in data


def test_alt_text_reaches_a_notebooks_outputs_inline_and_in_widgets(tmp_path):
    """A real kernel: figures shown by %matplotlib inline and inside an explorer's Output widget."""
    nbformat = pytest.importorskip("nbformat")
    pytest.importorskip("ipykernel")
    from encoder_course.notebook_tools.executor import run_notebook

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in (
        "%matplotlib inline\nfrom encoder_course import plots, widgets",
        "fig = plots.attention_row_bars([0.1, 0.6, 0.2, 0.1], list('abcd'))",
        "widgets.explore_attention_scale()",
    )]
    run = run_notebook(nb, timeout=300, cwd=tmp_path, stop_on_error=True, cell_timeout=120)
    assert run.stop_reason is None, (run.stop_reason, nb.cells[run.stopped_at or 0].outputs)
    (inline,) = nb.cells[1].outputs
    assert inline["metadata"]["image/png"]["alt"].startswith("Bar chart of one query's attention weights over 4 keys")
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    shown = [out for model in state.values() if model["model_name"] == "OutputModel"
             for out in model["state"].get("outputs", [])]
    assert [out["metadata"]["image/png"]["alt"][:23] for out in shown] == ["Bar chart of one query'"]
    json.dumps(nb)  # the metadata is plain JSON


# --- the encoder map of notebooks 00, 05 and 07 -------------------------------------------------------------

def _texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts]


@pytest.mark.parametrize("norm_first", [False, True])
@pytest.mark.parametrize("n_layers", [None, 6])
def test_draw_encoder_block_parts(norm_first, n_layers):
    fig = plots.draw_encoder_block(norm_first=norm_first, n_layers=n_layers)
    assert isinstance(fig, Figure)
    texts = _texts(fig)
    norms = [t for t in texts if "LayerNorm" in t]
    # two per layer, plus the final LayerNorm after a pre-LN stack
    assert len(norms) == (3 if norm_first else 2)
    assert ("final LayerNorm" in texts) == norm_first
    assert any("multi-head" in t for t in texts)
    assert any("feed-forward" in t for t in texts)
    assert any("embedding" in t for t in texts)
    assert texts.count("+") == 2  # the two residual adds
    assert texts.count("L × d_model") == (8 if norm_first else 7)  # every arrow after the embedding
    assert f"× {'N' if n_layers is None else n_layers}" in texts
    title = fig.axes[0].get_title()
    assert ("pre-LN" if norm_first else "post-LN") in title


def test_draw_encoder_block_into_given_axes():
    fig, axes = plt.subplots(1, 2, figsize=(9, 6))
    assert plots.draw_encoder_block(False, ax=axes[0]) is fig
    assert plots.draw_encoder_block(True, n_layers=12, ax=axes[1]) is fig
    assert "post-LN" in axes[0].get_title() and "pre-LN" in axes[1].get_title()


def _map_axes(fig):
    return [ax for ax in fig.axes if any(t.get_text() == "L × d_model" for t in ax.texts)]


MAP_FIGURES = {
    "alone, post-LN": partial(plots.draw_encoder_block, False),
    "alone, pre-LN": partial(plots.draw_encoder_block, True, 12),
    "side by side": plots.draw_post_and_pre_ln,
    "norm-placement explorer": partial(plots.norm_placement_panel, False, [0.1] * 24, [1.0] * 25),
}


@pytest.mark.parametrize("name", list(MAP_FIGURES))
def test_the_maps_labels_are_readable(name):
    """Every label is at least 13.3 px high as displayed (10 pt on a 96-dpi screen), inside its box, unhidden."""
    fig = MAP_FIGURES[name]()
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in _map_axes(fig):
        texts = [*ax.texts, ax.title]
        for text in texts:
            assert text.get_fontsize() * fig.dpi / 72 >= 13.3, (name, text.get_text(), text.get_fontsize())
        boxes = [t.get_window_extent(renderer) for t in texts]
        for (a, box_a), (b, box_b) in itertools.combinations(zip(texts, boxes), 2):
            assert not box_a.overlaps(box_b), (name, a.get_text(), b.get_text())
        filled = [p for p in ax.patches if isinstance(p, FancyBboxPatch) and p.get_facecolor()[3] > 0]
        for patch in filled:
            outline = patch.get_window_extent(renderer)
            inside = [box for box in boxes if outline.contains(*box.get_points().mean(axis=0))]
            assert len(inside) == 1 and outline.x0 <= inside[0].x0 and inside[0].x1 <= outline.x1, name
        assert ax.get_window_extent(renderer).width >= 0.99 * 4.7 * fig.dpi  # drawn at full size



def test_similarity_by_pooling_draws_every_pair_under_every_pooling():
    sims = {"mean": torch.eye(3), "[CLS]": torch.full((3, 3), 0.5)}
    fig = plots.similarity_by_pooling(sims, {"paraphrases": [(0, 1)], "unrelated": [(0, 2), (1, 2)]})
    points = [tuple(p) for c in fig.axes[0].collections for p in c.get_offsets()]
    assert len(points) == 2 * 3  # 3 pairs, 2 poolings
    assert sorted(y for _, y in points) == [0.0] * 3 + [0.5] * 3
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["paraphrases", "unrelated"]
    assert "paraphrases 0.50 to 0.50 with [CLS]" in plots.alt_text(fig)
    with pytest.raises(ValueError, match="at least one"):
        plots.similarity_by_pooling({}, {"a": [(0, 1)]})


def test_norm_placement_training_three_panels_one_legend():
    runs = {"post-LN, no warmup": LOSSES, "post-LN, warmup": LOSSES, "pre-LN, no warmup": LOSSES,
            "pre-LN, warmup": LOSSES}
    fig = plots.norm_placement_training({f"peak lr {lr}": runs for lr in ("3e-3", "5e-3", "1e-2")})
    axes = fig.axes
    assert len(axes) == 3 and [ax.get_title() for ax in axes] == ["peak lr 3e-3", "peak lr 5e-3", "peak lr 1e-2"]
    assert axes[0].get_legend() is not None and all(ax.get_legend() is None for ax in axes[1:])
    assert all(len(ax.get_lines()) == 4 for ax in axes)
    assert plots.alt_text(fig).startswith("3 line plots side by side")


def test_modern_encoder_figures_draw_what_they_say():
    # rotary scores: one value along each diagonal, with the package's rotation or a learner's
    from encoder_course.positions import apply_rotary

    q, k = torch.randn(16, generator=torch.Generator().manual_seed(2)), torch.ones(16)
    for rotate in (None, lambda x, positions: apply_rotary(x, positions)):
        image = np.asarray(plots.rotary_scores(q, k, positions=8, rotate=rotate).axes[0].images[0].get_array())
        assert image.shape == (8, 8)
        for offset in (-3, 0, 1, 5):
            assert np.ptp(np.diagonal(image, offset)) < 1e-4
        assert abs(image[0, 1] - image[0, 5]) > 1e-3
    # the windows: one panel per layer, titled with its kind; a local layer's band is sliding_window_mask
    config = ec.EncoderConfig(d_model=16, n_heads=2, d_ff=16, n_layers=4, window=4, global_every=2)
    fig = plots.layer_windows(config, length=12)
    assert [ax.get_title() for ax in fig.axes] == ["layer 0: global", "layer 1: local (window 4)", "layer 2: global",
                                                   "layer 3: local (window 4)"]
    assert (np.asarray(fig.axes[1].images[0].get_array()) == ec.sliding_window_mask(12, 4).float().numpy()).all()
    assert np.asarray(fig.axes[0].images[0].get_array()).min() == 1
    # extrapolation: a line per kind and the unigram baseline, "seen_loss" with the seen baseline
    result = {"seen_loss": {"rotary": {32: 5.0, 64: 5.1}, "learned": {32: 5.2, 64: 6.0}},
              "seen_unigram": {32: 6.1, 64: 6.1}}
    fig = plots.extrapolation_lines(result, key="seen_loss")
    labels = [line.get_label() for line in _lines(fig)]
    assert labels == ["rotary", "learned", "unigram", "trained at 32"]
    assert "lower is better" in fig.axes[0].get_ylabel() and "unigram 6.10, 6.10" in plots.alt_text(fig)
    # local attention's cost: the right panel is the formulas; the alt text's growth comes from the data
    fig = SAMPLES["local_cost"]()
    assert fig.axes[1].get_title() == "The formulas" and "global x4.0" in plots.alt_text(fig)
    assert [line.get_linestyle() for line in fig.axes[0].lines] == ["-", "--", "-", "--", "-"]
    # unpadding: three bars per batch; same budget: a point per run
    assert len(SAMPLES["unpadding_bars"]().axes[0].patches) == 6
    fig = SAMPLES["budget_points"]()
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == ["BERT-style", "modern"]
    assert "mean 5.900 over 3 seeds" in plots.alt_text(fig) and "baseline is 6.100" in plots.alt_text(fig)
