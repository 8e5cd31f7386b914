"""Helpers of the parity tests against torch.nn: random weights everywhere, a padding mask with ragged rows."""

import torch
from torch import nn

import encoder_course as ec

ATOL = 1e-5


def randomise(module: nn.Module, seed: int = 0) -> nn.Module:
    """Give every parameter random values (norms included), so defaults hide nothing."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in module.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.3)
    return module


def random_padding(batch: int, length: int, seed: int = 1) -> torch.Tensor:
    """A (B, 1, 1, L) padding mask with a different number of real tokens per row (at least one)."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(1, length + 1, (batch,), generator=g)
    lengths[0] = length
    ids = (torch.arange(length)[None, :] < lengths[:, None]).long()  # 1 = real, 0 = pad
    return ec.padding_mask(ids, pad_id=0)
