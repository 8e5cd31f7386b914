"""The checkers' third catalogue: mistakes and right styles that the first two do not have.

Written as a second adversarial probe: hard-coded example sizes, masks of other layouts, padding
that is not on the right, batch size one, state kept between calls, randomness where there should be
none, dropout in the wrong place, float64 inputs; and right answers built from baddbmm, vmap,
group_norm, conv1d, complex exponentials, frozen parameters and caches. Each wrong one must be
rejected with the phrase that names its mistake (or, where no specific hint exists, with the
general one); each right one must pass.
"""

from __future__ import annotations

import functools
import math

import torch
import torch.nn.functional as F
from torch import nn

from encoder_course import checks
from catalogue import BlockSkeleton as BB
from catalogue import Catalogue
from catalogue import FeedForwardSkeleton as FB
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


def _pe(L, d, d_for_freq=None):
    dd = d if d_for_freq is None else d_for_freq
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / dd)
    pe = torch.zeros(L, d)
    pe[:, 0::2] = torch.sin(pos / freq)
    pe[:, 1::2] = torch.cos(pos / freq)
    return pe


# =============================================================================================
# Positions: wrong


@wrong("pe-linspace-exponent", C_PE, "exponents from torch.linspace(0, 1, d_model // 2): 2i/(d_model-2)",
       'wrong frequency')
def pe_linspace(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    freq = 10000 ** torch.linspace(0, 1, d // 2)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


_BIG = _pe(64, 512)


@wrong("pe-fixed-512-table", C_PE, "a table precomputed once for d_model=512, sliced [:seq_len, :d_model]",
       'wrong frequency')
def pe_fixed_table(L, d):
    return _BIG[:L, :d].clone()


@wrong("pe-normalised-positions", C_PE, "positions torch.arange(seq_len) / seq_len (normalised to [0, 1))",
       'wrong frequency')
def pe_norm_pos(L, d):
    pos = (torch.arange(L, dtype=torch.float32) / L)[:, None]
    freq = 10000 ** (torch.arange(0, d, 2, dtype=torch.float32) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


# =============================================================================================
# Attention: wrong


@wrong("sdpa-dk-shape2", C_SDPA, "d_k = q.shape[2] (right for 3-D, is L_q for 4-D)",
       'q.shape[2] is d_k only for 3-D inputs')
def sdpa_dk2(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[2])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-int-sqrt", C_SDPA, "scale = math.isqrt(d_k) (integer square root: 2 for d_k=8)",
       'with c = 2, but c should be sqrt(d_k)')
def sdpa_isqrt(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.isqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-bool-index-fill", C_SDPA, "scores[~mask] = -inf (boolean indexing does not broadcast)",
       'scores[~mask] does not')
def sdpa_index(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s[~mask] = float("-inf")
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-bmm", C_SDPA, "torch.bmm (3-D only) instead of @ / matmul",
       'torch.bmm works only on 3-D tensors')
def sdpa_bmm(q, k, v, mask=None):
    s = torch.bmm(q, k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return torch.bmm(w, v), w


@wrong("sdpa-seeded-dropout", C_SDPA, "torch.manual_seed(0); F.dropout(w, 0.1): dropout that repeats itself",
       'Something random is inside')
def sdpa_seeded_dropout(q, k, v, mask=None):
    _, w = _sdpa(q, k, v, mask)
    torch.manual_seed(0)
    w = F.dropout(w, 0.1)
    return w @ v, w


@wrong("sdpa-casts-float32", C_SDPA, "q, k, v = q.float(), ...: float64 inputs come back float32 (never tested)",
       'dtype torch.float32 on float64 inputs')
def sdpa_float(q, k, v, mask=None):
    return _sdpa(q.float(), k.float(), v.float(), mask)


@wrong("sdpa-scale-Lq", C_SDPA, "divides by sqrt(q.size(-2)) = sqrt(L_q)",
       'number of queries')
def sdpa_lq(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.size(-2))
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


# =============================================================================================
# Masks: wrong


@wrong("pm-lengths", C_PM, "mask from lengths: arange(L) < (ids != pad).sum(1) (assumes right padding only)",
       'padded on the left and in the middle')
def pm_lengths(ids, pad_id):
    lengths = (ids != pad_id).sum(dim=1)
    return (torch.arange(ids.shape[1])[None, :] < lengths[:, None])[:, None, None, :]


@wrong("pm-last-token-pad", C_PM, "ids != ids[:, -1:] (takes the last token as the pad id)",
       'the right mask is')
def pm_last(ids, pad_id):
    return (ids != ids[:, -1:])[:, None, None, :]


@wrong("pm-first-pad-argmax", C_PM, "positions before (ids == pad).argmax(1) (no padding -> all False)",
       'the right mask is')
def pm_argmax(ids, pad_id):
    first = (ids == pad_id).int().argmax(dim=1)
    return (torch.arange(ids.shape[1])[None, :] < first[:, None])[:, None, None, :]


@wrong("cm-triu-minus1", C_CM, "torch.triu(ones, diagonal=-1)",
       'the right mask is')
def cm_triu_m1(L):
    return torch.triu(torch.ones(L, L, dtype=torch.bool), diagonal=-1)


_CM5 = torch.ones(5, 5, dtype=torch.bool).tril()


@wrong("cm-hardcoded-5", C_CM, "a 5x5 table sliced [:L, :L] (from the notebook's example length)",
       'returned shape (5, 5) for L=8')
def cm_fixed(L):
    return _CM5[:L, :L]


# =============================================================================================
# Multi-head attention: wrong (the notebook's __init__)


@wrong("mha-scale-d_head", C_MHA, "scores / self.d_head (forgot the sqrt); d_head = sqrt(d_model) at 16/4",
       'divided by d_head')
class MHAScaleDh(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / self.d_head
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-weight-no-T", C_MHA, "q = x @ self.w_q.weight + self.w_q.bias (W instead of W^T; square, no error)",
       'untransposed')
class MHANoT(MB):
    def forward(self, x, mask=None):
        lin = lambda m, t: t @ m.weight + m.bias  # noqa: E731
        q, k, v = self.split(lin(self.w_q, x)), self.split(lin(self.w_k, x)), self.split(lin(self.w_v, x))
        h, _ = _sdpa(q, k, v, mask)
        return lin(self.w_o, self.merge(h))


@wrong("mha-hardcoded-B-L", C_MHA, "view(2, 6, H, d_head) / reshape(2, 6, d_model): sizes from the example",
       'Take B and L from x.shape')
class MHAFixed(MB):
    def forward(self, x, mask=None):
        sp = lambda t: t.view(2, 6, self.n_heads, self.d_head).transpose(1, 2)  # noqa: E731
        q, k, v = sp(self.w_q(x)), sp(self.w_k(x)), sp(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.transpose(1, 2).reshape(2, 6, self.d_model))


@wrong("mha-mask-squeeze", C_MHA, "key_ok = mask.squeeze() -> (B, L); fails for B = 1 (never tested)",
       '(L, L): pass it on')
class MHASqueeze(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            key_ok = mask.squeeze()  # (B, L)
            s = s.masked_fill(~key_ok[:, None, None, :], float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-mask-view-B11L", C_MHA, "mask.view(B, 1, 1, L): only a padding mask works, not (L, L) causal",
       '(L, L): pass it on')
class MHAMaskView(MB):
    def forward(self, x, mask=None):
        B, L, _ = x.shape
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask.view(B, 1, 1, L), float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-remember-mask", C_MHA, "keeps the last mask in self.mask and reuses it when called without one",
       'a batch of one')
class MHARemember(MB):
    def forward(self, x, mask=None):
        if mask is not None:
            self.mask = mask
        mask = getattr(self, "mask", None)
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-kv-cache", C_MHA, "caches k and v from the first call (a decoder's KV cache) and reuses them",
       'keeps something from one call to the next')
class MHACache(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        if not hasattr(self, "k_cache"):
            self.k_cache, self.v_cache = k, v
        h, _ = _sdpa(q, self.k_cache, self.v_cache, mask)
        return self.w_o(self.merge(h))


@wrong("mha-is-causal", C_MHA, "F.scaled_dot_product_attention(..., is_causal=True) when no mask is given",
       'causal mask')
class MHACausal(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        if mask is None:
            h = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.w_o(self.merge(h))


@wrong("mha-bh-mask-repeat", C_MHA, "(B*H, L, d) layout with the mask repeated H-major (repeat, not repeat_interleave)",
       'padding mask (2, 1, 1, 6)')
class MHARepeat(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        H, dh = self.n_heads, self.d_head
        f = lambda t: t.view(B, L, H, dh).transpose(1, 2).reshape(B * H, L, dh)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        s = torch.bmm(q, k.transpose(1, 2)) / math.sqrt(dh)
        if mask is not None:
            m = mask.reshape(B, 1, L).repeat(H, 1, 1)  # (H*B, 1, L): wrong order
            s = s.masked_fill(~m, float("-inf"))
        h = torch.bmm(s.softmax(-1), v).view(B, H, L, dh)
        return self.w_o(h.transpose(1, 2).reshape(B, L, D))


@wrong("mha-seeded-dropout", C_MHA, "torch.manual_seed(0) then F.dropout(w, 0.1): same numbers every call, even in eval",
       "torch's random state changes")
class MHASeeded(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        _, w = _sdpa(q, k, v, mask)
        torch.manual_seed(0)
        return self.w_o(self.merge(F.dropout(w, 0.1) @ v))


@wrong("mha-dropout-module-0.1", C_MHA, "self.drop = nn.Dropout(0.1) on the weights (paper's value; contract default 0)",
       'built without dropout')
class MHADropMod(MB):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        _, w = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(self.drop(w) @ v))


@wrong("mha-heads-first-HB", C_MHA, "split with permute(2, 0, 1, 3): (H, B, L, d_head) (right without a mask)",
       'padding mask (2, 1, 1, 6)')
class MHAHB(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        f = lambda t: t.view(B, L, self.n_heads, self.d_head).permute(2, 0, 1, 3)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.permute(1, 2, 0, 3).reshape(B, L, D))


@wrong("mha-L-B-swapped", C_MHA, "L, B, D = x.shape (unpacked in the wrong order)",
       'wrong order')
class MHALB(MB):
    def forward(self, x, mask=None):
        L, B, D = x.shape
        f = lambda t: t.view(B, L, self.n_heads, self.d_head).transpose(1, 2)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.transpose(1, 2).reshape(B, L, D))


# =============================================================================================
# LayerNorm: wrong (the notebook's __init__)


class LB(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta

    def norm(self, x, mean, var, eps=None):
        return self.weight * (x - mean) / torch.sqrt(var + (self.eps if eps is None else eps)) + self.bias


@wrong("ln-running-stats", C_LN, "keeps statistics across calls (BatchNorm habit): eval() reuses the stored ones",
       'kept from one call to the next')
class LNRunning(LB):
    def forward(self, x):
        if self.training or not hasattr(self, "run_mean"):
            mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
            self.run_mean, self.run_var = mean.mean(), var.mean()
            return self.norm(x, mean, var)
        return self.norm(x, self.run_mean, self.run_var)


@wrong("ln-cached-stats", C_LN, "computes mean/var on the first call only (if not hasattr(self, 'mean'))",
       'raised RuntimeError')
class LNCached(LB):
    def forward(self, x):
        if not hasattr(self, "mean"):
            self.mean, self.var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.norm(x, self.mean, self.var)


@wrong("ln-dim2-hardcoded", C_LN, "mean(dim=2) / var(dim=2): right for (B, L, d), IndexError for 2-D",
       'dim=-1')
class LNDim2(LB):
    def forward(self, x):
        return self.norm(x, x.mean(2, keepdim=True), x.var(2, keepdim=True, unbiased=False))


@wrong("ln-eps-2d-branch", C_LN, "eps=self.eps for 3-D input, a fixed 1e-5 in the 2-D branch",
       'ignores the eps')
class LNEpsBranch(LB):
    def forward(self, x):
        eps = self.eps if x.dim() == 3 else 1e-5
        return self.norm(x, x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False), eps)


@wrong("ln-F-normalize", C_LN, "F.normalize(x - mean, dim=-1) * sqrt(d): eps lost (clamps the norm instead)",
       'eps is missing')
class LNNormalize(LB):
    def forward(self, x):
        c = x - x.mean(-1, keepdim=True)
        return F.normalize(c, dim=-1) * math.sqrt(x.shape[-1]) * self.weight + self.bias



# =============================================================================================
# FeedForward: wrong (the notebook's __init__)


@wrong("ff-matmul-no-T", C_FF, "x @ self.w1.weight + self.w1.bias (nn.Linear's weight is (out, in))",
       '(out_features, in_features)')
class FFNoT(FB):
    def forward(self, x):
        h = self.act(x @ self.w1.weight + self.w1.bias)
        return h @ self.w2.weight + self.w2.bias


@wrong("ff-hardcoded-shape", C_FF, "x.view(10, -1) ... .view(2, 5, -1): sizes of the example input",
       "shape '[10, -1]' is invalid")
class FFFixed(FB):
    def forward(self, x):
        return self.w2(self.act(self.w1(x.view(10, -1)))).view(2, 5, -1)


@wrong("ff-dropout-module-0.1", C_FF, "adds self.drop = nn.Dropout(0.1) after the activation (contract default 0)",
       'built without dropout')
class FFDropMod(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.w2(self.drop(self.act(self.w1(x))))


# =============================================================================================
# EncoderBlock: wrong (the notebook's __init__)


@wrong("blk-mask-post-only", C_BLK, "passes the mask in the post-LN branch only (pre-LN: self.attn(self.norm1(x)))",
       'mask is not passed to the attention')
class BlkMaskOne(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x)))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-dropout-sublayer-input", C_BLK, "dropout on each sublayer's input: attn(dropout1(x)), ffn(dropout2(x))",
       "never drops the attention sublayer's output")
class BlkDropIn(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.attn(self.dropout1(self.norm1(x)), mask)
            return x + self.ffn(self.dropout2(self.norm2(x)))
        x = self.norm1(x + self.attn(self.dropout1(x), mask))
        return self.norm2(x + self.ffn(self.dropout2(x)))


@wrong("blk-no-dropout1", C_BLK, "no dropout on the attention sublayer's output (only dropout2 after the FFN)",
       "never drops the attention sublayer's output")
class BlkNoDrop1(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.attn(self.norm1(x), mask)
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.attn(x, mask))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-hardcoded-p", C_BLK, "F.dropout(t, 0.1, self.training): the rate hard-coded, ignores dropout=",
       'built with dropout=0.0')
class BlkP(BB):
    def forward(self, x, mask=None):
        d = lambda t: F.dropout(t, 0.1, self.training)  # noqa: E731
        if self.norm_first:
            x = x + d(self.attn(self.norm1(x), mask))
            return x + d(self.ffn(self.norm2(x)))
        x = self.norm1(x + d(self.attn(x, mask)))
        return self.norm2(x + d(self.ffn(x)))


@wrong("blk-post-norm-x-only", C_BLK, "post-LN written x = norm1(x) + attn(x): the norm applied to x, not to the sum",
       'gives different numbers')
class BlkNormX(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x) + self.dropout1(self.attn(x, mask))
        return self.norm2(x) + self.dropout2(self.ffn(x))


@wrong("blk-res-from-input", C_BLK, "post-LN second residual adds the block's input: norm2(x_in + ffn(h))",
       'gives different numbers')
class BlkResIn(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(h)))
        h = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(h)))


@wrong("blk-remember-mask", C_BLK, "self.mask = mask and reuses the previous mask when called without one",
       'a batch of one')
class BlkRemember(BB):
    def forward(self, x, mask=None):
        if mask is not None:
            self.mask = mask
        mask = getattr(self, "mask", None)
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-hardcoded-default-mask", C_BLK, "if mask is None: mask = torch.ones(2, 1, 1, 5) (example sizes)",
       'a batch of one')
class BlkDefaultMask(BB):
    def forward(self, x, mask=None):
        if mask is None:
            mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-returns-weights", C_BLK, "returns the attention weights of self.attn(..., return_weights=True) with x",
       'tuple of 2 values')
class BlkRetW(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            a, w = self.attn(self.norm1(x), mask, return_weights=True)
            x = x + self.dropout1(a)
            return x + self.dropout2(self.ffn(self.norm2(x))), w
        a, w = self.attn(x, mask, return_weights=True)
        x = self.norm1(x + self.dropout1(a))
        return self.norm2(x + self.dropout2(self.ffn(x))), w


# =============================================================================================
# RIGHT variants


@right("pe-polar", C_PE, "complex exponentials: torch.polar, view_as_real, (imag, real) interleaved")
def pe_polar(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = pos * torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    z = torch.polar(torch.ones_like(ang), ang)  # cos + i sin
    return torch.stack([z.imag, z.real], dim=-1).reshape(L, d)


@right("pe-lru-cache", C_PE, "functools.lru_cache: the same tensor object returned for repeated sizes")
@functools.lru_cache(maxsize=None)
def pe_cached(L, d):
    return _pe(L, d)


_TABLES: dict = {}


@right("pe-max-len-table-view", C_PE, "a 5000-row table per d_model kept in a dict; returns a view [:seq_len]")
def pe_maxlen(L, d):
    if d not in _TABLES:
        _TABLES[d] = _pe(5000, d)
    return _TABLES[d][:L]


@right("pe-rotation-cumprod", C_PE, "positions by repeated rotation: cumprod of complex64 steps e^{i w}")
def pe_cumprod(L, d):
    w = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    step = torch.polar(torch.ones_like(w), w).to(torch.complex64)
    z = torch.cat([torch.ones(1, d // 2, dtype=torch.complex64), step.expand(L - 1, -1)]).cumprod(0)
    pe = torch.empty(L, d)
    pe[:, 0::2], pe[:, 1::2] = z.imag, z.real
    return pe


def _flat(q, k, v, mask):
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    Lq, Lk = q.shape[-2], k.shape[-2]
    qf = q.expand(*batch, *q.shape[-2:]).reshape(-1, Lq, q.shape[-1])
    kf = k.expand(*batch, *k.shape[-2:]).reshape(-1, Lk, k.shape[-1])
    vf = v.expand(*batch, *v.shape[-2:]).reshape(-1, Lk, v.shape[-1])
    if mask is None:
        mf = torch.ones(qf.shape[0], Lq, Lk, dtype=torch.bool)
    else:
        mf = mask.expand(*batch, Lq, Lk).reshape(-1, Lq, Lk)
    return batch, qf, kf, vf, mf


@right("sdpa-baddbmm", C_SDPA, "leading dims flattened; torch.baddbmm(additive -inf mask, q, k^T, alpha=1/sqrt(d))")
def sdpa_baddbmm(q, k, v, mask=None):
    batch, qf, kf, vf, mf = _flat(q, k, v, mask)
    bias = torch.zeros(mf.shape, dtype=q.dtype).masked_fill(~mf, float("-inf"))
    s = torch.baddbmm(bias, qf, kf.transpose(1, 2), alpha=1.0 / math.sqrt(q.shape[-1]))
    w = s.softmax(-1)
    out = torch.bmm(w, vf)
    return out.reshape(*batch, *out.shape[-2:]), w.reshape(*batch, *w.shape[-2:])


@right("sdpa-vmap", C_SDPA, "torch.vmap of a 2-D attention over the flattened leading dims")
def sdpa_vmap(q, k, v, mask=None):
    batch, qf, kf, vf, mf = _flat(q, k, v, mask)

    def one(q2, k2, v2, m2):
        s = (q2 @ k2.T) / math.sqrt(q2.shape[-1])
        w = torch.softmax(torch.where(m2, s, float("-inf")), dim=-1)
        return w @ v2, w

    out, w = torch.vmap(one)(qf, kf, vf, mf)
    return out.reshape(*batch, *out.shape[-2:]), w.reshape(*batch, *w.shape[-2:])


@right("sdpa-log-mask", C_SDPA, "additive mask scores + torch.log(mask.float()) (log 0 = -inf)")
def sdpa_logmask(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + torch.log(mask.to(s.dtype))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-renormalise", C_SDPA,
       "softmax, multiply by the mask, renormalise: equal on paper, 0/0 = NaN once the kept weights underflow",
       "returned NaN values")
def sdpa_renorm(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w = s.softmax(-1)
    if mask is not None:
        w = w * mask
        w = w / w.sum(-1, keepdim=True)
    return w @ v, w


@right("sdpa-scale-k", C_SDPA, "scale folded into k: q @ (k / sqrt(d)).mT, F.softmax with dtype")
def sdpa_scale_k(q, k, v, mask=None):
    s = q @ (k * q.shape[-1] ** -0.5).mT
    if mask is not None:
        s = s.masked_fill(mask.logical_not(), -math.inf)
    w = F.softmax(s, dim=-1, dtype=q.dtype)
    return torch.matmul(w, v), w


@right("pm-isin", C_PM, "~torch.isin(ids, torch.tensor([pad_id])), then [:, None, None]")
def pm_isin(ids, pad_id):
    return (~torch.isin(ids, torch.tensor([pad_id])))[:, None, None]


@right("cm-tril-indices", C_CM, "zeros then fill torch.tril_indices(L, L) with True")
def cm_tril_idx(L):
    m = torch.zeros(L, L, dtype=torch.bool)
    r, c = torch.tril_indices(L, L)
    m[r, c] = True
    return m


@right("cm-lru-cache", C_CM, "lru_cache: one shared tensor per L")
@functools.lru_cache(maxsize=None)
def cm_cached(L):
    return torch.ones(L, L).triu(1) == 0


@right("mha-F-mha-forward", C_MHA, "F.multi_head_attention_forward with the w_q..w_o weights, inverted (B*H,L,L) mask")
class MHAFmha(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        W = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
        b = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        attn_mask = None
        if mask is not None:
            attn_mask = ~mask.expand(B, self.n_heads, L, L).reshape(B * self.n_heads, L, L)
        xt = x.transpose(0, 1)  # (L, B, D)
        out, _ = F.multi_head_attention_forward(
            xt, xt, xt, D, self.n_heads, W, b, None, None, False, 0.0,
            self.w_o.weight, self.w_o.bias, training=False, need_weights=False, attn_mask=attn_mask)
        return out.transpose(0, 1)


@right("mha-per-head-weights-einsum", C_MHA, "weights viewed per head (H, d_head, D); einsum in and out, no split")
class MHAPerHead(MB):
    def forward(self, x, mask=None):
        H, dh, D = self.n_heads, self.d_head, self.d_model
        proj = lambda m: (torch.einsum("bld,hed->bhle", x, m.weight.view(H, dh, D))  # noqa: E731
                          + m.bias.view(1, H, 1, dh))
        q, k, v = proj(self.w_q), proj(self.w_k), proj(self.w_v)
        s = torch.einsum("bhqe,bhke->bhqk", q, k) / math.sqrt(dh)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        h = torch.einsum("bhqk,bhke->bhqe", s.softmax(-1), v)
        return torch.einsum("bhle,dhe->bld", h, self.w_o.weight.view(D, H, dh)) + self.w_o.bias


@right("mha-bmm-repeat-interleave", C_MHA, "(B*H, L, d) layout, baddbmm, mask repeat_interleave(H)")
class MHABmm(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        H, dh = self.n_heads, self.d_head
        f = lambda t: t.view(B, L, H, dh).transpose(1, 2).reshape(B * H, L, dh)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        bias = torch.zeros(B * H, L, L)
        if mask is not None:
            m = mask.expand(B, H, L, L).reshape(B * H, L, L)  # any mask broadcastable to (B, H, L, L)
            bias = bias.masked_fill(~m, float("-inf"))
        s = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=dh ** -0.5)
        h = torch.bmm(s.softmax(-1), v).view(B, H, L, dh)
        return self.w_o(h.transpose(1, 2).reshape(B, L, D))


@right("mha-vmap-heads", C_MHA, "torch.vmap over the head axis of a single-head attention")
class MHAVmap(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        q, k, v = self.qkv(x)
        m = torch.ones(B, self.n_heads, L, L, dtype=torch.bool) if mask is None else \
            mask.expand(B, self.n_heads, L, L)
        head = lambda q1, k1, v1, m1: _sdpa(q1, k1, v1, m1)[0]  # noqa: E731
        h = torch.vmap(head, in_dims=1, out_dims=1)(q, k, v, m)
        return self.w_o(self.merge(h))


@right("ln-group-norm", C_LN, "F.group_norm(x.reshape(-1, 1, d), 1) then weight/bias")
class LNGroup(LB):
    def forward(self, x):
        d = x.shape[-1]
        y = F.group_norm(x.reshape(-1, 1, d), 1, eps=self.eps).reshape(x.shape)
        return y * self.weight + self.bias


@right("ln-instance-norm", C_LN, "F.instance_norm(x.reshape(1, -1, d)): each token a channel")
class LNInst(LB):
    def forward(self, x):
        d = x.shape[-1]
        y = F.instance_norm(x.reshape(1, -1, d), eps=self.eps).reshape(x.shape)
        return torch.addcmul(self.bias, y, self.weight)


@right("ln-batch-norm-transposed", C_LN, "F.batch_norm on x.reshape(-1, d).T (tokens as channels), training=True")
class LNBatchT(LB):
    def forward(self, x):
        d = x.shape[-1]
        y = F.batch_norm(x.reshape(-1, d).T, None, None, training=True, eps=self.eps).T.reshape(x.shape)
        return y * self.weight + self.bias


@right("ff-conv1d", C_FF, "1x1 convolutions: F.conv1d with w1/w2 weights unsqueezed")
class FFConv(FB):
    def forward(self, x):
        h = F.conv1d(x.transpose(1, 2), self.w1.weight.unsqueeze(-1), self.w1.bias)
        h = self.act(h)
        return F.conv1d(h, self.w2.weight.unsqueeze(-1), self.w2.bias).transpose(1, 2)


@right("ff-ndtr", C_FF, "GELU as h * torch.special.ndtr(h); ReLU as torch.maximum(h, 0)")
class FFNdtr(FB):
    def forward(self, x):
        h = self.w1(x)
        h = torch.maximum(h, torch.zeros(())) if self.activation == "relu" else h * torch.special.ndtr(h)
        return self.w2(h)


@right("ff-erfc-addmm", C_FF, "GELU as 0.5*h*erfc(-h/sqrt2); torch.addmm on the flattened tokens")
class FFErfc(FB):
    def forward(self, x):
        B, L, D = x.shape
        h = torch.addmm(self.w1.bias, x.reshape(B * L, D), self.w1.weight.T)
        h = F.relu(h) if self.activation == "relu" else 0.5 * h * torch.erfc(-h / math.sqrt(2))
        return torch.addmm(self.w2.bias, h, self.w2.weight.T).reshape(B, L, D)


@right("blk-sublayer-connection", C_BLK, "Annotated-Transformer SublayerConnection helper for both layouts")
class BlkSub(BB):
    def _sublayer(self, x, fn, norm, drop):
        if self.norm_first:
            return x + drop(fn(norm(x)))
        return norm(x + drop(fn(x)))

    def forward(self, x, mask=None):
        x = self._sublayer(x, lambda t: self.attn(t, mask), self.norm1, self.dropout1)
        return self._sublayer(x, self.ffn, self.norm2, self.dropout2)


@right("blk-return-weights-discarded", C_BLK, "self.attn(..., return_weights=True) and the weights dropped")
class BlkRW(BB):
    def forward(self, x, mask=None):
        h = self.norm1(x) if self.norm_first else x
        a, _weights = self.attn(h, mask, return_weights=True)
        x = x + self.dropout1(a)
        if not self.norm_first:
            x = self.norm1(x)
        h = self.norm2(x) if self.norm_first else x
        x = x + self.dropout2(self.ffn(h))
        return x if self.norm_first else self.norm2(x)


# --- right answers that carry a constant as a frozen parameter (a learner habit)


@right("mha-scale-frozen-param", C_MHA, "self.scale = nn.Parameter(tensor([d_head ** -0.5]), requires_grad=False)")
class MHAScaleParam(MB):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.scale = nn.Parameter(torch.tensor([self.d_head ** -0.5]), requires_grad=False)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@right("ln-eps-0d-frozen-param", C_LN, "self.eps_t = nn.Parameter(torch.tensor(eps), requires_grad=False) (0-dim)")
class LNEpsParam(LB):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        self.eps_t = nn.Parameter(torch.tensor(eps), requires_grad=False)

    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps_t) + self.bias


# =============================================================================================
# Second batch of probes


@wrong("pm-position-vs-pad", C_PM, "compares the positions with pad_id: torch.arange(L) != pad_id",
       'the right mask is')
def pm_pos(ids, pad_id):
    return (torch.arange(ids.shape[1]) != pad_id).expand(ids.shape)[:, None, None, :]


@wrong("ff-dropout-after-w2-eval", C_FF, "F.dropout(self.w2(h), 0.1): after w2 and active in eval",
       'kept from one call to the next')
class FFDropOut(FB):
    def forward(self, x):
        return F.dropout(self.w2(self.act(self.w1(x))), 0.1)


@wrong("mha-sorted-batch-trim", C_MHA, "keys trimmed to the first sequence's length (RNN habit: batch sorted longest first)",
       'padding in the first and last sequences')
class MHATrim(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        if mask is not None:
            n = int(mask[0].sum())  # length of the first (assumed longest) sequence
            k, v, mask = k[..., :n, :], v[..., :n, :], mask[..., :n]
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-hardcoded-4-heads", C_MHA, "view(B, L, 4, -1) and sqrt(d_model / 4): n_heads of the example",
       'gives different numbers')
class MHA4(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        f = lambda t: t.view(B, L, 4, -1).transpose(1, 2)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(D / 4)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o((s.softmax(-1) @ v).transpose(1, 2).reshape(B, L, D))


@wrong("blk-rezero-scalar-alpha", C_BLK, "ReZero: x + self.alpha * attn(x) with a 0-dim nn.Parameter alpha",
       'gives different numbers')
class BlkReZero(BB):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.alpha = nn.Parameter(torch.zeros(()))

    def forward(self, x, mask=None):
        x = x + self.alpha * self.dropout1(self.attn(x, mask))
        return x + self.alpha * self.dropout2(self.ffn(x))


@right("mha-scale-buffer", C_MHA, "self.register_buffer('scale', tensor(d_head ** -0.5)) (a buffer, not a parameter)")
class MHAScaleBuf(MB):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.register_buffer("scale", torch.tensor(self.d_head ** -0.5))

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = (q @ k.transpose(-2, -1)) * self.scale
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


test_catalogue_sizes, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests(45, 25)
