"""encoder_course.tools: the notebooks' helpers (pick_device says what it picked and why)."""

import pytest
import torch

from encoder_course import tools


def test_pick_device_says_what_it_picked():
    device, reason = tools.pick_device()
    assert isinstance(device, torch.device) and reason
    if device.type == "cpu":
        assert "Runtime > Change runtime type > GPU" in reason
    assert tools.pick_device("cpu")[0].type == "cpu"
    with pytest.raises(ValueError, match="prefer must be"):
        tools.pick_device("tpu")
