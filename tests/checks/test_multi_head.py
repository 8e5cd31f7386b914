"""The checker of ``MultiHeadAttention`` (notebook 04): every wrong answer named, every right one passing."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
from encoder_course import checks

from .catalogue import MB, Catalogue, MHAEinops, MHAFusedQKV, from_cell
from .catalogue import sdpa as _sdpa

C_MHA = checks.check_multi_head_attention

CATALOGUE = Catalogue(C_MHA)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def make_mha(*, split_t=True, merge_t=True, w_o=True, scale="head", use_mask=True, ret_tuple=False):
    class MHA(MB):
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


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("mha-split", C_MHA, "heads split and merged without the transpose",
      'split without the transpose')(make_mha(split_t=False, merge_t=False))
wrong("mha-merge", C_MHA, "heads merged without the transpose", "merged without the transpose")(make_mha(merge_t=False))
wrong("mha-no-wo", C_MHA, "no output projection", "the output projection is missing")(make_mha(w_o=False))
wrong("mha-scale", C_MHA, "scores / sqrt(d_model)", "scaled by sqrt(d_model)")(make_mha(scale="model"))
wrong("mha-no-mask", C_MHA, "the mask never used", "the mask has no effect")(make_mha(use_mask=False))
wrong("mha-tuple", C_MHA, "returns (out, weights)", "tuple of 2 values")(make_mha(ret_tuple=True))


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
       'only the first head is masked')
class MHAMaskHead0(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s0 = s[:, :1].masked_fill(~mask, float("-inf"))
            s = torch.cat([s0, s[:, 1:]], dim=1)
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-returns-weights", C_MHA, "returns the attention weights (B,H,L,L) instead of the output",
       'the attention weights (B, H, L, L)')
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
       'dimensions are in the wrong order')
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
       'the mask is inverted')
class MHAInv(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-softmax-dim-2", C_MHA, "softmax(dim=-2)",
       'softmax runs over the wrong axis')
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
       'pass it on as given')
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
       'keeps `self.mask` from one call to the next')
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
       'mask.repeat_interleave(H, dim=0)')
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


@wrong("mha-seeded-dropout", C_MHA,
       "torch.manual_seed(0) then F.dropout(w, 0.1): same numbers every call, even in eval",
       "torch's random state changes")
class MHASeeded(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        _, w = _sdpa(q, k, v, mask)
        torch.manual_seed(0)
        return self.w_o(self.merge(F.dropout(w, 0.1) @ v))


@wrong("mha-dropout-module-0.1", C_MHA,
       "self.drop = nn.Dropout(0.1) on the weights (paper's value; contract default 0)",
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
       'a heads-first layout (H, B, L, d_head)')
class MHAHB(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        f = lambda t: t.view(B, L, self.n_heads, self.d_head).permute(2, 0, 1, 3)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.permute(1, 2, 0, 3).reshape(B, L, D))


@wrong("mha-L-B-swapped", C_MHA, "L, B, D = x.shape (unpacked in the wrong order)",
       'dimensions are in the wrong order')
class MHALB(MB):
    def forward(self, x, mask=None):
        L, B, D = x.shape
        f = lambda t: t.view(B, L, self.n_heads, self.d_head).transpose(1, 2)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.transpose(1, 2).reshape(B, L, D))


@wrong("mha-sorted-batch-trim", C_MHA,
       "keys trimmed to the first sequence's length (RNN habit: batch sorted longest first)",
       'do not assume the first sequence is the longest')
class MHATrim(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        if mask is not None:
            n = int(mask[0].sum())  # length of the first (assumed longest) sequence
            k, v, mask = k[..., :n, :], v[..., :n, :], mask[..., :n]
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-hardcoded-4-heads", C_MHA, "view(B, L, 4, -1) and sqrt(d_model / 4): n_heads of the example",
       'fixed number of heads')
class MHA4(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        f = lambda t: t.view(B, L, 4, -1).transpose(1, 2)  # noqa: E731
        q, k, v = f(self.w_q(x)), f(self.w_k(x)), f(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(D / 4)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o((s.softmax(-1) @ v).transpose(1, 2).reshape(B, L, D))


@wrong("mha-h1-skips-w_o", C_MHA, "`if self.n_heads == 1: return attention(x)` shortcut without w_o (only n_heads=1)",
       "output projection")
class MHAH1(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        if self.n_heads == 1:
            return h[:, 0]  # one head: nothing to merge, so (the learner thinks) nothing to project
        return self.w_o(self.merge(h))


@wrong("mha-h1-squeeze", C_MHA,
       "merge by h.squeeze(1) when n_heads == 1, else transpose/reshape: squeeze() drops B=1 too",
       'a dimension of size 1 was dropped')
class MHASq(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        merged = h.squeeze() if self.n_heads == 1 else self.merge(h)
        return self.w_o(merged)


@wrong("mha-scale-sqrtD-over-H", C_MHA, "scale = sqrt(d_model) / n_heads (mixed up which one is under the root)",
       'sqrt(d_model) / n_heads')
class MHAScaleMix(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / (math.sqrt(self.d_model) / self.n_heads)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-scores-k-q", C_MHA, "scores = k @ q^T: keys as rows", "or q and k are swapped in the scores")
class MHAScoresKQ(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = k @ q.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-mask-added", C_MHA, "scores + mask: a bool mask added (True counts 1)",
       "the bool mask is added to the scores")
class MHAMaskAdded(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s + mask
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-scale-after-softmax", C_MHA, "softmax(q @ k^T) / sqrt(d_head): scaled after the softmax",
       "divided by sqrt(d_head) after the softmax")
class MHAScaleAfter(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) / math.sqrt(self.d_head) @ v))


@wrong("mha-scale-int-sqrt", C_MHA, "scale = int(self.d_head ** 0.5) (the square root rounded down)",
       "rounded to an integer")
class MHAScaleIntSqrt(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / int((self.d_model // self.n_heads) ** 0.5)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-dhead-16-hardcoded", C_MHA,
       "split with view(B, L, -1, 16): heads of 16 features (24 = d_model does not split)",
       "never fixed numbers")
class MHADh16(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        sp = lambda t: t.view(B, L, -1, 16).transpose(1, 2)  # noqa: E731
        q, k, v = sp(self.w_q(x)), sp(self.w_k(x)), sp(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.transpose(1, 2).reshape(B, L, D))


@wrong("mha-probe-scale-precedence", C_MHA, "scores / (self.d_model // self.n_heads ** 0.5): ** binds first",
       "** binds before //")
class MHAScalePrecedence(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / (self.d_model // self.n_heads ** 0.5)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-probe-q-not-projected", C_MHA, "q = self.split(x): the queries never go through w_q",
       "your forward never uses it")
class MHAQNotProjected(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(x), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
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
       'the mask is transposed before use')
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


@wrong("mha-ec-sdpa-tuple", C_MHA,
       "self.w_o(merge(ec.scaled_dot_product_attention(q, k, v, mask))): the (out, weights) tuple not unpacked",
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
       'the scores are not scaled')
class MHATwo(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1)
        return self.w_o(self.merge(s.softmax(-1) @ v))


@wrong("mha-no-grad-inside", C_MHA, "forward wrapped in `with torch.no_grad():` (to 'save memory'): nothing trains",
       'cuts the gradient')
class MHANoGrad(MB):
    def forward(self, x, mask=None):
        with torch.no_grad():
            q, k, v = self.qkv(x)
            h, _ = _sdpa(q, k, v, mask)
            return self.w_o(self.merge(h))


@wrong("mha-dhead-8-hardcoded", C_MHA,
       "split with view(B, L, -1, 8): d_head taken as 8 (right for 16/2 and 8/1, not 24/2 or 12/3)",
       "the heads have a fixed size")
class MHADh8(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        sp = lambda t: t.view(B, L, -1, 8).transpose(1, 2)  # noqa: E731
        q, k, v = sp(self.w_q(x)), sp(self.w_k(x)), sp(self.w_v(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(h.transpose(1, 2).reshape(B, L, D))


@wrong("mha-renormalise", C_MHA, "softmax, masked weights set to 0, the rest renormalised (torch.softmax used)",
       "mask before the softmax; renormalising divides 0 by 0 when every kept weight underflows")
class MHARenorm(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        w = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d_head), dim=-1)
        if mask is not None:
            w = w * mask
            w = w / w.sum(dim=-1, keepdim=True)
        return self.w_o(self.merge(w @ v))


@wrong("mha-exp-overflow", C_MHA, "a hand-written softmax without the row maximum: exp() overflows on large inputs",
       "exp() overflows")
class MHANaive(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        e = torch.exp(q @ k.transpose(-2, -1) / math.sqrt(self.d_head))
        if mask is not None:
            e = e * mask
        return self.w_o(self.merge(e / e.sum(dim=-1, keepdim=True) @ v))


wrong("mha-missing-import-F", C_MHA, "F.softmax in notebook 04, whose import cell lacks torch.nn.functional as F",
      "add `import torch.nn.functional as F`")(from_cell("""
class MultiHeadAttention(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        s = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(F.softmax(s, dim=-1) @ v))
""", MB=MB, math=math, torch=torch))

wrong("mha-earlier-part-not-run", C_MHA, "calls scaled_dot_product_attention in a kernel where notebook 02's "
      "exercise cell never ran", "your answer from notebook 02_attention")(from_cell("""
class MultiHeadAttention(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        heads, _ = scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge(heads))
""", MB=MB, math=math, torch=torch))


# Mistakes unlike the listed slips: the probe (one parameter set at a time, one head, uniform weights
# with identities) must name them.
@wrong("mha-probe-heads-reversed", C_MHA, "the heads merged back in reverse order (h.flip(1))",
       "with one head your module is right")
class MHAReversed(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h.flip(1)))


@wrong("mha-probe-head-zero-everywhere", C_MHA, "every head uses head 0's slice of q, k and v",
       "the mistake is in how the heads are made")
class MHAHeadZero(MB):
    def forward(self, x, mask=None):
        q, k, v = (t[:, :1].expand_as(t) for t in self.qkv(x))
        h, _ = _sdpa(q, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-probe-bias-before-wo", C_MHA, "w_o's bias added to the merged heads before the projection",
       "how w_o's bias is used")
class MHABiasBefore(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q, k, v, mask)
        return F.linear(self.merge(h) + self.w_o.bias, self.w_o.weight, self.w_o.bias)


@wrong("mha-probe-keys-unprojected", C_MHA, "k = split(x): the keys never go through w_k",
       "the mistake is in the scores")
class MHAKeysRaw(MB):
    def forward(self, x, mask=None):
        q, v = self.split(self.w_q(x)), self.split(self.w_v(x))
        h, _ = _sdpa(q, self.split(x), v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-probe-temperature", C_MHA, "scores divided by 2 * sqrt(d_head), a temperature of 2",
       "your scores are divided by")
class MHATemperature(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        h, _ = _sdpa(q / 2, k, v, mask)
        return self.w_o(self.merge(h))


@wrong("mha-one-module-twice", C_MHA, "self.w_k = self.w_q: one projection kept under two names",
       "are the same tensor")
class MHAOneModuleTwice(make_mha()):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        self.w_k = self.w_q


@wrong("mha-mask-squeeze-batch-of-one", C_MHA, "a (B, 1, 1, L) mask squeezed and rebuilt: a batch of one loses B",
       "drops the batch's size-1 dimension too")
class MHAMaskSqueezeBatchOfOne(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)
        if mask is not None and mask.dim() == 4 and mask.shape[2] == 1:
            mask = mask.squeeze()[:, None, None, :]  # (B, L) -> (B, 1, 1, L); with B = 1, (L,) -> an error
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        if mask is not None:
            scores = scores.masked_fill(~mask, float("-inf"))
        return self.w_o(self.merge(torch.softmax(scores, dim=-1) @ v))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


wrong("mha-package", C_MHA, "the package's own class, passed as the answer", "calls the course's own")(
    ec.MultiHeadAttention)
right("mha-view-transpose", C_MHA, "view + transpose to split, transpose + reshape to merge")(make_mha())
right("mha-einops", C_MHA, "einops rearrange, einsum, finfo.min fill")(MHAEinops)


@right("mha-fused", C_MHA, "torch's fused attention and the package's reference")
class MHAFused(MB):
    def forward(self, x, mask=None):
        B, L, D = x.shape
        q = self.w_q(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3)
        k = self.w_k(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3)
        v = self.w_v(x).reshape(B, L, self.n_heads, -1).permute(0, 2, 1, 3)
        h = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.w_o(h.permute(0, 2, 1, 3).contiguous().view(B, L, D))


@right("mha-helpers", C_MHA, "uses the package's helpers")
class MHAReference(MB):
    def forward(self, x, mask=None):
        q, k, v = (ec.split_heads(w(x), self.n_heads) for w in (self.w_q, self.w_k, self.w_v))
        out, _ = ec.scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(ec.merge_heads(out))


right("mha-fused-qkv", C_MHA, "one F.linear with concatenated w_q/w_k/w_v weights, chunk(3)")(MHAFusedQKV)


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


@right("mha-tensor-sqrt-scale", C_MHA, "scale = torch.tensor(d_head).sqrt(); mask via torch.where")
class MHAR6(MB):
    def forward(self, x, mask=None):
        q, k, v = self.split(self.w_q(x)), self.split(self.w_k(x)), self.split(self.w_v(x))
        s = (q @ k.transpose(-2, -1)) / torch.tensor(float(self.d_head)).sqrt()
        if mask is not None:
            s = torch.where(mask, s, torch.full_like(s, float("-inf")))
        return self.w_o(self.merge(torch.softmax(s, dim=-1) @ v))


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
        m = torch.ones(B, self.n_heads, L, L, dtype=torch.bool) if mask is None else\
            mask.expand(B, self.n_heads, L, L)
        head = lambda q1, k1, v1, m1: _sdpa(q1, k1, v1, m1)[0]  # noqa: E731
        h = torch.vmap(head, in_dims=1, out_dims=1)(q, k, v, m)
        return self.w_o(self.merge(h))


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


@right("mha-h1-shortcut", C_MHA,
       "n_heads == 1: no split at all, ec.scaled_dot_product_attention on (B, L, D), mask[:, 0] if 4-D")
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


# What the learner's side reports is checked against the contract, never taken on trust (grading round 6).


@wrong("mha-fill-minus-1e4", C_MHA, "masked_fill(~mask, -1e4): BERT's old additive mask, beaten by large scores",
       "filled with -1e4, a finite number")
class MHAFillFinite(MB):
    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)  # (B, H, L, d_head) each
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)  # (B, H, L, L)
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e4)
        return self.w_o(self.merge(torch.softmax(scores, dim=-1) @ v))


@wrong("mha-int8-weights", C_MHA, "int8 weights (random weights become 0) and an output of zeros",
       "are float32")
class MHAInt8(MB):
    def __init__(self, d_model, n_heads):
        super().__init__(d_model, n_heads)
        for layer in (self.w_q, self.w_k, self.w_v, self.w_o):
            layer.weight = nn.Parameter(torch.zeros_like(layer.weight, dtype=torch.int8), requires_grad=False)
            layer.bias = nn.Parameter(torch.zeros_like(layer.bias, dtype=torch.int8), requires_grad=False)

    def forward(self, x, mask=None):
        return torch.zeros_like(x)


class MHAMaskWith(MB):
    """The solution with the mask changed before the attention (``reshape_mask``) or the output after it."""
    def reshape_mask(self, mask):
        return mask

    def forward(self, x, mask=None):
        q, k, v = self.qkv(x)  # (B, H, L, d_head) each
        h, _ = ec.scaled_dot_product_attention(q, k, v, None if mask is None else self.reshape_mask(mask))
        return self.w_o(self.merge(h))


@wrong("mha-probe-first-sequence-mask", C_MHA, "mask[0]: the first sequence's mask given to every sequence",
       "every sequence gets the first sequence's mask")
class MHAFirstMask(MHAMaskWith):
    def reshape_mask(self, mask):
        return mask[0]


@wrong("mha-probe-queries-masked", C_MHA, "mask & mask.transpose(-2, -1): the padding masked as queries too",
       "only the outputs at the padding's positions differ, as queries")
class MHAQueriesMasked(MHAMaskWith):
    def reshape_mask(self, mask):
        return mask & mask.transpose(-2, -1)


@wrong("mha-probe-padding-rows-zeroed", C_MHA, "the output zeroed at the padding's positions",
       "only the outputs at the padding's positions differ, as queries")
class MHAPaddingZeroed(MHAMaskWith):
    def forward(self, x, mask=None):
        out = super().forward(x, mask)
        return out if mask is None or mask.shape[-2] != 1 else out * mask[:, 0, 0, :, None]


@wrong("mha-fused-weight-kept", C_MHA, "torch.cat of w_q, w_k, w_v weights kept on self at the first call",
       "from an earlier call: a tensor made from the weights then is a copy")
class MHAFusedKept(MB):
    def forward(self, x, mask=None):
        if not hasattr(self, "w_qkv"):
            self.w_qkv = torch.cat([self.w_q.weight, self.w_k.weight, self.w_v.weight])
            self.b_qkv = torch.cat([self.w_q.bias, self.w_k.bias, self.w_v.bias])
        q, k, v = (self.split(t) for t in F.linear(x, self.w_qkv, self.b_qkv).chunk(3, dim=-1))
        h, _ = ec.scaled_dot_product_attention(q, k, v, mask)
        return self.w_o(self.merge(h))


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
