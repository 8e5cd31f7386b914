"""The checker of ``mean_pool`` (notebook 10): every wrong answer named, every right one passing."""

from __future__ import annotations

import torch

import encoder_course as ec
from encoder_course import checks

from .catalogue import Catalogue

C_MP = checks.check_mean_pool

CATALOGUE = Catalogue(C_MP)
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("mp-package", C_MP, "the package's own function, passed as the answer", "calls the course's own mean_pool")(
    ec.mean_pool)
wrong("mp-padding-averaged", C_MP, "hidden.mean(dim=1): the padding averaged in",
      "it averages over every position, padding included")(lambda hidden, mask: hidden.mean(dim=1))
wrong("mp-divide-by-L", C_MP, "(hidden * mask).sum(1) / L", "it divides by the length L")(
    lambda hidden, mask: (hidden * mask[..., None]).sum(dim=1) / hidden.shape[1])
wrong("mp-mask-inverted", C_MP, "the pads kept, the real tokens dropped", "the mask is inverted")(
    lambda hidden, mask: (hidden * ~mask[..., None]).sum(1) / (~mask).sum(1, keepdim=True).clamp(min=1))
wrong("mp-sum", C_MP, "the masked sum, never divided", "it returns the sum over the real tokens")(
    lambda hidden, mask: (hidden * mask[..., None]).sum(dim=1))
wrong("mp-features-axis", C_MP, "sum and mean over dim=-1 (the features)", "you averaged over the features")(
    lambda hidden, mask: (hidden * mask[..., None]).mean(dim=-1))
wrong("mp-batch-axis", C_MP, "mean over dim=0 (the batch)", "you averaged over the batch")(
    lambda hidden, mask: (hidden * mask[..., None]).sum(dim=0) / mask.sum(dim=0)[:, None].clamp(min=1))
wrong("mp-no-trailing-axis", C_MP, "hidden * mask: the (B, L) mask not given its trailing axis",
      "does not line up with hidden (B, L, d): give it a trailing axis")(
    lambda hidden, mask: (hidden * mask).sum(1) / mask.sum(1, keepdim=True))
wrong("mp-count-no-keepdim", C_MP, "divides (B, d) by mask.sum(1) of shape (B,): no keepdim",
      "keep the count's axis")(lambda hidden, mask: (hidden * mask[..., None]).sum(1) / mask.sum(1))
wrong("mp-batch-count", C_MP, "divides by mask.sum(): the real tokens of the whole batch",
      "the number of real tokens in the whole batch")(
    lambda hidden, mask: (hidden * mask[..., None]).sum(dim=1) / mask.sum())
wrong("mp-cls", C_MP, "hidden[:, 0]: the first token ([CLS] pooling)", "the first token's vector")(
    lambda hidden, mask: hidden[:, 0])
wrong("mp-last-token", C_MP, "hidden[arange(B), mask.sum(1) - 1]: the last real token", "last-token pooling")(
    lambda hidden, mask: hidden[torch.arange(hidden.shape[0]), mask.sum(dim=1) - 1])
wrong("mp-max", C_MP, "the maximum over the real tokens", "max pooling")(
    lambda hidden, mask: hidden.masked_fill(~mask[..., None], float("-inf")).amax(dim=1))
wrong("mp-nan-empty-row", C_MP, "sum / count without a clamp: 0 / 0 = NaN for a sequence with no real token",
      "0 / 0 for the sequence with no real token")(
    lambda hidden, mask: (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True))
wrong("mp-where-nan-gradient", C_MP, "torch.where(count > 0, sum / count, 0): right values, a NaN gradient",
      "but a NaN gradient")(
    lambda hidden, mask: torch.where(mask.any(1, keepdim=True), (hidden * mask[..., None]).sum(1)
                                     / mask.to(hidden.dtype).sum(1, keepdim=True), torch.zeros(())))
wrong("mp-mean-of-all-for-empty", C_MP, "falls back to the mean of every token when a sequence has no real token",
      "the package gives zeros there")(
    lambda hidden, mask: torch.where(mask.any(1, keepdim=True),
                                     (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1),
                                     hidden.mean(1)))
wrong("mp-float-result", C_MP, "ends with .float() 'to be safe': float64 hidden comes back float32",
      "Keep hidden's dtype")(
    lambda hidden, mask: ((hidden * mask[..., None]).sum(1) / mask.float().sum(1, keepdim=True).clamp(min=1)).float())
wrong("mp-in-place", C_MP, "hidden *= mask[..., None]: the caller's hidden zeroed at the pads",
      "changed its input `hidden` in place")(
    lambda hidden, mask: hidden.mul_(mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1))


@wrong("mp-detached", C_MP, "the result computed under torch.no_grad(): no gradient to the encoder",
       "cuts the gradient")
def mp_no_grad(hidden, mask):
    with torch.no_grad():
        keep = mask[..., None].to(hidden.dtype)
        return (hidden * keep).sum(1) / keep.sum(1).clamp(min=1)


# Mistakes unlike the listed slips: the probe (pads changed, padding moved, hidden scaled) must name them.
def mp_first_n(hidden, mask):
    """The first mask.sum() tokens averaged: padding assumed to be at the end."""
    n = mask.sum(dim=1)
    rows = [hidden[i, :int(n[i])].mean(dim=0) if n[i] else hidden.new_zeros(hidden.shape[-1])
            for i in range(hidden.shape[0])]
    return torch.stack(rows)


wrong("mp-probe-first-n", C_MP, "the first mask.sum() tokens averaged: padding assumed at the end",
      "it takes the first mask.sum() tokens")(mp_first_n)
wrong("mp-probe-count-plus-one", C_MP, "the masked sum over the count + 1", "divided by its number of real tokens +1")(
    lambda hidden, mask: (hidden * mask[..., None]).sum(1) / (mask.sum(1, keepdim=True) + 1))
wrong("mp-probe-halved", C_MP, "the mean halved", "each sequence's mean times 0.5")(
    lambda hidden, mask: 0.5 * (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1))
wrong("mp-probe-sqrt-count", C_MP, "the masked sum over sqrt(count) (mean_sqrt_len_tokens)",
      "divided by the square root of its number of real tokens")(
    lambda h, m: (h * m[..., None]).sum(1) / m.sum(1, keepdim=True).clamp(min=1).sqrt())
wrong("mp-probe-half-precision", C_MP, "computed in float16 'to save memory', cast back",
      "to about 3 digits only")(
    lambda h, m: ((h.half() * m[..., None].half()).sum(1) / m[..., None].half().sum(1).clamp(min=1)).to(h.dtype))
wrong("mp-probe-whole-batch", C_MP, "hidden[mask].mean(0) expanded to (B, d): one mean for the whole batch",
      "every sequence gets the same vector")(lambda h, m: h[m].mean(0).expand(h.shape[0], -1))
wrong("mp-probe-unit-length", C_MP, "the mean normalised to length 1 (F.normalize)", "normalised after the mean")(
    lambda hidden, mask: torch.nn.functional.normalize(
        (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True).clamp(min=1), dim=-1))
wrong("mp-divide-by-longest", C_MP, "every sequence divided by mask.sum(1).max(), the longest one's count",
      "the longest sequence's number of real tokens")(
    lambda hidden, mask: (hidden * mask[..., None]).sum(1) / mask.sum(1).max().clamp(min=1))


@wrong("mp-count-nonzero-rows", C_MP, "tokens counted as the rows of hidden * mask that are not all zero",
       "it counts the real tokens by their vectors")
def mp_count_nonzero_rows(hidden, mask):
    kept = hidden * mask[..., None]
    return kept.sum(1) / (kept.abs().sum(-1) > 0).sum(1, keepdim=True).clamp(min=1)


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


@right("mp-clamp", C_MP, "masked sum over the count clamped to 1 (sentence-transformers' way)")
def mp_clamp(hidden, mask):
    keep = mask.unsqueeze(-1).to(hidden.dtype)  # (B, L, 1)
    return (hidden * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1e-9)


@right("mp-einsum", C_MP, "einsum with the mask as weights, torch.where for empty rows")
def mp_einsum(hidden, mask):
    weights = mask.to(hidden.dtype)
    count = weights.sum(dim=1, keepdim=True)
    total = torch.einsum("bl,bld->bd", weights, hidden)
    return torch.where(count > 0, total / torch.where(count > 0, count, torch.ones_like(count)), 0.0)


@right("mp-masked-fill-nanmean", C_MP, "pads filled with NaN, torch.nanmean, NaN rows set to zero")
def mp_nanmean(hidden, mask):
    pooled = hidden.masked_fill(~mask[..., None], float("nan")).nanmean(dim=1)
    return torch.nan_to_num(pooled, nan=0.0)


@right("mp-loop", C_MP, "a Python loop over the sequences, hidden[b][mask[b]].mean(0)")
def mp_loop(hidden, mask):
    rows = []
    for b in range(hidden.shape[0]):
        real = hidden[b][mask[b]]
        rows.append(real.mean(dim=0) if len(real) else hidden.new_zeros(hidden.shape[-1]))
    return torch.stack(rows)


@right("mp-bmm-weights", C_MP, "normalised weights (B, 1, L) @ hidden with torch.bmm")
def mp_bmm(hidden, mask):
    w = mask.to(hidden.dtype)
    w = w / w.sum(dim=1, keepdim=True).clamp(min=1.0)
    return torch.bmm(w[:, None, :], hidden)[:, 0]


@right("mp-float64-inside", C_MP, "computed in float64, cast back to hidden's dtype")
def mp_double(hidden, mask):
    h = hidden.double()
    keep = mask.double()[..., None]
    return ((h * keep).sum(1) / keep.sum(1).clamp(min=1)).to(hidden.dtype)


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
