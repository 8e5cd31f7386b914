"""The checkers' second catalogue: more learner mistakes, each named, and more right answers in other styles.

These candidates were written as an adversarial probe, after the first catalogue (test_checks.py),
by someone trying to find mistakes the checkers would miss or explain badly. Each wrong one must be
rejected with the phrase that names its mistake; each right one must pass.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

import encoder_course as ec
from encoder_course import checks
from catalogue import BlockSkeleton, Catalogue
from catalogue import MHASkeleton as MB
from catalogue import sdpa as _sdpa

C_PE = checks.check_sinusoidal_positions
C_SDPA = checks.check_scaled_dot_product_attention
C_PM = checks.check_padding_mask
C_CM = checks.check_causal_mask
C_MHA = checks.check_multi_head_attention
C_LN = checks.check_layer_norm
C_FF = checks.check_feed_forward
C_BLK = checks.check_encoder_block

CATALOGUE = Catalogue()
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


# =============================================================================================
# Positions


def _pe(L, d, *, base=10000.0, cos_fn=torch.cos):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = base ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = cos_fn(pos / freq)
    return pe


@wrong("pe-base-1000", C_PE, "1000 instead of 10000 as the base",
       'base of the frequencies is 1000')
def pe_base_1000(L, d):
    return _pe(L, d, base=1000.0)


@wrong("pe-log10", C_PE, "exp(-log10(10000)*2i/d): log10 instead of natural log",
       '10000')
def pe_log10(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    inv = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * (-math.log10(10000.0) / d))
    return torch.stack([torch.sin(pos * inv), torch.cos(pos * inv)], -1).flatten(1)


@wrong("pe-batch-dim", C_PE, "returns (1, L, d) with a batch dim",
       'should be (seq_len, d_model)')
def pe_batch(L, d):
    return _pe(L, d).unsqueeze(0)


@wrong("pe-list", C_PE, "returns .tolist()",
       'Python list')
def pe_list(L, d):
    return _pe(L, d).tolist()


@wrong("pe-long-table", C_PE, "pe = torch.zeros(L, d, dtype=torch.long): values truncated to ints",
       'integer table')
def pe_long(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d, dtype=torch.long)
    pe[:, 0::2] = torch.sin(pos / freq).long()
    pe[:, 1::2] = torch.cos(pos / freq).long()
    return pe


@wrong("pe-int-floordiv", C_PE, "exponent (2*i)//d_model with integer i: every frequency is 1",
       'same frequency')
def pe_floordiv(L, d):
    pos = torch.arange(L)[:, None]
    i = torch.arange(d // 2)
    freq = 10000 ** ((2 * i) // d)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = torch.cos(pos / freq)
    return pe


@wrong("pe-sin-twice", C_PE, "copy-paste: odd columns also sin",
       'odd columns hold sines')
def pe_sin_twice(L, d):
    return _pe(L, d, cos_fn=torch.sin)


# =============================================================================================
# Attention


@wrong("sdpa-scale-Lk", C_SDPA, "divides by sqrt(k.size(-2)) = sqrt(L_k)",
       'number of keys')
def sdpa_scale_lk(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(k.size(-2))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-precedence", C_SDPA, "q.shape[-1] ** 1/2 (= d_k/2, operator precedence)",
       'd_k ** 1/2')
def sdpa_prec(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / (q.shape[-1] ** 1 / 2)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-transposed", C_SDPA, "mask.transpose(-2,-1): masks queries instead of keys",
       'without transposing')
def sdpa_mask_t(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask.transpose(-2, -1), float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-fill-plus-1e-9", C_SDPA, "masked_fill(~mask, 1e-9) (typo for -1e9)",
       'exp(0) = 1')
def sdpa_fill_pos(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, 1e-9)
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-multiply", C_SDPA, "scores = scores * mask (masked scores become 0)",
       'exp(0) = 1')
def sdpa_mask_mul(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s * mask
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-add-bool", C_SDPA, "scores = scores + mask (bool mask used as an additive mask)",
       'look at how you use the mask')
def sdpa_mask_add(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-log-softmax", C_SDPA, "F.log_softmax instead of softmax",
       'sum to 1')
def sdpa_logsm(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = F.log_softmax(s, dim=-1)
    return w @ v, w


@wrong("sdpa-dropout-always", C_SDPA, "F.dropout(w, 0.1) (training=True by default): random output",
       'Something random is inside')
def sdpa_dropout(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    w = F.dropout(w, 0.1)
    return w @ v, w


@wrong("sdpa-weights-none", C_SDPA, "return F.scaled_dot_product_attention(...), None",
       'None as its second value')
def sdpa_none_w(q, k, v, mask=None):
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask), None


@wrong("sdpa-k-transpose_", C_SDPA, "k.transpose_(-2,-1) changes the caller's k in place",
       'changed its input `k` in place')
def sdpa_kt_(q, k, v, mask=None):
    k.transpose_(-2, -1)
    s = q @ k / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-unsqueeze", C_SDPA, "mask = mask.unsqueeze(1) (adds a head dim the mask already has)",
       'should be (..., L_q, d_v)')
def sdpa_mask_unsq(q, k, v, mask=None):
    if mask is not None:
        mask = mask.unsqueeze(1)
    return _sdpa(q, k, v, mask)


@wrong("sdpa-weights-T", C_SDPA, "returns weights.transpose(-2,-1)",
       'should be (..., L_q, L_k)')
def sdpa_wt(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    return out, w.transpose(-2, -1)


@wrong("sdpa-scale-after-softmax", C_SDPA, "softmax(q k^T) / sqrt(d_k): scales after the softmax",
       'scaling comes after the softmax')
def sdpa_scale_after(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1) / math.sqrt(q.shape[-1])
    return w @ v, w


@wrong("sdpa-dict", C_SDPA, "returns {'out': out, 'weights': w}",
       'the pair (out, weights)')
def sdpa_dict(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    return {"out": out, "weights": w}


# =============================================================================================
# Masks


@wrong("pm-B1L", C_PM, "(ids != pad)[:, None, :] -> (B, 1, L)",
       '(B, 1, 1, L)')
def pm_b1l(ids, pad_id):
    return (ids != pad_id)[:, None, :]


@wrong("pm-greater", C_PM, "ids > pad_id (works only when pad is the smallest id)",
       'the right mask is')
def pm_greater(ids, pad_id):
    return (ids > pad_id)[:, None, None, :]


@wrong("pm-B1LL", C_PM, "expanded to (B, 1, L, L)",
       '(B, 1, 1, L)')
def pm_b1ll(ids, pad_id):
    B, L = ids.shape
    return (ids != pad_id)[:, None, None, :].expand(B, 1, L, L)


@wrong("pm-where-int", C_PM, "torch.where(ids == pad, 0, 1): int64 mask",
       'bool tensor')
def pm_where(ids, pad_id):
    return torch.where(ids == pad_id, 0, 1)[:, None, None, :]


@wrong("cm-tril-plus1", C_CM, "tril(1): each position also sees the next one",
       'the right mask is')
def cm_tril1(L):
    return torch.ones(L, L, dtype=torch.bool).tril(1)


@wrong("cm-4d", C_CM, "returns (1, 1, L, L)",
       '(L, L)')
def cm_4d(L):
    return torch.ones(L, L, dtype=torch.bool).tril()[None, None]


@wrong("cm-float", C_CM, "torch.tril(torch.ones(L, L)): float mask",
       'bool tensor')
def cm_float(L):
    return torch.tril(torch.ones(L, L))


# =============================================================================================
# Multi-head attention


@wrong("mha-merge-dh-H", C_MHA, "merge: permute(0,2,3,1).reshape -> (B,L,d_head,H) order",
       'split or merged in the wrong order')
class MHAMergeDhH(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.permute(0, 2, 3, 1).reshape(B, L, D))


@wrong("mha-split-dh-H", C_MHA, "split: view(B,L,d_head,H).permute(0,3,1,2)",
       'split or merged in the wrong order')
class MHASplitDhH(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        sp = lambda t: t.view(B, L, self.d_head, self.n_heads).permute(0, 3, 1, 2)  # noqa: E731
        q, k, v = sp(self.w_q(x)), sp(self.w_k(x)), sp(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.permute(0, 2, 3, 1).reshape(B, L, D))


@wrong("mha-shared-proj", C_MHA, "q = k = v = w_q(x)",
       'same projection')
class MHAShared(MB):
    def forward(self, x, mask=None):
        t = self.split(self.w_q(x))
        h, _ = _sdpa(t, t, t, mask)
        return self.w_o(self.merge(h))


@wrong("mha-mask-head0", C_MHA, "mask applied to head 0 only",
       'Without a mask your class is right')
class MHAMaskHead0(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s0 = s[:, :1].masked_fill(~mask, float("-inf"))
            s = torch.cat([s0, s[:, 1:]], dim=1)
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-returns-weights", C_MHA, "returns the attention weights (B,H,L,L) instead of the output",
       'should be (2, 6, 16)')
class MHARetW(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        _, w = _sdpa(q, k, v, mask)
        return w  # the weights, where the projected output self.w_o(self.merge(h)) was due


@wrong("mha-view-noncontig", C_MHA, "h.transpose(1,2).view(B,L,D) raises (needs reshape/contiguous)",
       '.reshape(...)')
class MHAViewErr(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.transpose(1, 2).view(B, L, D))


@wrong("mha-dropout-eval", C_MHA, "F.dropout(weights, 0.1) active in eval",
       'dropout is active in eval mode')
class MHADrop(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        _, w = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(F.dropout(w, 0.1) @ v))


@wrong("mha-no-bias", C_MHA, "F.linear(x, self.w_q.weight) etc. (biases of q,k,v dropped)",
       'biases are missing')
class MHANoBias(MB):
    def forward(self, x, mask=None):
        q = self.split(F.linear(x, self.w_q.weight))
        k = self.split(F.linear(x, self.w_k.weight))
        v = self.split(F.linear(x, self.w_v.weight))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-batch-first", C_MHA, "returns (L, B, d_model) (nn.MultiheadAttention habit)",
       'wrong order')
class MHALBD(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h)).transpose(0, 1)


@wrong("mha-mask-required", C_MHA, "forward(self, x, mask) without a default",
       'mask=None')
class MHAMaskReq(MB):
    def forward(self, x, mask):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-mask-inverted", C_MHA, "masked_fill(mask, -inf)",
       'inverted')
class MHAInv(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-softmax-dim-2", C_MHA, "softmax(dim=-2)",
       'wrong axis')
class MHAAxis(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-2) @ v))


@wrong("mha-scale-sqrt-H", C_MHA, "divides by sqrt(n_heads)",
       'sqrt(n_heads)')
class MHAScaleH(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.n_heads)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-mask-unsqueeze", C_MHA, "mask.unsqueeze(1) before use: (B,1,1,1,L)",
       'raised ValueError')
class MHAMaskUnsq(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        if mask is not None:
            mask = mask.unsqueeze(1)
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-inplace-x", C_MHA, "x /= 1 ... or x.mul_ on the caller's x",
       'changed its input `x` in place')
class MHAInplace(MB):
    def forward(self, x, mask=None):
        x.mul_(1.0 / math.sqrt(self.d_head))  # learner pre-scales inputs in place
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


# =============================================================================================
# LayerNorm


class LB(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))


@wrong("ln-no-beta", C_LN, "forgets + self.bias",
       'beta (self.bias) is missing')
class LNNoBeta(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps)


@wrong("ln-batchnorm", C_LN, "mean/var over dims (0, 1) (BatchNorm-style, over batch and sequence)",
       'as BatchNorm does')
class LNBatch(LB):
    def forward(self, x):
        dims = tuple(range(x.dim() - 1))
        m, v = x.mean(dims, keepdim=True), x.var(dims, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-no-keepdim", C_LN, "mean(-1) without keepdim -> broadcasting error",
       'keepdim=True')
class LNNoKeep(LB):
    def forward(self, x):
        m, v = x.mean(-1), x.var(-1, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-bias-before-weight", C_LN, "(x_hat + bias) * weight",
       'added before multiplying')
class LNOrder(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return ((x - m) / torch.sqrt(v + self.eps) + self.bias) * self.weight


@wrong("ln-rmsnorm", C_LN, "RMSNorm: x / sqrt(mean(x^2) + eps)",
       'RMSNorm')
class LNRms(LB):
    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) + self.bias


@wrong("ln-float64", C_LN, "computes in float64 and returns float64",
       'dtype torch.float64')
class LNDouble(LB):
    def forward(self, x):
        x = x.double()
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-std-plus-eps", C_LN, "(x - mean) / (x.std(-1) + eps): unbiased std and eps outside",
       'unbiased')
class LNStd(LB):
    def forward(self, x):
        return self.weight * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.bias


# =============================================================================================
# FeedForward


class FB(nn.Module):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__()
        self.activation = activation
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)

    def act(self, h):
        return F.relu(h) if self.activation == "relu" else F.gelu(h)


@wrong("ff-act-after-w2", C_FF, "act(w2(act(w1 x)))",
       'also applied after w2')
class FFActOut(FB):
    def forward(self, x):
        return self.act(self.w2(self.act(self.w1(x))))


@wrong("ff-no-bias", C_FF, "F.linear without biases",
       'biases of w1 and w2 are missing')
class FFNoBias(FB):
    def forward(self, x):
        return F.linear(self.act(F.linear(x, self.w1.weight)), self.w2.weight)


@wrong("ff-ignores-activation", C_FF, "always GELU even when activation='relu'",
       'should use ReLU')
class FFAlwaysGelu(FB):
    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


@wrong("ff-dropout-eval", C_FF, "F.dropout(h, 0.1) active in eval",
       'dropout is active in eval mode')
class FFDrop(FB):
    def forward(self, x):
        return self.w2(F.dropout(self.act(self.w1(x)), 0.1))


@wrong("ff-erf-no-sqrt2", C_FF, "0.5*h*(1+erf(h/2)) (forgot sqrt)",
       'erf(h / sqrt(2))')
class FFErfBad(FB):
    def forward(self, x):
        h = self.w1(x)
        h = F.relu(h) if self.activation == "relu" else 0.5 * h * (1 + torch.erf(h / 2))
        return self.w2(h)


@wrong("ff-w-swapped", C_FF, "w1(act(w2(x))): linears swapped -> shape error",
       'apply w1 first')
class FFSwap(FB):
    def forward(self, x):
        return self.w1(self.act(self.w2(x)))


# =============================================================================================
# Encoder block


class BB(BlockSkeleton):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, activation="gelu", eps=1e-5):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first, activation, eps)
        self.p = dropout  # for the candidates that call F.dropout themselves

@wrong("blk-no-res-ffn", C_BLK, "residual missing around the FFN only",
       'around the feed-forward sublayer is missing')
class BlkNoResFfn(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(self.dropout2(self.ffn(x)))


@wrong("blk-no-res-attn", C_BLK, "residual missing around the attention only",
       'around the attention sublayer is missing')
class BlkNoResAttn(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-norm1-twice", C_BLK, "norm1 used for both sublayers",
       'norm1 is used for both')
class BlkNorm1(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm1(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm1(x + self.dropout2(self.ffn(x)))


@wrong("blk-inplace-residual", C_BLK, "x += attn(...) modifies the caller's x",
       'changed its input `x` in place')
class BlkInplace(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x += self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x += self.dropout1(self.attn(x, mask))
        x = self.norm1(x)
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-mask-inverted", C_BLK, "self.attn(x, ~mask)",
       'inverted before it reaches the attention')
class BlkMaskInv(BB):
    def forward(self, x, mask=None):
        m = ~mask if mask is not None else None
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), m))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, m)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-returns-tuple", C_BLK, "return x, mask",
       'tuple of 2 values')
class BlkTuple(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x))), mask
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x))), mask


@wrong("blk-pre-extra-norm", C_BLK, "pre-LN adds an output norm: norm2(x + ffn(norm2(x)))",
       'output is normalised again')
class BlkPreExtra(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return self.norm2(x + self.dropout2(self.ffn(self.norm2(x))))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-ffn-first", C_BLK, "sublayers in the wrong order: FFN, then attention",
       'wrong order: attention comes first')
class BlkFfnFirst(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout2(self.ffn(self.norm2(x)))
            return x + self.dropout1(self.attn(self.norm1(x), mask))
        x = self.norm2(x + self.dropout2(self.ffn(x)))
        return self.norm1(x + self.dropout1(self.attn(x, mask)))


@wrong("blk-dropout-residual-stream", C_BLK, "nn.Dropout applied to the whole residual sum: norm1(dropout1(x + attn(x))) (train-only bug)",
       'outside the sublayers')
class BlkDropStream(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = self.dropout1(x + self.attn(self.norm1(x), mask))
            return self.dropout2(x + self.ffn(self.norm2(x)))
        x = self.norm1(self.dropout1(x + self.attn(x, mask)))
        return self.norm2(self.dropout2(x + self.ffn(x)))


@wrong("blk-F-dropout-stream-eval", C_BLK, "F.dropout(x + attn, p) on the residual stream (active in eval)",
       'dropout is active in eval mode')
class BlkFDropStream(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = F.dropout(x + self.attn(self.norm1(x), mask), self.p)
            return x + self.ffn(self.norm2(x))
        x = self.norm1(F.dropout(x + self.attn(x, mask), self.p))
        return self.norm2(x + self.ffn(x))


@wrong("blk-sandwich", C_BLK, "post-LN that also normalises before: norm1(x + attn(norm1(x)))",
       'inputs are normalised too')
class BlkSandwich(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(self.norm1(x), mask)))
        return self.norm2(x + self.dropout2(self.ffn(self.norm2(x))))


# =============================================================================================
# RIGHT variants


@right("pe-double-outer", C_PE, "float64 torch.outer, cast with .float()")
def pe_r1(L, d):
    pos = torch.arange(L, dtype=torch.float64)
    inv = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float64) / d))
    ang = torch.outer(pos, inv)
    pe = torch.empty(L, d, dtype=torch.float64)
    pe[:, ::2], pe[:, 1::2] = ang.sin(), ang.cos()
    return pe.float()


@right("pe-loops", C_PE, "plain Python loops with math.sin/cos")
def pe_r2(L, d):
    pe = torch.zeros(L, d)
    for pos in range(L):
        for i in range(0, d, 2):
            pe[pos, i] = math.sin(pos / (10000 ** (i / d)))
            pe[pos, i + 1] = math.cos(pos / (10000 ** (i / d)))
    return pe


@right("pe-numpy-then-torch", C_PE, "numpy then torch.from_numpy(...).float()")
def pe_r3(L, d):
    pos = np.arange(L)[:, None]
    ang = pos / np.power(10000, np.arange(0, d, 2) / d)
    pe = np.zeros((L, d))
    pe[:, 0::2], pe[:, 1::2] = np.sin(ang), np.cos(ang)
    return torch.from_numpy(pe).float()


@right("pe-noncontiguous", C_PE, "built as (d, L) and returned .T (non-contiguous)")
def pe_r4(L, d):
    pos = torch.arange(L, dtype=torch.float32)[None, :]
    inv = 10000 ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
    t = torch.empty(d, L)
    t[0::2], t[1::2] = torch.sin(inv[:, None] * pos), torch.cos(inv[:, None] * pos)
    return t.T


@right("sdpa-additive-mask", C_SDPA, "scores + (~mask).float() * -1e9")
def sdpa_r1(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + (~mask).float() * -1e9
    w = s.softmax(-1)
    return w @ v, w


@right("sdpa-fill-1e4", C_SDPA, "masked_fill(~mask, -1e4)")
def sdpa_r2(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, -1e4)
    w = s.softmax(-1)
    return w @ v, w


@right("sdpa-fill_-fresh-scores", C_SDPA, "masked_fill_ on the freshly computed scores (allowed)")
def sdpa_r3(q, k, v, mask=None):
    s = torch.matmul(q, k.mT) * (1.0 / math.sqrt(k.shape[-1]))
    if mask is not None:
        s.masked_fill_(mask.logical_not(), float("-inf"))
    w = torch.nn.functional.softmax(s, dim=-1)
    return torch.matmul(w, v), w


@right("sdpa-float-mask-eq0", C_SDPA, "mask.float(); masked_fill(mask == 0, -inf)")
def sdpa_r4(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        m = mask.float()
        s = s.masked_fill(m == 0, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@right("sdpa-double-internal", C_SDPA, "computed in float64, cast back to q.dtype")
def sdpa_r5(q, k, v, mask=None):
    dt = q.dtype
    out, w = _sdpa(q.double(), k.double(), v.double(), mask)
    return out.to(dt), w.to(dt)


@right("sdpa-logsumexp", C_SDPA, "w = exp(s - logsumexp(s)); torch.where with a Python float")
def sdpa_r6(q, k, v, mask=None):
    s = torch.einsum("...id,...jd->...ij", q, k) / math.sqrt(q.size(-1))
    if mask is not None:
        s = torch.where(mask, s, float("-inf"))
    w = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
    return torch.einsum("...ij,...jd->...id", w, v), w


@right("pm-logical-not-view", C_PM, "torch.logical_not(ids.eq(pad)).view(B, 1, 1, L)")
def pm_r1(ids, pad_id):
    B, L = ids.shape
    return torch.logical_not(ids.eq(pad_id)).view(B, 1, 1, L)


@right("pm-eq-False-reshape", C_PM, "((ids == pad) == False).reshape(B,1,1,L)")
def pm_r2(ids, pad_id):
    return ((ids == pad_id) == False).reshape(ids.shape[0], 1, 1, ids.shape[1])  # noqa: E712


@right("pm-rearrange-ne", C_PM, "einops rearrange(ids.ne(pad), 'b l -> b 1 1 l')")
def pm_r3(ids, pad_id):
    return rearrange(ids.ne(pad_id), "b l -> b 1 1 l")


@right("cm-not-triu1", C_CM, "~ones.triu(1)")
def cm_r1(L):
    return ~torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=1)


@right("cm-tril-float-bool", C_CM, "torch.tril(torch.ones(L, L)).bool()")
def cm_r2(L):
    return torch.tril(torch.ones(L, L)).bool()


@right("mha-fused-qkv", C_MHA, "one F.linear with concatenated w_q/w_k/w_v weights, chunk(3)")
class MHAR1(MB):
    def forward(self, x, mask=None):
        W = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
        b = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        q, k, v = (self.split(t) for t in F.linear(x, W, b).chunk(3, dim=-1))
        h, _ = ec.scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge(h))


@right("mha-per-head-loop", C_MHA, "loop over heads with slicing, torch.cat")
class MHAR2(MB):
    def forward(self, x, mask=None):
        q, k, v = self.w_q(x), self.w_k(x), self.w_v(x)
        outs = []
        for h in range(self.n_heads):
            sl = slice(h * self.d_head, (h + 1) * self.d_head)
            s = q[..., sl] @ k[..., sl].transpose(1, 2) / math.sqrt(self.d_head)
            if mask is not None:  # this head's slice of the mask, broadcast to (B, H, L, L) first
                b, length = x.shape[:2]
                s = s.masked_fill(~mask.expand(b, self.n_heads, length, length)[:, h], float("-inf"))
            outs.append(s.softmax(-1) @ v[..., sl])
        return self.w_o(torch.cat(outs, dim=-1))


@right("mha-noncontiguous-out", C_MHA, "correct output returned non-contiguous")
class MHAR3(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        out = self.w_o(self.merge(h))
        return out.transpose(0, 1).contiguous().transpose(0, 1)


@right("mha-prescale-permute-additive", C_MHA, "pre-scaled q, reshape/permute, additive -1e9 mask, contiguous().view")
class MHAR4(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        q = self.w_q(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3) * self.d_head ** -0.5
        k = self.w_k(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 3, 1)  # (B,H,dh,L)
        v = self.w_v(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3)
        s = q @ k
        if mask is not None:
            s = s + torch.zeros_like(s).masked_fill(~mask, -1e9)
        h = s.softmax(-1) @ v
        return self.w_o(h.permute(0, 2, 1, 3).contiguous().view(B, L, D))


@right("mha-double-internal", C_MHA, "computes in float64, casts back")
class MHAR5(MB):
    def forward(self, x, mask=None):
        xd = x.double()
        lin = lambda m, t: F.linear(t, m.weight.double(), m.bias.double())  # noqa: E731
        q, k, v = self.split(lin(self.w_q, xd)), self.split(lin(self.w_k, xd)), self.split(lin(self.w_v, xd))
        h, _ = _sdpa(q, k, v, mask)
        return lin(self.w_o, self.merge(h)).to(x.dtype)


@right("ln-var_mean-correction0", C_LN, "torch.var_mean(x, -1, correction=0, keepdim=True)")
class LNR1(LB):
    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
        return (x - mean) / (var + self.eps).sqrt() * self.weight + self.bias


@right("ln-subclass-nn", C_LN, "subclass of nn.LayerNorm")
class LNR2(nn.LayerNorm):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps=eps)


@right("ln-std-biased-squared", C_LN, "x.std(unbiased=False)**2 + eps inside sqrt, addcmul")
class LNR3(LB):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std2 = x.std(-1, unbiased=False, keepdim=True) ** 2
        return torch.addcmul(self.bias, (x - mean) / torch.sqrt(std2 + self.eps), self.weight)


@right("ln-double-internal", C_LN, "computes in float64, casts back")
class LNR4(LB):
    def forward(self, x):
        xd = x.double()
        m, v = xd.mean(-1, keepdim=True), ((xd - xd.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True)
        return ((xd - m) / torch.sqrt(v + self.eps) * self.weight.double() + self.bias.double()).to(x.dtype)


@right("ff-sequential-shared", C_FF, "nn.Sequential(self.w1, act, self.w2) sharing the same Linear modules")
class FFR1(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.net = nn.Sequential(self.w1, nn.ReLU() if activation == "relu" else nn.GELU(), self.w2)

    def forward(self, x):
        return self.net(x)


@right("ff-normal-cdf", C_FF, "GELU as h * Normal(0,1).cdf(h)")
class FFR2(FB):
    def forward(self, x):
        h = self.w1(x)
        if self.activation == "relu":
            h = h.clamp(min=0)
        else:
            h = h * torch.distributions.Normal(0.0, 1.0).cdf(h)
        return self.w2(h)


@right("ff-getattr", C_FF, "getattr(F, self.activation) + F.gelu(approximate='none')")
class FFR3(FB):
    def forward(self, x):
        fn = getattr(F, self.activation)
        h = fn(self.w1(x), approximate="none") if self.activation == "gelu" else fn(self.w1(x))
        return self.w2(h)


@right("blk-torch-style-helpers", C_BLK, "_sa_block/_ff_block helpers as nn.TransformerEncoderLayer")
class BlkR1(BB):
    def _sa(self, x, mask):
        return self.dropout1(self.attn(x, mask))

    def _ff(self, x):
        return self.dropout2(self.ffn(x))

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self._sa(self.norm1(x), mask)
            x = x + self._ff(self.norm2(x))
        else:
            x = self.norm1(x + self._sa(x, mask))
            x = self.norm2(x + self._ff(x))
        return x


@right("blk-single-dropout-torch-add", C_BLK, "one F.dropout(training=self.training), torch.add, not-branch")
class BlkR2(BB):
    def forward(self, x, mask=None):
        d = lambda t: F.dropout(t, self.p, self.training)  # noqa: E731
        if not self.norm_first:
            h = self.norm1(torch.add(x, d(self.attn(x, mask=mask))))
            return self.norm2(torch.add(h, d(self.ffn(h))))
        h = torch.add(x, d(self.attn(self.norm1(x), mask=mask)))
        return torch.add(h, d(self.ffn(self.norm2(h))))


@right("blk-own-nn-layernorm-gelu-mha", C_BLK, "own MHA (fused SDPA) + own FFN (nn.functional.gelu) + nn.LayerNorm")
class BlkR3(nn.Module):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False):
        super().__init__()
        self.norm_first = norm_first
        self.attn = MHAR1(d_model, n_heads)
        self.ffn = FFR3(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.drop(self.attn(self.norm1(x), mask))
            return x + self.drop(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.drop(self.attn(x, mask)))
        return self.norm2(x + self.drop(self.ffn(x)))



# =============================================================================================
# Extra probes: robustness of the checkers' own code, and more right variants


@wrong("sdpa-if-mask", C_SDPA, "`if mask:` on a tensor (ambiguous truth value)",
       'if mask is not None')
def sdpa_if_mask(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-inplace-not", C_SDPA, "mask.logical_not_() then masked_fill(mask, -inf): result right, mask changed",
       'changed its input `mask` in place')
def sdpa_mask_inplace(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask.logical_not_(), float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-generator", C_SDPA, "`yield out, w` instead of return",
       '`yield`')
def sdpa_gen(q, k, v, mask=None):
    yield _sdpa(q, k, v, mask)


class _LNInstanceHolder:
    pass


WRONG.append(("ln-instance-passed", C_LN, ec.LayerNorm(16),
              "check_layer_norm(LayerNorm(16)): an instance instead of the class", "Pass the class"))
WRONG.append(("mha-instance-passed", C_MHA, ec.MultiHeadAttention(16, 4),
              "check_multi_head_attention(MultiHeadAttention(16, 4)): an instance", "Pass the class"))


@wrong("mha-bias-false", C_MHA, "w_q..w_o built with bias=False in __init__",
       'w_q.bias')
class MHABiasFalse(nn.Module):
    def __init__(self, d_model, n_heads):
        super().__init__()
        self.n_heads, self.d_head = n_heads, d_model // n_heads
        for n in ("w_q", "w_k", "w_v", "w_o"):
            setattr(self, n, nn.Linear(d_model, d_model, bias=False))

    def forward(self, x, mask=None):
        return x


@wrong("ff-activation-module-str", C_FF, "self.activation is the string 'gelu' and is called: self.activation(h)",
       "'str' object is not callable")
class FFCallStr(FB):
    def forward(self, x):
        return self.w2(self.activation(self.w1(x)))


@wrong("blk-attn-returns-tuple-used", C_BLK, "a, w = self.attn(x, mask) (attn returns one tensor)",
       'gives different numbers')
class BlkUnpack(BB):
    def forward(self, x, mask=None):
        a, _ = self.attn(x, mask)
        return self.norm2(self.norm1(x + a))


@wrong("ln-return-mean-var", C_LN, "returns (y, mean, var)",
       'tuple of 3 values')
class LNTuple(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias, m, v


@wrong("pe-odd-dmodel-crash?", C_PE, "returns a 0-d tensor",
       'returned shape ()')
def pe_scalar(L, d):
    return torch.tensor(0.0)


@right("ln-hf-style-eps-name", C_LN, "HF style: self.variance_epsilon, in-place ops on fresh tensors")
class LNR5(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        h = (x - u) / torch.sqrt(s + self.variance_epsilon)
        return h.mul_(self.weight).add_(self.bias)


@right("ff-inplace-relu-gelu-module", C_FF, "nn.GELU(approximate='none') / F.relu(inplace=True) on the hidden tensor")
class FFR4(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.gelu = nn.GELU(approximate="none")

    def forward(self, x):
        h = self.w1(x)
        h = F.relu(h, inplace=True) if self.activation == "relu" else self.gelu(h)
        return self.w2(h)


@right("sdpa-finfo-half-min", C_SDPA, "masked_fill with torch.finfo(torch.float16).min and F.softmax(dtype=float32)")
def sdpa_r7(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask == 0, torch.finfo(torch.float16).min)
    w = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
    return w @ v, w


@right("pe-parameter", C_PE, "returns nn.Parameter(table, requires_grad=False)")
def pe_r5(L, d):
    return nn.Parameter(_pe(L, d), requires_grad=False)


@right("mha-tensor-sqrt-scale", C_MHA, "scale = torch.tensor(d_head).sqrt(); mask via torch.where")
class MHAR6(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = (q @ k.transpose(-2, -1)) / torch.tensor(float(self.d_head)).sqrt()
        if mask is not None:
            s = torch.where(mask, s, torch.full_like(s, float("-inf")))
        return self.w_o(self.merge(torch.softmax(s, dim=-1) @ v))


test_catalogue_sizes, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests(70, 30)
