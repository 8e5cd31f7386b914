"""The exercise checkers: wrong answers are rejected with their own hint, right ones in any style pass."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

import encoder_course as ec
from encoder_course import checks
from encoder_course.checks import ExerciseError

# ----------------------------------------------------------------------------------------------
# Building blocks for the catalogue


def pe_right(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = torch.cos(pos / freq)
    return pe


def pe_stack(L, d):  # correct: interleave by stacking and flattening
    pos = torch.arange(L).float().unsqueeze(1)
    inv = torch.exp(torch.arange(0, d, 2).float() * (-math.log(10000.0) / d))
    return torch.stack([torch.sin(pos * inv), torch.cos(pos * inv)], dim=-1).flatten(1)


def pe_swapped(L, d):
    return pe_right(L, d)[:, torch.arange(d) ^ 1]


def pe_halves(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    return torch.cat([torch.sin(pos / freq), torch.cos(pos / freq)], dim=1)


def pe_exponent_i(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(d // 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


def pe_odd_own(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(d, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq[0::2]), torch.cos(pos / freq[1::2])
    return pe


def pe_multiply(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * freq), torch.cos(pos * freq)
    return pe


def pe_from_one(L, d):
    return ec.sinusoidal_positions(L + 1, d)[1:]


def sdpa(q, k, v, mask=None, *, dim=-1, scale="sqrt", mask_mode="fill", order="ok"):
    scores = q @ k.transpose(-2, -1)
    if scale == "sqrt":
        scores = scores / math.sqrt(q.shape[-1])
    elif scale == "d":
        scores = scores / q.shape[-1]
    elif scale == "dv":
        scores = scores / math.sqrt(v.shape[-1])
    if mask is not None and mask_mode == "fill":
        scores = scores.masked_fill(~mask, float("-inf"))
    elif mask is not None and mask_mode == "inverted":
        scores = scores.masked_fill(mask, float("-inf"))
    elif mask is not None and mask_mode == "zero":
        scores = scores.masked_fill(~mask, 0.0)
    w = torch.softmax(scores, dim=dim)
    if mask is not None and mask_mode == "after":
        w = w * mask
    out = w @ v
    if order == "swap":
        return w, out
    if order == "single":
        return out
    if order == "raw":
        return out, scores
    return out, w


def sdpa_einsum_min(q, k, v, mask=None):  # correct: einsum, finfo.min, F.softmax
    scores = torch.einsum("...qd,...kd->...qk", q, k) / q.shape[-1] ** 0.5
    if mask is not None:
        scores = scores.masked_fill(mask == False, torch.finfo(scores.dtype).min)  # noqa: E712
    w = F.softmax(scores, dim=-1)
    return torch.einsum("...qk,...kd->...qd", w, v), w


def sdpa_prescaled_where(q, k, v, mask=None):  # correct: pre-scaled q, torch.where, -inf
    q = q * q.size(-1) ** -0.5
    scores = torch.matmul(q, k.transpose(-1, -2))
    if mask is not None:
        scores = torch.where(mask, scores, torch.tensor(float("-inf"), dtype=scores.dtype))
    w = scores.softmax(-1)
    return torch.matmul(w, v), w


def sdpa_manual_softmax(q, k, v, mask=None):  # correct: a hand-written stable softmax, -1e9 fill
    scores = q @ k.transpose(-2, -1) / math.sqrt(k.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, -1e9)
    e = torch.exp(scores - scores.amax(dim=-1, keepdim=True))
    w = e / e.sum(dim=-1, keepdim=True)
    return w @ v, w


def sdpa_fused(q, k, v, mask=None):  # correct: torch's fused kernel for out, weights separately
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return out, scores.softmax(dim=-1)


def sdpa_naive_exp(q, k, v, mask=None):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    e = torch.exp(scores)
    if mask is not None:
        e = e * mask
    w = e / e.sum(dim=-1, keepdim=True)
    return w @ v, w


def sdpa_k_T(q, k, v, mask=None):
    scores = q @ k.T / math.sqrt(q.shape[-1])
    w = scores.softmax(-1)
    return w @ v, w


def sdpa_in_place(q, k, v, mask=None):
    q /= math.sqrt(q.shape[-1])
    return sdpa(q, k, v, mask, scale="none")


def sdpa_numpy(q, k, v, mask=None):
    out, w = ec.scaled_dot_product_attention(q, k, v, mask)
    return out.numpy(), w.numpy()


def sdpa_double(q, k, v, mask=None):
    out, w = ec.scaled_dot_product_attention(q.double(), k.double(), v.double(), mask)
    return out, w


def sdpa_nan(q, k, v, mask=None):
    out, w = ec.scaled_dot_product_attention(q, k, v, mask)
    return out * float("nan"), w


def sdpa_shape(q, k, v, mask=None):
    out, w = ec.scaled_dot_product_attention(q, k, v, mask)
    return out.mean(dim=-2), w


def sdpa_raises(q, k, v, mask=None):
    raise ValueError("my own bug")


def sdpa_slow(q, k, v, mask=None):
    while True:
        pass


def sdpa_stub(q, k, v, mask=None):
    raise NotImplementedError("Exercise: write scaled_dot_product_attention: replace this line with your code")


# --- masks


def pm_unsqueeze(ids, pad_id):  # correct
    return (ids != pad_id).unsqueeze(1).unsqueeze(2)


def causal_arange(L):  # correct
    i = torch.arange(L)
    return i[:, None] >= i[None, :]


# --- multi-head attention


class _MHABase(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)


def make_mha(*, split_t=True, merge_t=True, w_o=True, scale="head", use_mask=True, ret_tuple=False):
    class MHA(_MHABase):
        def forward(self, x, mask=None):
            B, L, D = x.shape
            H, dh = self.n_heads, self.d_head

            def split(t):
                return t.view(B, L, H, dh).transpose(1, 2) if split_t else t.view(B, H, L, dh)

            q, k, v = split(self.w_q(x)), split(self.w_k(x)), split(self.w_v(x))
            s = q @ k.transpose(-2, -1) / math.sqrt(dh if scale == "head" else D)
            if mask is not None and use_mask:
                s = s.masked_fill(~mask, float("-inf"))
            w = s.softmax(-1)
            h = w @ v
            h = h.transpose(1, 2).reshape(B, L, D) if merge_t else h.reshape(B, L, D)
            out = self.w_o(h) if w_o else h
            return (out, w) if ret_tuple else out

    return MHA


class MHAEinops(_MHABase):  # correct: einops + einsum + finfo.min
    def forward(self, x, mask=None):
        q, k, v = (rearrange(w(x), "b l (h d) -> b h l d", h=self.n_heads) for w in (self.w_q, self.w_k, self.w_v))
        s = torch.einsum("bhqd,bhkd->bhqk", q, k) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask, torch.finfo(s.dtype).min)
        h = torch.einsum("bhqk,bhkd->bhqd", s.softmax(-1), v)
        return self.w_o(rearrange(h, "b h l d -> b l (h d)"))


class MHAFused(_MHABase):  # correct: torch's fused attention and the package's reference
    def forward(self, x, mask=None):
        B, L, D = x.shape
        q = self.w_q(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3)
        k = self.w_k(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3)
        v = self.w_v(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3)
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.w_o(h.permute(0, 2, 1, 3).contiguous().view(B, L, D))


class MHAReference(_MHABase):  # correct: uses the package's helpers
    def forward(self, x, mask=None):
        q, k, v = (ec.split_heads(w(x), self.n_heads) for w in (self.w_q, self.w_k, self.w_v))
        out, _ = ec.scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(ec.merge_heads(out))


class MHAStub(_MHABase):
    def forward(self, x, mask=None):
        raise NotImplementedError("Exercise: write MultiHeadAttention.forward")


# --- LayerNorm


class _LNBase(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))


def make_ln(*, dim=-1, unbiased=False, eps_out=False, gamma_beta=True, eps="self", swap=False):
    class LN(_LNBase):
        def forward(self, x):
            e = self.eps if eps == "self" else eps
            mean = x.mean(dim=dim, keepdim=True)
            var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
            y = (x - mean) / (var.sqrt() + e) if eps_out else (x - mean) / torch.sqrt(var + e)
            if not gamma_beta:
                return y
            return y * self.bias + self.weight if swap else y * self.weight + self.bias

    return LN


class LNFunctional(_LNBase):  # correct
    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


class LNOnePass(_LNBase):  # correct: E[x^2] - E[x]^2 and rsqrt
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = (x * x).mean(-1, keepdim=True) - mean**2
        return self.weight * (x - mean) * torch.rsqrt(var + self.eps) + self.bias


class LNInPlace(_LNBase):
    def forward(self, x):
        x -= x.mean(-1, keepdim=True)
        return self.weight * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) + self.bias


# --- FeedForward


class _FFBase(nn.Module):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__()
        self.activation = activation
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)


def make_ff(act, *, residual=False):
    class FF(_FFBase):
        def forward(self, x):
            y = self.w2(act(self.w1(x)))
            return x + y if residual else y

    return FF


class FFErf(_FFBase):  # correct: GELU written out with erf; follows self.activation
    def forward(self, x):
        h = self.w1(x)
        h = torch.relu(h) if self.activation == "relu" else 0.5 * h * (1 + torch.erf(h / math.sqrt(2)))
        return self.w2(h)


class FFModule(nn.Module):  # correct: nn.GELU and no activation argument at all
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1, self.act, self.w2 = nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.w2(self.act(self.w1(x)))


# --- EncoderBlock


class _BlockBase(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.attn = ec.MultiHeadAttention(d_model, n_heads, dropout=dropout)
        self.ffn = ec.FeedForward(d_model, d_ff, dropout=dropout)
        self.norm1 = ec.LayerNorm(d_model)
        self.norm2 = ec.LayerNorm(d_model)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.p = dropout


class BlockRight(_BlockBase):  # correct
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


class _OwnBlock(nn.Module):  # correct: the learner's own sub-classes and torch's LayerNorm inside
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MHAEinops(d_model, n_heads)
        self.ffn = FFErf(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.p = dropout

    def forward(self, x, mask=None):
        drop = lambda t: F.dropout(t, self.p, training=self.training)  # noqa: E731
        if self.norm_first:
            x = x + drop(self.attn(self.norm1(x), mask))
            return x + drop(self.ffn(self.norm2(x)))
        x = self.norm1(x + drop(self.attn(x, mask)))
        return self.norm2(x + drop(self.ffn(x)))


def make_block(kind):
    class Block(_BlockBase):
        def forward(self, x, mask=None):
            m = None if kind == "no_mask" else mask
            d1 = (lambda t: F.dropout(t, self.p)) if kind == "eval_dropout" else self.dropout1
            d2 = (lambda t: t) if kind == "no_dropout" else self.dropout2
            if kind == "no_dropout":
                d1 = d2
            pre = self.norm_first if kind != "always_post" else False
            n1, n2 = (self.norm2, self.norm1) if kind == "swap_norms" else (self.norm1, self.norm2)
            if pre:
                x = x + d1(self.attn(n1(x), m))
                return x + d2(self.ffn(n2(x)))
            if kind == "no_residual":
                x = n1(d1(self.attn(x, m)))
                return n2(d2(self.ffn(x)))
            x = n1(x + d1(self.attn(x, m)))
            return n2(x + d2(self.ffn(x)))

    if kind == "no_dropout":
        Block.__init__ = _no_dropout_init
    return Block


def _no_dropout_init(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
    _BlockBase.__init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=norm_first)


class BlockNumpy(BlockRight):
    def forward(self, x, mask=None):
        return super().forward(x, mask).numpy()


# ----------------------------------------------------------------------------------------------
# The catalogue

WRONG = [
    # (id, checker, candidate, words that must appear in the message)
    ("pe-swapped", checks.check_sinusoidal_positions, pe_swapped, "swapped"),
    ("pe-halves", checks.check_sinusoidal_positions, pe_halves, "interleaved"),
    ("pe-exponent-i", checks.check_sinusoidal_positions, pe_exponent_i, "exponent"),
    ("pe-odd-own", checks.check_sinusoidal_positions, pe_odd_own, "odd columns"),
    ("pe-multiply", checks.check_sinusoidal_positions, pe_multiply, "instead of dividing"),
    ("pe-from-one", checks.check_sinusoidal_positions, pe_from_one, "from 0"),
    ("pe-float64", checks.check_sinusoidal_positions, lambda L, d: pe_right(L, d).double(), "float32"),
    ("pe-transposed", checks.check_sinusoidal_positions, lambda L, d: pe_right(L, d).T, "rows and columns"),
    ("pe-numpy", checks.check_sinusoidal_positions, lambda L, d: pe_right(L, d).numpy(), "NumPy"),
    ("pe-none", checks.check_sinusoidal_positions, lambda L, d: None, "return"),
    ("sdpa-axis", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, dim=-2), "wrong axis"),
    ("sdpa-axis-1", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, dim=1), "wrong axis"),
    ("sdpa-no-scale", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, scale="none"), "not scaled"),
    ("sdpa-dk", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, scale="d"), "square root"),
    ("sdpa-dv", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, scale="dv"), "size of v"),
    ("sdpa-inverted", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, mask_mode="inverted"),
     "inverted"),
    ("sdpa-fill-zero", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, mask_mode="zero"),
     "exp(0)"),
    ("sdpa-after", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, mask_mode="after"),
     "after the softmax"),
    ("sdpa-ignored", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, mask_mode="none"),
     "no effect"),
    ("sdpa-single", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, order="single"),
     "(out, weights)"),
    ("sdpa-order", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, order="swap"), "order"),
    ("sdpa-raw-weights", checks.check_scaled_dot_product_attention, lambda *a: sdpa(*a, order="raw"),
     "raw scores"),
    ("sdpa-in-place", checks.check_scaled_dot_product_attention, sdpa_in_place, "in place"),
    ("sdpa-k-T", checks.check_scaled_dot_product_attention, sdpa_k_T, "transpose(-2, -1)"),
    ("sdpa-overflow", checks.check_scaled_dot_product_attention, sdpa_naive_exp, "maximum"),
    ("sdpa-numpy", checks.check_scaled_dot_product_attention, sdpa_numpy, "NumPy"),
    ("sdpa-dtype", checks.check_scaled_dot_product_attention, sdpa_double, "dtype"),
    ("sdpa-nan", checks.check_scaled_dot_product_attention, sdpa_nan, "NaN"),
    ("sdpa-shape", checks.check_scaled_dot_product_attention, sdpa_shape, "shape"),
    ("pm-inverted", checks.check_padding_mask, lambda ids, p: (ids == p)[:, None, None, :], "inverted"),
    ("pm-2d", checks.check_padding_mask, lambda ids, p: ids != p, "[:, None, None, :]"),
    ("pm-float", checks.check_padding_mask, lambda ids, p: (ids != p)[:, None, None, :].float(), "bool"),
    ("pm-zero", checks.check_padding_mask, lambda ids, p: (ids != 0)[:, None, None, :], "pad_id"),
    ("pm-key-axis", checks.check_padding_mask, lambda ids, p: (ids != p)[:, None, :, None], "last dimension"),
    ("cm-upper", checks.check_causal_mask, lambda L: torch.ones(L, L, dtype=torch.bool).triu(), "lower triangle"),
    ("cm-no-diag", checks.check_causal_mask, lambda L: torch.ones(L, L, dtype=torch.bool).tril(-1), "diagonal"),
    ("cm-inverted", checks.check_causal_mask, lambda L: torch.ones(L, L, dtype=torch.bool).triu(1), "inverted"),
    ("cm-int", checks.check_causal_mask, lambda L: torch.ones(L, L).tril().long(), "bool"),
    ("mha-split", checks.check_multi_head_attention, make_mha(split_t=False, merge_t=False), "without the transpose"),
    ("mha-merge", checks.check_multi_head_attention, make_mha(merge_t=False), "merged without the transpose"),
    ("mha-no-wo", checks.check_multi_head_attention, make_mha(w_o=False), "output projection"),
    ("mha-scale", checks.check_multi_head_attention, make_mha(scale="model"), "sqrt(d_head)"),
    ("mha-no-mask", checks.check_multi_head_attention, make_mha(use_mask=False), "no effect"),
    ("mha-tuple", checks.check_multi_head_attention, make_mha(ret_tuple=True), "tuple"),
    ("ln-axis", checks.check_layer_norm, make_ln(dim=0), "wrong axis"),
    ("ln-unbiased", checks.check_layer_norm, make_ln(unbiased=True), "unbiased"),
    ("ln-eps-outside", checks.check_layer_norm, make_ln(eps_out=True), "outside the square root"),
    ("ln-no-affine", checks.check_layer_norm, make_ln(gamma_beta=False), "gamma and beta are missing"),
    ("ln-fixed-eps", checks.check_layer_norm, make_ln(eps=1e-5), "self.eps"),
    ("ln-swap", checks.check_layer_norm, make_ln(swap=True), "swapped"),
    ("ln-in-place", checks.check_layer_norm, LNInPlace, "in place"),
    ("ff-relu", checks.check_feed_forward, make_ff(F.relu), "GELU"),
    ("ff-tanh", checks.check_feed_forward, make_ff(lambda h: F.gelu(h, approximate="tanh")), "approximation"),
    ("ff-none", checks.check_feed_forward, make_ff(lambda h: h), "non-linearity"),
    ("ff-residual", checks.check_feed_forward, make_ff(F.gelu, residual=True), "residual"),
    ("blk-always-post", checks.check_encoder_block, make_block("always_post"), "mixed up"),
    ("blk-eval-dropout", checks.check_encoder_block, make_block("eval_dropout"), "eval mode"),
    ("blk-no-residual", checks.check_encoder_block, make_block("no_residual"), "residual connection"),
    ("blk-no-mask", checks.check_encoder_block, make_block("no_mask"), "mask is not passed"),
    ("blk-swap-norms", checks.check_encoder_block, make_block("swap_norms"), "swapped"),
    ("blk-no-dropout", checks.check_encoder_block, make_block("no_dropout"), "no dropout"),
    ("blk-numpy", checks.check_encoder_block, BlockNumpy, "NumPy"),
]

RIGHT = [
    ("pe-package", checks.check_sinusoidal_positions, ec.sinusoidal_positions),
    ("pe-power", checks.check_sinusoidal_positions, pe_right),
    ("pe-stack", checks.check_sinusoidal_positions, pe_stack),
    ("sdpa-package", checks.check_scaled_dot_product_attention, ec.scaled_dot_product_attention),
    ("sdpa-plain", checks.check_scaled_dot_product_attention, sdpa),
    ("sdpa-einsum-finfo-min", checks.check_scaled_dot_product_attention, sdpa_einsum_min),
    ("sdpa-prescaled-where", checks.check_scaled_dot_product_attention, sdpa_prescaled_where),
    ("sdpa-manual-softmax", checks.check_scaled_dot_product_attention, sdpa_manual_softmax),
    ("sdpa-fused", checks.check_scaled_dot_product_attention, sdpa_fused),
    ("pm-package", checks.check_padding_mask, ec.padding_mask),
    ("pm-unsqueeze", checks.check_padding_mask, pm_unsqueeze),
    ("cm-package", checks.check_causal_mask, ec.causal_mask),
    ("cm-arange", checks.check_causal_mask, causal_arange),
    ("mha-package", checks.check_multi_head_attention, ec.MultiHeadAttention),
    ("mha-view-transpose", checks.check_multi_head_attention, make_mha()),
    ("mha-einops", checks.check_multi_head_attention, MHAEinops),
    ("mha-fused", checks.check_multi_head_attention, MHAFused),
    ("mha-helpers", checks.check_multi_head_attention, MHAReference),
    ("ln-package", checks.check_layer_norm, ec.LayerNorm),
    ("ln-plain", checks.check_layer_norm, make_ln()),
    ("ln-functional", checks.check_layer_norm, LNFunctional),
    ("ln-one-pass", checks.check_layer_norm, LNOnePass),
    ("ff-package", checks.check_feed_forward, ec.FeedForward),
    ("ff-erf", checks.check_feed_forward, FFErf),
    ("ff-module", checks.check_feed_forward, FFModule),
    ("blk-package", checks.check_encoder_block, ec.EncoderBlock),
    ("blk-right", checks.check_encoder_block, BlockRight),
    ("blk-own-parts", checks.check_encoder_block, _OwnBlock),
]

PASS_LINES = {
    checks.check_sinusoidal_positions: "✓ sinusoidal_positions: all checks passed",
    checks.check_scaled_dot_product_attention: "✓ scaled_dot_product_attention: all checks passed",
    checks.check_padding_mask: "✓ padding_mask: all checks passed",
    checks.check_causal_mask: "✓ causal_mask: all checks passed",
    checks.check_multi_head_attention: "✓ multi_head_attention: all checks passed",
    checks.check_layer_norm: "✓ layer_norm: all checks passed",
    checks.check_feed_forward: "✓ feed_forward: all checks passed",
    checks.check_encoder_block: "✓ encoder_block: all checks passed",
}


def test_catalogue_sizes():
    assert len(WRONG) >= 30 and len(RIGHT) >= 10
    assert {c for _, c, _, _ in WRONG} == set(PASS_LINES) == {c for _, c, _ in RIGHT}


@pytest.mark.filterwarnings("ignore:The use of `x.T`")
@pytest.mark.parametrize("checker, candidate, words", [w[1:] for w in WRONG], ids=[w[0] for w in WRONG])
def test_wrong_answer_is_named(checker, candidate, words, capsys):
    with pytest.raises(ExerciseError) as info:
        checker(candidate)
    message = str(info.value)
    assert words in message, message
    assert isinstance(info.value, AssertionError)
    assert "✓" not in capsys.readouterr().out
    assert "checks.py" not in message and "Traceback" not in message


@pytest.mark.parametrize("checker, candidate", [r[1:] for r in RIGHT], ids=[r[0] for r in RIGHT])
def test_right_answer_passes(checker, candidate, capsys):
    assert checker(candidate) is None
    assert capsys.readouterr().out == PASS_LINES[checker] + "\n"


def _stub(*args, **kwargs):
    raise NotImplementedError("Exercise: replace this line with your code")


class _LNStub(_LNBase):
    def forward(self, x):
        raise NotImplementedError("Exercise: write LayerNorm.forward")


class _FFStub(_FFBase):
    def forward(self, x):
        raise NotImplementedError("Exercise")


class _BlockStub(_BlockBase):
    def forward(self, x, mask=None):
        raise NotImplementedError("Exercise")


STUBS = [
    (checks.check_sinusoidal_positions, _stub), (checks.check_scaled_dot_product_attention, sdpa_stub),
    (checks.check_padding_mask, _stub), (checks.check_causal_mask, _stub),
    (checks.check_multi_head_attention, MHAStub), (checks.check_layer_norm, _LNStub),
    (checks.check_feed_forward, _FFStub), (checks.check_encoder_block, _BlockStub),
]


@pytest.mark.parametrize("checker, stub", STUBS, ids=[s[0].__name__ for s in STUBS])
def test_stub_is_not_attempted_without_raising(checker, stub, capsys):
    assert checker(stub) is None
    out = capsys.readouterr().out
    name = PASS_LINES[checker].split()[1].rstrip(":")
    assert out.startswith(f"… {name}: not attempted yet")
    assert out.count("\n") == 1 and "✓" not in out


def test_candidate_exception_is_chained():
    with pytest.raises(ExerciseError) as info:
        checks.check_scaled_dot_product_attention(sdpa_raises)
    assert "raised ValueError" in str(info.value) and "my own bug" in str(info.value)
    assert isinstance(info.value.__cause__, ValueError)


def test_slow_candidate_is_stopped(monkeypatch):
    monkeypatch.setattr(checks, "TIME_LIMIT", 0.3)
    start = time.perf_counter()
    with pytest.raises(ExerciseError, match="took more than 0.3 s"):
        checks.check_scaled_dot_product_attention(sdpa_slow)
    assert time.perf_counter() - start < 5


def test_slow_candidate_without_timer_is_reported(monkeypatch):
    monkeypatch.setattr(checks, "TIME_LIMIT", 0.05)
    monkeypatch.setattr(checks.threading, "main_thread", lambda: None)  # no signal timer: only measure

    def sleepy(L, d):
        time.sleep(0.1)
        return ec.sinusoidal_positions(L, d)

    with pytest.raises(ExerciseError, match="took more than"):
        checks.check_sinusoidal_positions(sleepy)


def test_inputs_modified_names_the_input():
    with pytest.raises(ExerciseError, match="changed its input `q` in place"):
        checks.check_scaled_dot_product_attention(sdpa_in_place)

    def mask_in_place(ids, pad_id):
        ids[ids == pad_id] = -1
        return (ids != -1)[:, None, None, :]

    with pytest.raises(ExerciseError, match="changed its input `token_ids`"):
        checks.check_padding_mask(mask_in_place)


def test_checker_keeps_global_random_state_and_threads():
    torch.manual_seed(123)
    expected = torch.rand(3)
    threads = torch.get_num_threads()
    torch.manual_seed(123)
    checks.check_encoder_block(ec.EncoderBlock)
    assert torch.equal(torch.rand(3), expected)
    assert torch.get_num_threads() == threads


def test_not_callable_is_explained():
    with pytest.raises(ExerciseError, match="without calling it"):
        checks.check_causal_mask(ec.causal_mask(3))


def test_wrong_constructor_is_explained():
    class NoHeads(nn.Module):
        def __init__(self, d_model):
            super().__init__()

    with pytest.raises(ExerciseError, match=r"when built as NoHeads\(16, 2\)") as info:
        checks.check_multi_head_attention(NoHeads)
    assert isinstance(info.value.__cause__, TypeError)


def test_renamed_submodule_is_explained():
    class Renamed(_MHABase):
        def __init__(self, d_model, n_heads):
            super().__init__(d_model, n_heads)
            self.out_proj = self.w_o
            del self.w_o

        def forward(self, x, mask=None):
            return x

    with pytest.raises(ExerciseError, match="has no `w_o`"):
        checks.check_multi_head_attention(Renamed)


def test_numpy_array_input_never_reaches_the_reference():
    # a candidate that returns a numpy scalar array for the mask
    with pytest.raises(ExerciseError, match="NumPy"):
        checks.check_causal_mask(lambda L: np.tril(np.ones((L, L), dtype=bool)))


def test_what_the_learner_prints_stays_out_of_a_passing_check(capfd):
    """nbval compares a check cell's output with the pass line, so debugging prints must not reach it."""
    import warnings

    def chatty(seq_len, d_model):
        print("debug: building the table", seq_len, d_model)
        warnings.warn("a warning from the learner's code")
        return pe_right(seq_len, d_model)

    checks.check_sinusoidal_positions(chatty)
    out, err = capfd.readouterr()
    assert out == "✓ sinusoidal_positions: all checks passed\n" and err == ""


def test_what_the_learner_prints_is_shown_when_the_check_fails():
    def chatty_swapped(seq_len, d_model):
        for i in range(12):
            print(f"debug line {i}")
        return pe_swapped(seq_len, d_model)

    with pytest.raises(ExerciseError) as info:
        checks.check_sinusoidal_positions(chatty_swapped)
    message = str(info.value)
    assert "sin and cos are swapped" in message
    assert "Your code printed this while it was checked (the last 10 of 12 lines):" in message
    assert "debug line 11" in message and "debug line 1\n" not in message
