"""The gradient measurements of notebooks 05 and 07 (encoder_course.measure.gradient_flow)."""

import math

import pytest
import torch

from encoder_course.measure.gradient_flow import (
    last_over_first_over_stacks,
    mean_placement_profile,
    norm_placement_profile,
    residual_stack_gradient_norms,
    stream_gradient_tracking,
)

# --- notebook 05: a toy tanh stack, with and without residual paths ----------------------------------

def test_gradient_norms_are_finite_positive_and_deterministic():
    for residual in (True, False):
        norms = residual_stack_gradient_norms(8, residual)
        assert len(norms) == 8 and all(math.isfinite(n) and n > 0 for n in norms)
        assert norms == residual_stack_gradient_norms(8, residual)


def test_residual_keeps_the_first_layer_gradient_and_plain_loses_it():
    plain = residual_stack_gradient_norms(24, False)
    res = residual_stack_gradient_norms(24, True)
    assert plain[0] / plain[-1] < 1e-3
    assert res[0] / res[-1] > 0.5


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        residual_stack_gradient_norms(0, True)
    with pytest.raises(ValueError):
        residual_stack_gradient_norms(4, True, init="xavier")


# --- notebook 07: a stack of encoder blocks, post-LN or pre-LN ----------------------------------------

def test_norm_placement_profile_shapes_and_rng_untouched():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    profile = norm_placement_profile(True, 4)
    assert torch.equal(before, torch.get_rng_state())
    assert len(profile["grad_norm"]) == 4
    assert len(profile["stream_std"]) == 5
    assert all(g > 0 for g in profile["grad_norm"])


def test_norm_placement_profile_post_ln_stream_is_normalised():
    profile = norm_placement_profile(False, 6)
    assert all(abs(s - 1.0) < 0.01 for s in profile["stream_std"][1:])


def test_norm_placement_profile_rejects_an_unknown_init():
    with pytest.raises(ValueError, match="init"):
        norm_placement_profile(True, 2, init="unit")


def test_norm_placement_profile_reports_the_ffn_second_matrix():
    profile = norm_placement_profile(False, 3)
    assert len(profile["ffn_w2_grad_norm"]) == len(profile["norm_grad_norm"]) == 3
    # parts of the layer's parameters: never more than the whole layer's gradient
    assert all(0 < w2 <= g for w2, g in zip(profile["ffn_w2_grad_norm"], profile["grad_norm"]))
    assert all(0 < n <= g for n, g in zip(profile["norm_grad_norm"], profile["grad_norm"]))


def test_mean_placement_profile_averages_the_seeded_stacks():
    runs = [norm_placement_profile(True, 3, seed=s) for s in range(3)]
    mean = mean_placement_profile(True, 3, stacks=3)
    assert mean["stacks"] == 3
    assert mean["runs"] == runs  # the single stacks behind the mean
    for key in ("grad_norm", "ffn_w2_grad_norm", "norm_grad_norm", "stream_std", "stream_grad_norm"):
        expected = [sum(values) / 3 for values in zip(*(run[key] for run in runs))]
        assert mean[key] == pytest.approx(expected, rel=1e-12)


def test_mean_placement_profile_shapes_at_depth_24():
    """What notebook 07 states of the mean of 5 stacks: pre-LN's gradient falls towards the output,
    post-LN's whole layer is about flat and its W_2 lower in the last layer, and the last layer's
    LayerNorms stand out (single stacks vary: notebook 07 shows them one by one)."""
    pre = mean_placement_profile(True, 24)
    post = mean_placement_profile(False, 24)
    assert pre["grad_norm"][-1] / pre["grad_norm"][0] < 0.4
    assert 0.8 < post["grad_norm"][-1] / post["grad_norm"][0] < 1.6
    assert post["ffn_w2_grad_norm"][-1] / post["ffn_w2_grad_norm"][0] < 1.0
    assert post["norm_grad_norm"][-1] > 2 * post["norm_grad_norm"][0]  # the last LayerNorm stands out


def test_mean_placement_profile_rejects_bad_arguments():
    with pytest.raises(ValueError, match="stacks"):
        mean_placement_profile(True, 2, stacks=0)
    with pytest.raises(TypeError, match="seed"):
        mean_placement_profile(True, 2, seed=3)


def test_the_stream_gradient_is_recorded_at_every_layer_boundary():
    profile = norm_placement_profile(True, 3)
    assert len(profile["stream_grad_norm"]) == 4 and all(g > 0 for g in profile["stream_grad_norm"])
    # recording it leaves the parameters' gradients as they were
    again = norm_placement_profile(True, 3)
    assert again["grad_norm"] == profile["grad_norm"]


def test_pre_ln_layer_gradients_follow_the_stream_gradient():
    """What notebook 07 shows: in pre-LN the stream's gradient grows towards the input (about 3.4x over
    24 layers, mean of 5 stacks) and each layer's gradient follows it (r about 0.98)."""
    pre = stream_gradient_tracking(mean_placement_profile(True, 24))
    post = stream_gradient_tracking(mean_placement_profile(False, 24))
    assert 2 < pre["growth"] < 6
    assert pre["correlation"] > 0.9
    assert post["correlation"] < pre["correlation"]


def test_stream_gradient_tracking_of_a_made_up_profile():
    profile = {"grad_norm": [3.0, 2.0, 1.0], "stream_grad_norm": [9.0, 6.0, 4.0, 2.0]}
    result = stream_gradient_tracking(profile)
    assert result["growth"] == pytest.approx(3.0)
    assert result["correlation"] == pytest.approx(1.0)
    with pytest.raises(ValueError):
        stream_gradient_tracking({"grad_norm": [1.0], "stream_grad_norm": [1.0, 1.0]})


def test_last_over_first_over_stacks_agrees_with_the_mean_profile():
    spread = last_over_first_over_stacks(False, 4, stacks=3)
    mean = mean_placement_profile(False, 4, stacks=3)
    assert len(spread["ratios"]) == 3
    assert spread["ratio_of_means"] == pytest.approx(mean["grad_norm"][-1] / mean["grad_norm"][0], rel=1e-9)
    runs = [norm_placement_profile(False, 4, seed=s)["grad_norm"] for s in range(3)]
    assert spread["ratios"] == pytest.approx([r[-1] / r[0] for r in runs], rel=1e-12)
    profiles = [norm_placement_profile(False, 4, seed=s) for s in range(3)]
    assert spread["ffn_w2_ratios"] == pytest.approx([p["ffn_w2_grad_norm"][-1] / p["ffn_w2_grad_norm"][0]
                                                     for p in profiles], rel=1e-12)
    assert spread["norm_ratios"] == pytest.approx([p["norm_grad_norm"][-1] / p["norm_grad_norm"][0]
                                                   for p in profiles], rel=1e-12)
    # the weights' part, taken per stack: its squared norm plus the LayerNorms' is the whole layer's
    for p, r in zip(profiles, spread["weights_ratios"]):
        w = [(g**2 - n**2) ** 0.5 for g, n in zip(p["grad_norm"], p["norm_grad_norm"])]
        assert r == pytest.approx(w[-1] / w[0], rel=1e-9)
    with pytest.raises(ValueError):
        last_over_first_over_stacks(False, 4, stacks=0)
    with pytest.raises(TypeError):
        last_over_first_over_stacks(False, 4, seed=1)
