"""The checkers' fourth catalogue: mistakes and right styles that the first three lack.

Written as a third adversarial probe, starting from the learner notebooks' skeletons: two mistakes
at once, mistakes that show only for n_heads=1 or a d_model that is not a multiple of 8, combined
mask/scale slips, weights returned before masking, wrong tensors in residuals, a sublayer used
twice, gradients cut inside forward (which a checker run under no_grad cannot see), and right
answers built from phase shifts, identity values, centering matrices, unflatten/flatten, rms_norm,
ModuleDict and match statements. Each wrong one must be rejected with the phrase that names its
mistake (or, where no specific hint exists, with the general one); each right one must pass.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
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


def _freq(d, dd=None, base=10000.0):
    return base ** (torch.arange(0, d, 2, dtype=torch.float32) / (d if dd is None else dd))


def _fill(L, d, freq, pos=None, halves=False):
    pos = torch.arange(L, dtype=torch.float32)[:, None] if pos is None else pos
    pe = torch.zeros(L, d)
    if halves:
        pe[:, : d // 2], pe[:, d // 2:] = torch.sin(pos / freq), torch.cos(pos / freq)
    else:
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
    return pe


# =============================================================================================
# Positions: wrong (skeleton: def sinusoidal_positions(seq_len, d_model))


@wrong("pe-half-columns", C_PE, "only the d_model // 2 sine columns: torch.sin(pos / freq), no cos",
       "should be (seq_len, d_model)")
def pe_half(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    return torch.sin(pos / _freq(d))


@wrong("pe-denominator-d-half", C_PE, "exponent 2i / (d_model // 2) (pairs counted, then 2i anyway)",
       "exponent is wrong")
def pe_dhalf(L, d):
    return _fill(L, d, _freq(d, d // 2))


@wrong("pe-exp-missing-minus", C_PE, "inv = torch.exp(arange(0, d, 2) * math.log(10000) / d): the minus sign lost",
       'PE[pos, 2i] = sin')
def pe_exp_sign(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    inv = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * math.log(10000.0) / d)
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * inv), torch.cos(pos * inv)
    return pe


@wrong("pe-stack-dim1", C_PE, "torch.stack([sin, cos], dim=1).flatten(1): halves, not interleaved",
       "interleaved")
def pe_stack1(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = pos / _freq(d)
    return torch.stack([torch.sin(ang), torch.cos(ang)], dim=1).flatten(1)


@wrong("pe-freq-repeat-not-interleave", C_PE, "angles pos / freq.repeat(2) (tiled), sin on even cols, cos on odd",
       'Your sinusoidal_positions')
def pe_repeat(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = pos / _freq(d).repeat(2)  # (L, d): [f0, f1, ..., f0, f1, ...] instead of [f0, f0, f1, f1, ...]
    pe = torch.zeros(L, d)
    pe[:, 0::2], pe[:, 1::2] = torch.sin(ang[:, 0::2]), torch.cos(ang[:, 1::2])
    return pe


@wrong("pe-exponent-seq_len", C_PE, "exponent 2i / seq_len (the wrong size in the denominator)",
       "wrong frequency")
def pe_seq(L, d):
    return _fill(L, d, 10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / L))


@wrong("pe-halves-and-base-1000", C_PE, "two mistakes at once: halves AND base 1000",
       'Your sinusoidal_positions')
def pe_two(L, d):
    return _fill(L, d, _freq(d, base=1000.0), halves=True)


@wrong("pe-float16", C_PE, "table built in half precision (torch.zeros(..., dtype=torch.float16))",
       "float32")
def pe_half_prec(L, d):
    return _fill(L, d, _freq(d)).half()


# =============================================================================================
# Attention: wrong (skeleton: def scaled_dot_product_attention(q, k, v, mask=None))


@wrong("sdpa-unscaled-and-inverted", C_SDPA, "two mistakes: no 1/sqrt(d_k) AND masked_fill(mask, -inf)",
       "not scaled")
def sdpa_two(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1)
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-inverted-fill-zero", C_SDPA, "two mask mistakes: masked_fill(mask, 0.0) (inverted AND 0 instead of -inf)",
       "mask")
def sdpa_inv_zero(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(mask, 0.0)
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-weights-before-mask", C_SDPA, "returns softmax of the unmasked scores as weights; out from the masked ones",
       'from before the mask was applied')
def sdpa_w_before(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    w_unmasked = s.softmax(-1)
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    return s.softmax(-1) @ v, w_unmasked


@wrong("sdpa-fill-scores-min", C_SDPA, "masked_fill(~mask, scores.min()): masked keys keep a little weight",
       "mask")
def sdpa_fill_min(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float(s.min()))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-mask-view-scores", C_SDPA, "mask.view(scores.shape): assumes the mask already has the scores' shape",
       "without transposing or reshaping")
def sdpa_view(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask.view(s.shape), float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-one-minus-mask", C_SDPA, "masked_fill(1 - mask, -inf): `-` on a bool tensor raises",
       "~")
def sdpa_1m(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(1 - mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-softmax-float32", C_SDPA, "F.softmax(s, -1, dtype=torch.float32): float64 inputs then fail at w @ v",
       "dtype")
def sdpa_f32(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = F.softmax(s, dim=-1, dtype=torch.float32)
    return w @ v, w


@wrong("sdpa-out-from-scores", C_SDPA, "out = scores @ v (the masked scores, not the weights)",
       "out = weights @ v")
def sdpa_out_scores(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, -1e9)
    w = s.softmax(-1)
    return s @ v, w


@wrong("sdpa-squeeze", C_SDPA, "returns out.squeeze(), w.squeeze() (drops the size-1 batch of the causal case)",
       "shape")
def sdpa_squeeze(q, k, v, mask=None):
    out, w = _sdpa(q, k, v, mask)
    return out.squeeze(), w.squeeze()


@wrong("sdpa-additive-not-inverted", C_SDPA, "scores + mask.float() * -1e9 (penalises the keys that may be attended)",
       "inverted")
def sdpa_add_inv(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s + mask.float() * -1e9
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-dk-from-k-shape1", C_SDPA, "d_k = k.shape[1] (L_k for 3-D inputs, the heads for 4-D)",
       "sqrt(d_k)")
def sdpa_k1(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(k.shape[1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1)
    return w @ v, w


@wrong("sdpa-weights-detached", C_SDPA, "out = w.detach() @ v: no gradient reaches q and k (under no_grad invisible)",
       "gradient")
def sdpa_detach(q, k, v, mask=None):
    s = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if mask is not None:
        s = s.masked_fill(~mask, float("-inf"))
    w = s.softmax(-1).detach()
    return w @ v, w


# =============================================================================================
# Masks: wrong


@wrong("pm-transposed-ids", C_PM, "(ids != pad).T[:, None, None, :]: sequences and positions swapped",
       "shape")
def pm_T(ids, pad_id):
    return (ids != pad_id).T[:, None, None, :]


@wrong("pm-unsqueeze-front", C_PM, "(ids != pad).unsqueeze(0).unsqueeze(0): (1, 1, B, L)",
       "(B, 1, 1, L)")
def pm_front(ids, pad_id):
    return (ids != pad_id).unsqueeze(0).unsqueeze(0)


@wrong("pm-byte", C_PM, "(ids != pad).byte() (the old uint8 mask habit)",
       "bool")
def pm_byte(ids, pad_id):
    return (ids != pad_id).byte()[:, None, None, :]


@wrong("pm-8-heads", C_PM, "expanded to (B, 8, 1, L) for the 8 heads of notebook 04",
       "(B, 1, 1, L)")
def pm_heads(ids, pad_id):
    B, L = ids.shape
    return (ids != pad_id)[:, None, None, :].expand(B, 8, 1, L)


@wrong("cm-uint8", C_CM, "torch.ones(L, L, dtype=torch.uint8).tril()",
       "bool")
def cm_u8(L):
    return torch.ones(L, L, dtype=torch.uint8).tril()


@wrong("cm-additive-neg-inf", C_CM, "an additive float mask: torch.triu(torch.full((L, L), -inf), 1)",
       "bool")
def cm_additive(L):
    return torch.triu(torch.full((L, L), float("-inf")), diagonal=1)


@wrong("cm-eye", C_CM, "torch.eye(L).bool(): each position sees only itself",
       "the right mask is")
def cm_eye(L):
    return torch.eye(L).bool()


# =============================================================================================
# Multi-head attention: wrong (the notebook's __init__)


@wrong("mha-h1-skips-w_o", C_MHA, "`if self.n_heads == 1: return attention(x)` shortcut without w_o (only n_heads=1)",
       "output projection")
class MHAH1(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        if self.n_heads == 1:
            return h[:, 0]  # one head: nothing to merge, so (the learner thinks) nothing to project
        return self.w_o(self.merge(h))


@wrong("mha-h1-squeeze", C_MHA, "merge by h.squeeze(1) when n_heads == 1, else transpose/reshape: squeeze() drops B=1 too",
       'Your MultiHeadAttention')
class MHASq(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        merged = h.squeeze() if self.n_heads == 1 else self.merge(h)
        return self.w_o(merged)


@wrong("mha-scale-sqrtD-over-H", C_MHA, "scale = sqrt(d_model) / n_heads (mixed up which one is under the root)",
       'gives different numbers')
class MHAScaleMix(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / (math.sqrt(self.d_model) / self.n_heads)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-scale-q-and-k", C_MHA, "q and k each multiplied by d_head ** -0.5 (scaled twice: / d_head)",
       "divided by d_head")
class MHAScaleTwice(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        q, k = q * self.d_head ** -0.5, k * self.d_head ** -0.5
        s = q @ k.transpose(-2, -1)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-mask-transposed", C_MHA, "mask.transpose(-2, -1) before use: (B,1,L,1) masks queries, not keys",
       'gives different numbers')
class MHAMaskT(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask.transpose(-2, -1), -1e9)
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-residual-inside", C_MHA, "returns x + w_o(...) (the block's residual put inside attention)",
       'it adds the input back (a residual).')
class MHARes(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        return x + self.w_o(self.merge(h))


@wrong("mha-ec-sdpa-tuple", C_MHA, "self.w_o(merge(ec.scaled_dot_product_attention(q, k, v, mask))): the (out, weights) tuple not unpacked",
       "(out, weights)")
class MHATuple(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        heads = ec.scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(ec.merge_heads(heads))


@wrong("mha-v-from-w_k", C_MHA, "copy-paste: v = self.w_k(x) (q and k right)",
       'q, k and v do not come from their own')
class MHAVk(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_k(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-q-k-swapped", C_MHA, "q = self.w_k(x), k = self.w_q(x) (projections swapped)",
       'q, k and v do not come from their own')
class MHAQK(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_k(x)), self.split(self.w_q(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-unscaled-and-no-mask", C_MHA, "two mistakes: no 1/sqrt(d_head) AND the mask ignored",
       "not scaled")
class MHATwo(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1)
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-no-grad-inside", C_MHA, "forward wrapped in `with torch.no_grad():` (to 'save memory'): nothing trains",
       "gradient")
class MHANoGrad(MB):
    def forward(self, x, mask=None):
        with torch.no_grad():
            q, k, v = self.qkv(x)
            h, _ = _sdpa(q, k, v, mask)
            return self.w_o(self.merge(h))


# =============================================================================================
# LayerNorm: wrong (the notebook's __init__)


class LB(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))  # gamma
        self.bias = nn.Parameter(torch.zeros(d_model))  # beta


@wrong("ln-std-biased-plus-eps", C_LN, "(x - mean) / (x.std(-1, unbiased=False, keepdim=True) + eps)",
       "outside the square root")
class LNStdB(LB):
    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        return self.weight * (x - m) / (x.std(-1, unbiased=False, keepdim=True) + self.eps) + self.bias


@wrong("ln-normalised-weight", C_LN, "gamma normalised too: self.weight / self.weight.norm()",
       'gives different numbers')
class LNWNorm(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return (self.weight / self.weight.norm()) * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-F-layer_norm-shape1", C_LN, "F.layer_norm(x, x.shape[1:], ...) (normalised_shape from dim 1 on)",
       'it normalises over the wrong axis. LayerNorm')
class LNShape1(LB):
    def forward(self, x):
        return F.layer_norm(x, x.shape[1:], eps=self.eps) * self.weight + self.bias


@wrong("ln-clamp-eps", C_LN, "var.clamp(min=eps) instead of var + eps",
       'gives different numbers')
class LNClamp(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v.clamp(min=self.eps)) + self.bias


@wrong("ln-axis0-and-no-beta", C_LN, "two mistakes: statistics over dim 0 AND no + self.bias",
       'gives different numbers')
class LNTwo(LB):
    def forward(self, x):
        m, v = x.mean(0, keepdim=True), x.var(0, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps)


@wrong("ln-detached-stats", C_LN, "mean and var .detach()ed: forward right, gradients wrong",
       "gradient")
class LNDetach(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True).detach(), x.var(-1, keepdim=True, unbiased=False).detach()
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-eps-squared", C_LN, "sqrt(var + eps ** 2) (eps read as a standard deviation)",
       "eps")
class LNEps2(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps ** 2) + self.bias


# =============================================================================================
# FeedForward: wrong (the notebook's __init__)


@wrong("ff-w1-twice", C_FF, "self.w2(act(self.w1(self.w1(x)))): w1 applied twice",
       "apply w1 first")
class FFW1Twice(FB):
    def forward(self, x):
        return self.w2(self.act(self.w1(self.w1(x))))


@wrong("ff-tanh-when-gelu-explicit", C_FF, "own __init__ activation=None: None -> exact GELU, 'gelu' -> tanh GELU",
       "approximation")
class FFExplicit(nn.Module):
    def __init__(self, d_model, d_ff, activation=None):
        super().__init__()
        self.activation = activation
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = self.w1(x)
        if self.activation is None:
            h = F.gelu(h)
        elif self.activation == "gelu":
            h = F.gelu(h, approximate="tanh")
        else:
            h = F.relu(h)
        return self.w2(h)


@wrong("ff-activation-inverted", C_FF, "F.gelu if self.activation == 'relu' else F.relu (branches swapped)",
       "should use GELU")
class FFInv(FB):
    def forward(self, x):
        h = self.w1(x)
        h = F.gelu(h) if self.activation == "relu" else F.relu(h)
        return self.w2(h)


@wrong("ff-glu-with-w1", C_FF, "w2(act(w1(x)) * w1(x)) (a GLU without its own gate weights)",
       'gives different numbers')
class FFGlu(FB):
    def forward(self, x):
        h = self.w1(x)
        return self.w2(self.act(h) * h)


@wrong("ff-act-on-input", C_FF, "w2(w1(act(x))): the activation before w1",
       'gives different numbers')
class FFActIn(FB):
    def forward(self, x):
        return self.w2(self.w1(self.act(x)))


@wrong("ff-tied-w1T", C_FF, "second layer uses self.w1.weight.T (tied) with self.w2.bias",
       'gives different numbers')
class FFTied(FB):
    def forward(self, x):
        return F.linear(self.act(self.w1(x)), self.w1.weight.T, self.w2.bias)


@wrong("ff-math-erf", C_FF, "GELU with math.erf on a tensor (math works on single numbers)",
       "torch.erf")
class FFMathErf(FB):
    def forward(self, x):
        h = self.w1(x)
        if self.activation == "relu":
            return self.w2(F.relu(h))
        return self.w2(0.5 * h * (1 + math.erf(h / math.sqrt(2))))


@wrong("ff-no-grad-inside", C_FF, "forward under `with torch.no_grad():` : right numbers, no gradients",
       "gradient")
class FFNoGrad(FB):
    def forward(self, x):
        with torch.no_grad():
            return self.w2(self.act(self.w1(x)))


# =============================================================================================
# EncoderBlock: wrong (the notebook's __init__)


@wrong("blk-ffn-twice-no-attn", C_BLK, "self.ffn used for both sublayers (attention never called)",
       'the feed-forward network is used twice: the')
class BlkFfn2(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.ffn(self.norm1(x)))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.ffn(x)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-attn-twice", C_BLK, "self.attn used for both sublayers (FFN never called)",
       'the attention sublayer is used twice: the')
class BlkAttn2(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.attn(self.norm2(x), mask))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.attn(x, mask)))


@wrong("blk-post-no-norm2", C_BLK, "post-LN returns x + ffn(x) before the second norm",
       'the second LayerNorm is missing: in post-LN')
class BlkPostNoN2(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return x + self.dropout2(self.ffn(x))


@wrong("blk-pre-res-wrong-tensor", C_BLK, "pre-LN second residual adds norm1(x_in): h = norm1(x); ...; h + ffn(norm2(x))",
       'gives different numbers')
class BlkPreWrong(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.attn(h, mask))
            return h + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-ffn-given-mask", C_BLK, "self.ffn(x, mask): the mask passed to the FFN too",
       'Your EncoderBlock')
class BlkFfnMask(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x), mask))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x, mask)))


@wrong("blk-mask-float", C_BLK, "mask.float() passed to self.attn",
       "bool")
class BlkMaskF(BB):
    def forward(self, x, mask=None):
        m = mask.float() if mask is not None else None
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), m))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, m)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-mask-squeeze1", C_BLK, "self.attn(x, mask.squeeze(1)): (B, 1, L) no longer lines up with the heads",
       "mask")
class BlkMaskSq(BB):
    def forward(self, x, mask=None):
        m = mask.squeeze(1) if mask is not None else None
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), m))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, m)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-mixed-and-no-mask", C_BLK, "two mistakes: pre/post branches swapped AND the mask never passed",
       'pre-LN and post-LN are mixed up: you wrote')
class BlkTwo(BB):
    def forward(self, x, mask=None):
        if not self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x)))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-attn-three-args", C_BLK, "self.attn(x, x, x, mask) (nn.MultiheadAttention's query, key, value habit)",
       'Your EncoderBlock')
class BlkQKV(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.attn(h, h, h, mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, x, x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-pre-norm2-on-input", C_BLK, "pre-LN: ffn reads norm2 of the block's input, not of the updated stream",
       "the feed-forward network reads the block's")
class BlkPreN2In(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            y = x + self.dropout1(self.attn(self.norm1(x), mask))
            return y + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-no-grad-inside", C_BLK, "the attention sublayer under torch.no_grad(): right numbers, attention never trains",
       "gradient")
class BlkNoGrad(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            with torch.no_grad():
                a = self.attn(self.norm1(x), mask)
            x = x + self.dropout1(a)
            return x + self.dropout2(self.ffn(self.norm2(x)))
        with torch.no_grad():
            a = self.attn(x, mask)
        x = self.norm1(x + self.dropout1(a))
        return self.norm2(x + self.dropout2(self.ffn(x)))


# =============================================================================================
# RIGHT variants


@right("pe-phase-shift", C_PE, "one sin for all columns: sin(angle + (col % 2) * pi/2), angles repeat_interleave(2)")
def pe_phase(L, d):
    pos = torch.arange(L, dtype=torch.float32)[:, None]
    ang = (pos / _freq(d)).repeat_interleave(2, dim=1)  # (L, d)
    phase = (torch.arange(d) % 2).float() * (math.pi / 2)
    return torch.sin(ang + phase)


@right("pe-where-einsum", C_PE, "einsum('i,j->ij') on all columns, torch.where(even, sin, cos)")
def pe_where(L, d):
    cols = torch.arange(d)
    inv = 10000.0 ** (-(cols - cols % 2).float() / d)  # the same frequency for 2i and 2i+1
    ang = torch.einsum("i,j->ij", torch.arange(L).float(), inv)
    return torch.where(cols % 2 == 0, torch.sin(ang), torch.cos(ang))


@right("sdpa-identity-values", C_SDPA, "out = F.sdpa(q, k, v); weights = F.sdpa(q, k, eye(L_k)) (attending over one-hot values)")
def sdpa_eye(q, k, v, mask=None):
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    L_k = k.shape[-2]
    batch = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    eye = torch.eye(L_k, dtype=q.dtype).expand(*batch, L_k, L_k)
    w = F.scaled_dot_product_attention(q, k, eye, attn_mask=mask)
    return out, w


@right("sdpa-split-scale-special-softmax", C_SDPA, "q and k each scaled by d_k ** -0.25; torch.special.softmax; where(mask, s, -inf)")
def sdpa_split(q, k, v, mask=None):
    c = q.shape[-1] ** -0.25
    s = torch.matmul(q * c, (k * c).transpose(-1, -2))
    if mask is not None:
        s = torch.where(mask, s, torch.tensor(-math.inf, dtype=s.dtype))
    w = torch.special.softmax(s, -1)
    return w @ v, w


@right("pm-sub-bool", C_PM, "(ids - pad_id).bool()[:, None, None]")
def pm_sub(ids, pad_id):
    return (ids - pad_id).bool()[:, None, None]


@right("pm-ne-unsqueeze-neg", C_PM, "ids.ne(pad_id).unsqueeze(-2).unsqueeze(-2)")
def pm_neg(ids, pad_id):
    return ids.ne(pad_id).unsqueeze(-2).unsqueeze(-2)


@right("cm-triu-T", C_CM, "torch.triu(ones bool).T (the upper triangle transposed; non-contiguous)")
def cm_T(L):
    return torch.triu(torch.ones(L, L, dtype=torch.bool)).T


@right("cm-python-lists", C_CM, "torch.tensor([[j <= i for j in range(L)] for i in range(L)])")
def cm_lists(L):
    return torch.tensor([[j <= i for j in range(L)] for i in range(L)])


@right("mha-unflatten-flatten", C_MHA, "*lead, L, D = x.shape; unflatten(-1, (H, -1)).movedim; flatten(-2); F.sdpa")
class MHAUnflat(MB):
    def forward(self, x, mask=None):
        sp = lambda t: t.unflatten(-1, (self.n_heads, -1)).movedim(-2, -3)  # noqa: E731  (B, H, L, d_head)
        q, k, v = sp(self.w_q(x)), sp(self.w_k(x)), sp(self.w_v(x))
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.w_o(h.movedim(-3, -2).flatten(-2))


@right("mha-dropout-arg-default0", C_MHA, "__init__(d_model, n_heads, dropout=0.0) with nn.Dropout on the weights")
class MHADrop0(MB):
    def __init__(self, d_model, n_heads, dropout=0.0):
        super().__init__(d_model, n_heads)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        _, w = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(self.drop(w) @ v))


@right("ln-rms-of-centred", C_LN, "F.rms_norm(x - mean, (d,), eps=eps): RMS of the centred x is the biased std")
class LNRms(LB):
    def forward(self, x):
        c = x - x.mean(-1, keepdim=True)
        return F.rms_norm(c, (x.shape[-1],), eps=self.eps) * self.weight + self.bias


@right("ln-centering-matrix", C_LN, "centre with x @ (I - 1/d), var = mean of squares")
class LNMat(LB):
    def forward(self, x):
        d = x.shape[-1]
        C = torch.eye(d, dtype=x.dtype) - 1.0 / d
        c = x @ C
        return self.weight * c / (c.square().mean(-1, keepdim=True) + self.eps).sqrt() + self.bias


@right("ff-moduledict-einsum", C_FF, "nn.ModuleDict of activations; einsum('...d,fd->...f') for both layers")
class FFDict(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.acts = nn.ModuleDict({"gelu": nn.GELU(), "relu": nn.ReLU()})

    def forward(self, x):
        h = torch.einsum("...d,fd->...f", x, self.w1.weight) + self.w1.bias
        h = self.acts[self.activation](h)
        return torch.einsum("...f,df->...d", h, self.w2.weight) + self.w2.bias


@right("blk-match-statement", C_BLK, "match self.norm_first: case True / case False; keyword mask=mask")
class BlkMatch(BB):
    def forward(self, x, mask=None):
        match self.norm_first:
            case True:
                x = x + self.dropout1(self.attn(self.norm1(x), mask=mask))
                x = x + self.dropout2(self.ffn(self.norm2(x)))
            case False:
                x = self.norm1(x + self.dropout1(self.attn(x, mask=mask)))
                x = self.norm2(x + self.dropout2(self.ffn(x)))
        return x


@right("blk-sublayer-loop", C_BLK, "a loop over (norm, sublayer, dropout) triples")
class BlkLoop(BB):
    def forward(self, x, mask=None):
        steps = ((self.norm1, lambda h: self.attn(h, mask), self.dropout1),
                 (self.norm2, self.ffn, self.dropout2))
        for norm, sub, drop in steps:
            x = x + drop(sub(norm(x))) if self.norm_first else norm(x + drop(sub(x)))
        return x


@right("blk-dropout-reused", C_BLK, "one self.dropout1 module used for both sublayers (dropout2 unused)")
class BlkOneDrop(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout1(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout1(self.ffn(x)))



# =============================================================================================
# Third batch: dimension-specific slips, wrong defaults, keep-prob dropout; more right styles


@wrong("mha-dhead-8-hardcoded", C_MHA, "split with view(B, L, -1, 8): d_head taken as 8 (right for 16/2 and 8/1, not 12/3)",
       "never fixed numbers")
class MHADh8(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        sp = lambda t: t.view(B, L, -1, 8).transpose(1, 2)  # noqa: E731
        q, k, v = sp(self.w_q(x)), sp(self.w_k(x)), sp(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.transpose(1, 2).reshape(B, L, D))


@wrong("ln-default-eps-1e-12", C_LN, "__init__ default changed to eps=1e-12 (BERT's value); forward uses self.eps",
       "default")
class LNBertEps(LB):
    def __init__(self, d_model, eps=1e-12):
        super().__init__(d_model, eps)

    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("blk-keep-prob", C_BLK, "F.dropout(t, 1 - p, self.training): p read as the keep probability (TF1 habit)",
       "dropout")
class BlkKeep(BB):
    def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, activation="gelu", eps=1e-5):
        super().__init__(d_model, n_heads, d_ff, dropout, norm_first, activation, eps)
        self.p = dropout

    def forward(self, x, mask=None):
        d = lambda t: F.dropout(t, 1 - self.p, self.training)  # noqa: E731
        if self.norm_first:
            x = x + d(self.attn(self.norm1(x), mask))
            return x + d(self.ffn(self.norm2(x)))
        x = self.norm1(x + d(self.attn(x, mask)))
        return self.norm2(x + d(self.ffn(x)))


@wrong("blk-dropout-twice", C_BLK, "copy-paste: self.dropout1(self.dropout1(attn(...))) and the same for dropout2: rate 1-(1-p)^2 = 0.51 at p=0.3",
       "dropout")
class BlkDouble(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.dropout1(self.attn(self.norm1(x), mask)))
            return x + self.dropout2(self.dropout2(self.ffn(self.norm2(x))))
        x = self.norm1(x + self.dropout1(self.dropout1(self.attn(x, mask))))
        return self.norm2(x + self.dropout2(self.dropout2(self.ffn(x))))


@right("sdpa-hf-float-type_as", C_SDPA, "HF style: softmax(scores.float(), -1).type_as(q) (float32 softmax for float64 inputs)")
def sdpa_hf(q, k, v, mask=None):
    s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(q.size(-1))
    if mask is not None:
        s = s.masked_fill(mask == 0, float("-inf"))
    w = F.softmax(s.float(), dim=-1).type_as(q)
    return torch.matmul(w, v), w


@right("mha-h1-shortcut", C_MHA, "n_heads == 1: no split at all, ec.scaled_dot_product_attention on (B, L, D), mask[:, 0] if 4-D")
class MHAH1Right(MB):
    def forward(self, x, mask=None):
        if self.n_heads == 1:
            m = mask
            if m is not None and m.dim() == 4:
                m = m[:, 0]  # (B, 1, L) or (B, L, L): the head axis removed, broadcasts over (B, L, L)
            h, _ = ec.scaled_dot_product_attention(self.w_q(x), self.w_k(x), self.w_v(x), m)
            return self.w_o(h)
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@right("ln-unbiased-rescaled", C_LN, "x.var(-1, keepdim=True) * (d - 1) / d (unbiased turned into biased)")
class LNResc(LB):
    def forward(self, x):
        d = x.shape[-1]
        v = x.var(-1, keepdim=True) * (d - 1) / d
        return self.weight * (x - x.mean(-1, keepdim=True)) / torch.sqrt(v + self.eps) + self.bias


@wrong("blk-clone-then-inplace", C_BLK, "x = x.clone(), then x += attn(x): the in-place add changes the x that w_q needs for its gradient",
       "Backpropagating through your EncoderBlock fails")
class BlkClone(BB):
    def forward(self, x, mask=None):
        x = x.clone()
        if self.norm_first:
            x += self.dropout1(self.attn(self.norm1(x), mask))
            x += self.dropout2(self.ffn(self.norm2(x)))
            return x
        x += self.dropout1(self.attn(x, mask))
        x = self.norm1(x)
        x += self.dropout2(self.ffn(x))
        return self.norm2(x)


test_catalogue_sizes, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests(65, 19)
