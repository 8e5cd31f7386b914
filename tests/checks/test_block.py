"""The checker of ``EncoderBlock`` (notebook 07): every wrong answer named, every right one passing."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
from encoder_course import checks

from .catalogue import BB, Catalogue, FFErf, FFGetattr, MHAEinops, MHAFusedQKV, from_cell

C_BLK = checks.check_encoder_block

CATALOGUE = Catalogue(C_BLK)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


class BlockRight(BB):  # correct
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


def make_block(kind):
    class Block(BB):
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
    BB.__init__(self, d_model, n_heads, d_ff, dropout=0.0, norm_first=norm_first)


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("blk-always-post", C_BLK, "post-LN even when norm_first=True",
      "pre-LN and post-LN are mixed up")(make_block("always_post"))
wrong("blk-eval-dropout", C_BLK, "F.dropout(t, p) without training=: active in eval",
      'dropout is active in eval mode')(make_block("eval_dropout"))
wrong("blk-no-residual", C_BLK, "no residual around either sublayer (post-LN)",
      'a residual connection is missing')(make_block("no_residual"))
wrong("blk-no-mask", C_BLK, "self.attn(x) without the mask", "mask is not passed")(make_block("no_mask"))
wrong("blk-swap-norms", C_BLK, "norm2 with the attention, norm1 with the feed-forward",
      'norm1 and norm2 are swapped')(make_block("swap_norms"))
wrong("blk-no-dropout", C_BLK, "built with dropout=0.0 whatever it is given, no dropout applied",
      'no dropout is happening during training')(make_block("no_dropout"))


@wrong("blk-numpy", C_BLK, "returns a NumPy array", "returned a NumPy ndarray")
class BlockNumpy(BlockRight):
    def forward(self, x, mask=None):
        return super().forward(x, mask).numpy()


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


@wrong("blk-dropout-residual-stream", C_BLK,
       "nn.Dropout applied to the whole residual sum: norm1(dropout1(x + attn(x))) (train-only bug)",
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


@wrong("blk-attn-returns-tuple-used", C_BLK, "a, w = self.attn(x, mask) (attn returns one tensor)",
       'One tensor was unpacked as two')
class BlkUnpack(BB):
    def forward(self, x, mask=None):
        a, _ = self.attn(x, mask)
        return self.norm2(self.norm1(x + a))


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
       "is the rate fixed in the code")
class BlkP(BB):
    def forward(self, x, mask=None):
        d = lambda t: F.dropout(t, 0.1, self.training)  # noqa: E731
        if self.norm_first:
            x = x + d(self.attn(self.norm1(x), mask))
            return x + d(self.ffn(self.norm2(x)))
        x = self.norm1(x + d(self.attn(x, mask)))
        return self.norm2(x + d(self.ffn(x)))


@wrong("blk-post-norm-x-only", C_BLK, "post-LN written x = norm1(x) + attn(x): the norm applied to x, not to the sum",
       'applied to the residual path before the add')
class BlkNormX(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x) + self.dropout1(self.attn(x, mask))
        return self.norm2(x) + self.dropout2(self.ffn(x))


@wrong("blk-res-from-input", C_BLK, "post-LN second residual adds the block's input: norm2(x_in + ffn(h))",
       "residual adds the block's input")
class BlkResIn(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(h)))
        h = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(h)))


@wrong("blk-remember-mask", C_BLK, "self.mask = mask and reuses the previous mask when called without one",
       'keeps `self.mask` from one call to the next')
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
       'yet a mask reached the attention')
class BlkDefaultMask(BB):
    def forward(self, x, mask=None):
        if mask is None:
            mask = torch.ones(2, 1, 1, 5, dtype=torch.bool)
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-returns-weights", C_BLK, "returns the attention weights of self.attn.attention_weights(...) with x",
       'tuple of 2 values')
class BlkRetW(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            a, w = self.attn(h, mask), self.attn.attention_weights(h, mask)
            x = x + self.dropout1(a)
            return x + self.dropout2(self.ffn(self.norm2(x))), w
        a, w = self.attn(x, mask), self.attn.attention_weights(x, mask)
        x = self.norm1(x + self.dropout1(a))
        return self.norm2(x + self.dropout2(self.ffn(x))), w


@wrong("blk-rezero-scalar-alpha", C_BLK, "ReZero: x + self.alpha * attn(x) with a 0-dim nn.Parameter alpha",
       'returns its input unchanged')
class BlkReZero(BB):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.alpha = nn.Parameter(torch.zeros(()))

    def forward(self, x, mask=None):
        x = x + self.alpha * self.dropout1(self.attn(x, mask))
        return x + self.alpha * self.dropout2(self.ffn(x))


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


@wrong("blk-pre-res-wrong-tensor", C_BLK,
       "pre-LN second residual adds norm1(x_in): h = norm1(x); ...; h + ffn(norm2(x))",
       "adds norm1 of the block's input")
class BlkPreWrong(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            h = self.norm1(x)
            x = x + self.dropout1(self.attn(h, mask))
            return h + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-ffn-given-mask", C_BLK, "self.ffn(x, mask): the mask passed to the FFN too",
       'self.ffn(x) takes only x')
class BlkFfnMask(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x), mask))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x, mask)))


@wrong("blk-mask-float", C_BLK, "mask.float() passed to self.attn",
       'keep it bool')
class BlkMaskF(BB):
    def forward(self, x, mask=None):
        m = mask.float() if mask is not None else None
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), m))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, m)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-mask-squeeze1", C_BLK, "self.attn(x, mask.squeeze(1)): (B, 1, L) no longer lines up with the heads",
       'no squeeze, view or transpose')
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
       'self.attn(x, mask) takes x and the mask')
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


@wrong("blk-no-grad-inside", C_BLK,
       "the attention sublayer under torch.no_grad(): right numbers, attention never trains",
       'cuts the gradient')
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


@wrong("blk-keep-prob", C_BLK, "F.dropout(t, 1 - p, self.training): p read as the keep probability (TF1 habit)",
       "as if p were the probability to keep")
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


@wrong("blk-mask-as-padding", C_BLK, "mask.view(B, 1, 1, -1): every mask taken for a padding mask",
       "Pass the block's mask on to self.attn as given")
class BlkMaskView(BB):
    def forward(self, x, mask=None):
        return BlockRight.forward(self, x, None if mask is None else mask.view(x.shape[0], 1, 1, -1))


@wrong("blk-bare-norm-first", C_BLK, "`if norm_first:` in forward: the __init__ argument, not self.norm_first",
       "is an argument of __init__, which forward cannot see")
class BlkBareName(BB):
    def forward(self, x, mask=None):
        if norm_first:  # noqa: F821
            return x
        return BlockRight.forward(self, x, mask)


@wrong("blk-dropout-twice", C_BLK,
       "copy-paste: self.dropout1(self.dropout1(attn(...))) and the same for dropout2: rate 1-(1-p)^2 = 0.51 at p=0.3",
       "two dropouts in a row")
class BlkDouble(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.dropout1(self.attn(self.norm1(x), mask)))
            return x + self.dropout2(self.dropout2(self.ffn(self.norm2(x))))
        x = self.norm1(x + self.dropout1(self.dropout1(self.attn(x, mask))))
        return self.norm2(x + self.dropout2(self.dropout2(self.ffn(x))))


@wrong("blk-dropout-twice-pre-ln", C_BLK,
       "pre-LN only: self.dropout1(self.dropout1(...)), self.dropout2(self.dropout2(...))",
       "scales the values it keeps by 2.04")
class BlkDoublePre(BlkDouble):
    def forward(self, x, mask=None):
        return super().forward(x, mask) if self.norm_first else BlockRight.forward(self, x, mask)


@wrong("blk-clone-then-inplace", C_BLK,
       "x = x.clone(), then x += attn(x): the in-place add changes the x that w_q needs for its gradient",
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


@wrong("blk-post-norm-on-branch", C_BLK, "post-LN written x = x + norm1(attn(x)): the LayerNorm on the branch, "
       "before the add", "the LayerNorm sits on the sublayer's output")
class BlkNormBranch(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = x + self.dropout1(self.norm1(self.attn(x, mask)))
        return x + self.dropout2(self.norm2(self.ffn(x)))


@wrong("blk-pre-no-norm2", C_BLK, "pre-LN whose feed-forward step reads x un-normalised: x + ffn(x)",
       "norm2 is missing: in pre-LN")
class BlkPreNoNorm2(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(x))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-mask-transposed", C_BLK, "self.attn(x, mask.transpose(-2, -1)): (B, 1, L, 1) masks queries, not keys",
       "the mask is transposed before it reaches the attention")
class BlkMaskT(BB):
    def forward(self, x, mask=None):
        m = None if mask is None else mask.transpose(-2, -1)
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), m))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, m)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-one-minus-p-times-dropout", C_BLK,
       "x + (1 - p) * dropout1(attn(...)): 'undoing' dropout's scaling by hand (wrong in eval and in train)",
       "a wrong scaling")
class BlkOneMinusP(BB):
    def forward(self, x, mask=None):
        keep = 1 - self.p
        if self.norm_first:
            x = x + keep * self.dropout1(self.attn(self.norm1(x), mask))
            return x + keep * self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + keep * self.dropout1(self.attn(x, mask)))
        return self.norm2(x + keep * self.dropout2(self.ffn(x)))


wrong("blk-missing-import-nn", C_BLK,
      "nn.functional.dropout in a notebook whose import cell lacks `from torch import nn`",
      "add `from torch import nn`")(from_cell("""
class EncoderBlock(BB):
    def forward(self, x, mask=None):
        drop = lambda t: nn.functional.dropout(t, self.p, self.training)
        if self.norm_first:
            x = x + drop(self.attn(self.norm1(x), mask))
            return x + drop(self.ffn(self.norm2(x)))
        x = self.norm1(x + drop(self.attn(x, mask)))
        return self.norm2(x + drop(self.ffn(x)))
""", BB=BB))


# Mistakes unlike the listed slips: the probe (one sublayer switched off at a time, then both) must name them.
@wrong("block-probe-half-attention", C_BLK, "the attention's output halved before the residual sum",
       "the mistake is in the attention half")
class BlockHalfAttention(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + 0.5 * self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + 0.5 * self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("block-probe-ffn-twice", C_BLK, "the feed-forward's output added twice",
       "the mistake is in the feed-forward half")
class BlockFfnTwice(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            h = self.dropout2(self.ffn(self.norm2(x)))
            return x + h + h
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        h = self.dropout2(self.ffn(x))
        return self.norm2(x + h + h)


@wrong("block-probe-normed-residual", C_BLK, "pre-LN whose second residual starts from norm2(x): h + ffn(h)",
       "yours returns norm2(x)")
class BlockNormedResidual(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            h = self.norm2(x)
            return h + self.dropout2(self.ffn(h))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("block-probe-query-mask", C_BLK, "the mask applied to the queries too: attn(x, mask & mask^T)",
       "the mistake is in the attention half")
class BlockQueryMask(BB):
    def forward(self, x, mask=None):
        if mask is not None:
            mask = mask & mask.transpose(-2, -1)
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-one-norm-twice", C_BLK, "self.norm2 = self.norm1: one LayerNorm kept under two names",
       "are the same tensor")
class BlkOneNormTwice(BlockRight):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.norm2 = self.norm1


@wrong("blk-mask-squeeze-batch-of-one", C_BLK, "the mask squeezed to (B, L) and rebuilt: a batch of one loses B",
       "drops the batch's size-1 dimension too")
class BlkMaskSqueezeBatchOfOne(BlockRight):
    def forward(self, x, mask=None):
        if mask is not None and mask.dim() == 4 and mask.shape[2] == 1:
            mask = mask.squeeze()[:, None, None, :]
        return super().forward(x, mask)


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


@wrong("blk-mask-four-heads", C_BLK, "mask.expand(B, 4, L, L): the example's 4 heads written in",
       "Pass the block's mask on to self.attn as given")
class BlkFourHeads(BB):
    def forward(self, x, mask=None):
        if mask is not None:
            mask = mask.expand(x.shape[0], 4, x.shape[1], x.shape[1])  # (B, 4, L, L)
        return BlockRight.forward(self, x, mask)


@wrong("blk-default-eps", C_BLK, "F.layer_norm(t, t.shape[-1:], norm.weight, norm.bias): the norms' eps ignored",
       "give the norms the eps the block is built with")
class BlkDefaultEps(BB):
    def forward(self, x, mask=None):
        def norm(layer, t):
            return F.layer_norm(t, t.shape[-1:], layer.weight, layer.bias)  # eps left at 1e-5

        if self.norm_first:
            x = x + self.dropout1(self.attn(norm(self.norm1, x), mask))
            return x + self.dropout2(self.ffn(norm(self.norm2, x)))
        x = norm(self.norm1, x + self.dropout1(self.attn(x, mask)))
        return norm(self.norm2, x + self.dropout2(self.ffn(x)))


wrong("blk-package", C_BLK, "the package's own class, passed as the answer", "calls the course's own")(ec.EncoderBlock)
right("blk-right", C_BLK, "nn.Dropout on each sublayer's output, both layouts")(BlockRight)


@right("blk-own-parts", C_BLK, "the learner's own sub-classes and torch's LayerNorm inside")
class _OwnBlock(nn.Module):
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
        self.attn = MHAFusedQKV(d_model, n_heads)
        self.ffn = FFGetattr(d_model, d_ff)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.drop(self.attn(self.norm1(x), mask))
            return x + self.drop(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.drop(self.attn(x, mask)))
        return self.norm2(x + self.drop(self.ffn(x)))


@right("blk-sublayer-connection", C_BLK, "Annotated-Transformer SublayerConnection helper for both layouts")
class BlkSub(BB):
    def _sublayer(self, x, fn, norm, drop):
        if self.norm_first:
            return x + drop(fn(norm(x)))
        return norm(x + drop(fn(x)))

    def forward(self, x, mask=None):
        x = self._sublayer(x, lambda t: self.attn(t, mask), self.norm1, self.dropout1)
        return self._sublayer(x, self.ffn, self.norm2, self.dropout2)


@right("blk-return-weights-discarded", C_BLK, "self.attn.attention_weights(...) computed too and dropped")
class BlkRW(BB):
    def forward(self, x, mask=None):
        h = self.norm1(x) if self.norm_first else x
        a, _weights = self.attn(h, mask), self.attn.attention_weights(h, mask)
        x = x + self.dropout1(a)
        if not self.norm_first:
            x = self.norm1(x)
        h = self.norm2(x) if self.norm_first else x
        x = x + self.dropout2(self.ffn(h))
        return x if self.norm_first else self.norm2(x)


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


# What the learner's side reports is checked against the contract, never taken on trust (grading round 6).


@wrong("block-nan-eps", C_BLK, "norm eps set to NaN (a reference that copied it would be NaN too)",
       "eps is a small positive number")
class BlockNanEps(BlockRight):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.norm1.eps = self.norm2.eps = float("nan")


@wrong("block-huge-eps", C_BLK, "norm eps of 1e6 (the normalising vanishes)", "eps is a small positive number")
class BlockHugeEps(BlockRight):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.norm1.eps = self.norm2.eps = 1e6


# ----------------------------------------------------------------------------------------------
# Round 7: learners' answers the checker named with a wrong or generic cause, and right answers in more styles


@wrong("blk-pre-attn-post-ffn", C_BLK, "both layouts written as x + attn(norm1(x)), then norm2(x + ffn(x))",
       "the attention sublayer is written pre-LN")
class BlkPrePost(BB):
    def forward(self, x, mask=None):
        x = x + self.dropout1(self.attn(self.norm1(x), mask))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-post-branch-pre-ffn", C_BLK, "the post-LN branch's feed-forward step written pre-LN: x + ffn(norm2(x))",
       "the attention sublayer is written post-LN")
class BlkPostPre(BlockRight):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return x + self.dropout2(self.ffn(self.norm2(x)))


@wrong("blk-res-adds-attention-output", C_BLK, "a = attn(x); h = norm1(x + a); norm2(a + ffn(h))",
       "residual adds the attention's output alone")
class BlkResA(BlockRight):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        a = self.dropout1(self.attn(x, mask))
        h = self.norm1(x + a)
        return self.norm2(a + self.dropout2(self.ffn(h)))


@wrong("blk-post-ffn-reads-sum", C_BLK, "s = x + attn(x); h = norm1(s); norm2(h + ffn(s))",
       "the feed-forward network reads x + attn(x) before norm1")
class BlkReadsSum(BlockRight):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        s = x + self.dropout1(self.attn(x, mask))
        return self.norm2(self.norm1(s) + self.dropout2(self.ffn(s)))


@wrong("blk-post-residual-sum", C_BLK, "s = x + attn(x); h = norm1(s); norm2(s + ffn(h))",
       "residual adds x + attn(x) before norm1")
class BlkResSum(BlockRight):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        s = x + self.dropout1(self.attn(x, mask))
        return self.norm2(s + self.dropout2(self.ffn(self.norm1(s))))


@wrong("blk-attn-index-0", C_BLK, "self.attn(x, mask)[0], as for nn.MultiheadAttention's (out, weights)",
       "the attention's output is indexed with [0]")
class BlkIndex0(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask)[0])
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)[0]))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-attn-mask-keyword", C_BLK, "self.attn(x, attn_mask=mask): nn.MultiheadAttention's keyword",
       "forward has no argument named")
class BlkAttnMaskKw(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), attn_mask=mask))
            return x + self.dropout2(self.ffn(self.norm2(x)))
        x = self.norm1(x + self.dropout1(self.attn(x, attn_mask=mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-attention-step-only", C_BLK, "returns after the attention step: the feed-forward step forgotten",
       "the feed-forward step is missing")
class BlkAttnOnly(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            return x + self.dropout1(self.attn(self.norm1(x), mask))
        return self.norm1(x + self.dropout1(self.attn(x, mask)))


@wrong("blk-ffn-step-only", C_BLK, "the feed-forward step alone: the attention step forgotten",
       "the attention step is missing")
class BlkFfnOnly(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            return x + self.dropout2(self.ffn(self.norm2(x)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-layernorm-in-forward", C_BLK, "nn.LayerNorm(d) built inside forward instead of self.norm1/self.norm2",
       "the norms' weight and bias (gamma and beta) are not used")
class BlkLNInForward(BB):
    def forward(self, x, mask=None):
        n1, n2 = nn.LayerNorm(x.shape[-1]), nn.LayerNorm(x.shape[-1])
        if self.norm_first:
            x = x + self.dropout1(self.attn(n1(x), mask))
            return x + self.dropout2(self.ffn(n2(x)))
        x = n1(x + self.dropout1(self.attn(x, mask)))
        return n2(x + self.dropout2(self.ffn(x)))


@wrong("blk-F-layer-norm-bare", C_BLK, "F.layer_norm(t, t.shape[-1:], eps=...) without the norms' weight and bias",
       "the norms' weight and bias (gamma and beta) are not used")
class BlkFLNBare(BB):
    def forward(self, x, mask=None):
        def n(t):
            return F.layer_norm(t, t.shape[-1:], eps=self.norm1.eps)

        if self.norm_first:
            x = x + self.dropout1(self.attn(n(x), mask))
            return x + self.dropout2(self.ffn(n(x)))
        x = n(x + self.dropout1(self.attn(x, mask)))
        return n(x + self.dropout2(self.ffn(x)))


@wrong("blk-averaged-residual", C_BLK, "(x + attn(...)) / 2: the residual sum averaged (post-LN: only eps shows it)",
       "each residual sum is halved")
class BlkAvg(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = (x + self.dropout1(self.attn(self.norm1(x), mask))) / 2
            return (x + self.dropout2(self.ffn(self.norm2(x)))) / 2
        x = self.norm1((x + self.dropout1(self.attn(x, mask))) / 2)
        return self.norm2((x + self.dropout2(self.ffn(x))) / 2)


@wrong("blk-gelu-on-ffn-output", C_BLK, "x + dropout2(F.gelu(self.ffn(x))): the activation applied again",
       "an activation is applied to the feed-forward network's output")
class BlkGeluOut(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = x + self.dropout1(self.attn(self.norm1(x), mask))
            return x + self.dropout2(F.gelu(self.ffn(self.norm2(x))))
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(F.gelu(self.ffn(x))))


@wrong("blk-relu-on-output", C_BLK, "F.relu of the block's output (a CNN habit)",
       "the block's output goes through an activation")
class BlkReluOut(BlockRight):
    def forward(self, x, mask=None):
        return F.relu(super().forward(x, mask))


@wrong("blk-pre-ffn-reads-norm2-norm1", C_BLK, "pre-LN: h = norm1(x); x = x + attn(h); x + ffn(norm2(h))",
       "reads norm2(norm1(x)) of the block's input")
class BlkN2N1(BlockRight):
    def forward(self, x, mask=None):
        if not self.norm_first:
            return super().forward(x, mask)
        h = self.norm1(x)
        x = x + self.dropout1(self.attn(h, mask))
        return x + self.dropout2(self.ffn(self.norm2(h)))


@wrong("blk-post-ffn-reads-norm1", C_BLK, "post-LN: norm2(x + ffn(norm1(x))), norm1 applied again to ffn's input",
       "reads a LayerNorm of the attention step's result")
class BlkPostN1Again(BlockRight):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(self.norm1(x))))


@wrong("blk-pre-normed-stream-in-place", C_BLK, "pre-LN: h = norm1(x); h += attn(h); h + ffn(norm2(h))",
       "the residual adds the normalised x")
class BlkPreHInPlace(BlockRight):
    def forward(self, x, mask=None):
        if not self.norm_first:
            return super().forward(x, mask)
        h = self.norm1(x)
        h += self.dropout1(self.attn(h, mask))
        return h + self.dropout2(self.ffn(self.norm2(h)))


@wrong("blk-pre-final-norm1", C_BLK, "pre-LN returns norm1(x + ffn(norm2(x))): a final norm, with norm1",
       "output is normalised again")
class BlkPreFinalN1(BlockRight):
    def forward(self, x, mask=None):
        out = super().forward(x, mask)
        return self.norm1(out) if self.norm_first else out


@wrong("blk-post-attention-norm-on-branch", C_BLK, "post-LN: x + norm1(attn(x)), then norm2(x + ffn(x)) right",
       "in the attention step the LayerNorm sits on the sublayer's output")
class BlkAttnBranchNorm(BlockRight):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        x = x + self.norm1(self.dropout1(self.attn(x, mask)))
        return self.norm2(x + self.dropout2(self.ffn(x)))


@wrong("blk-post-ffn-norm-on-branch", C_BLK, "post-LN: norm1(x + attn(x)) right, then x + norm2(ffn(x))",
       "in the feed-forward step the LayerNorm sits on the sublayer's output")
class BlkFfnBranchNorm(BlockRight):
    def forward(self, x, mask=None):
        if self.norm_first:
            return super().forward(x, mask)
        x = self.norm1(x + self.dropout1(self.attn(x, mask)))
        return x + self.norm2(self.dropout2(self.ffn(x)))


@wrong("blk-ffn-reads-attention-output", C_BLK, "a = attn(...); x = x + a; x + ffn(norm2(a)): ffn fed a, not x",
       "the feed-forward network reads the attention's output alone")
class BlkFfnReadsA(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            a = self.dropout1(self.attn(self.norm1(x), mask))
            return x + a + self.dropout2(self.ffn(self.norm2(a)))
        a = self.dropout1(self.attn(x, mask))
        return self.norm2(self.norm1(x + a) + self.dropout2(self.ffn(a)))


@wrong("blk-x-times-padding-mask", C_BLK, "x = x * mask[:, 0, 0, :, None] before the sublayers (padding zeroed)",
       "x is multiplied by the padding mask")
class BlkXMask(BlockRight):
    def forward(self, x, mask=None):
        if mask is not None and mask.dim() == 4 and mask.shape[1:3] == (1, 1):
            x = x * mask[:, 0, 0, :, None]
        return super().forward(x, mask)


@wrong("blk-output-pads-zeroed", C_BLK, "the output multiplied by the padding mask (padding positions set to 0)",
       "your output is zero at the padding positions")
class BlkOutMask(BlockRight):
    def forward(self, x, mask=None):
        out = super().forward(x, mask)
        if mask is not None and mask.dim() == 4 and mask.shape[1:3] == (1, 1):
            out = out * mask[:, 0, 0, :, None]
        return out


@wrong("blk-eval-inside-forward", C_BLK, "self.eval() at the top of forward (to make the output repeatable)",
       "switches itself to eval() mode")
class BlkEvalInside(BlockRight):
    def forward(self, x, mask=None):
        self.eval()
        return super().forward(x, mask)


# Named right before this round: kept so they stay named.
@wrong("blk-dropout-built-in-forward", C_BLK, "d = nn.Dropout(p) built inside forward: in training mode, always",
       "dropout is active in eval mode")
class BlkDropInForward(BB):
    def forward(self, x, mask=None):
        d = nn.Dropout(self.p)
        if self.norm_first:
            x = x + d(self.attn(self.norm1(x), mask))
            return x + d(self.ffn(self.norm2(x)))
        x = self.norm1(x + d(self.attn(x, mask)))
        return self.norm2(x + d(self.ffn(x)))


@wrong("blk-mask-unsqueezed-again", C_BLK, "mask[:, None, None, :] applied to the (B, 1, 1, L) mask the block gets",
       "Pass the block's mask on to self.attn as given")
class BlkMask6(BlockRight):
    def forward(self, x, mask=None):
        return super().forward(x, None if mask is None else mask[:, None, None, :])


@wrong("blk-dropout-on-residual-x", C_BLK, "self.dropout1(x) + attn(...): dropout on the residual stream",
       "outside the sublayers")
class BlkDropX(BB):
    def forward(self, x, mask=None):
        if self.norm_first:
            x = self.dropout1(x) + self.attn(self.norm1(x), mask)
            return self.dropout2(x) + self.ffn(self.norm2(x))
        x = self.norm1(self.dropout1(x) + self.attn(x, mask))
        return self.norm2(self.dropout2(x) + self.ffn(x))


@right("blk-forward-with-weights", C_BLK, "self.attn.forward_with_weights(h, mask)[0], the weights dropped")
class BlkFWW(BB):
    def forward(self, x, mask=None):
        h = self.norm1(x) if self.norm_first else x
        a, _ = self.attn.forward_with_weights(h, mask)
        x = x + self.dropout1(a)
        if not self.norm_first:
            x = self.norm1(x)
        h = self.norm2(x) if self.norm_first else x
        x = x + self.dropout2(self.ffn(h))
        return x if self.norm_first else self.norm2(x)


@right("blk-functools-reduce", C_BLK, "functools.reduce over (norm, sublayer, dropout) steps, partial(attn, mask=)")
class BlkReduce(BB):
    def forward(self, x, mask=None):
        steps = [(self.norm1, functools.partial(self.attn, mask=mask), self.dropout1),
                 (self.norm2, self.ffn, self.dropout2)]

        def step(t, parts):
            norm, sub, drop = parts
            return t + drop(sub(norm(t))) if self.norm_first else norm(t + drop(sub(t)))

        return functools.reduce(step, steps, x)


@right("blk-hand-rolled-dropout", C_BLK, "dropout by hand: rand_like >= p, scaled by 1 / (1 - p), only in training")
class BlkHandDrop(BB):
    def forward(self, x, mask=None):
        def d(t):
            if not self.training or self.p == 0:
                return t
            return t * (torch.rand_like(t) >= self.p).to(t.dtype) / (1 - self.p)

        if self.norm_first:
            x = x + d(self.attn(self.norm1(x), mask))
            return x + d(self.ffn(self.norm2(x)))
        x = self.norm1(x + d(self.attn(x, mask)))
        return self.norm2(x + d(self.ffn(x)))


@right("blk-mask-expanded-to-heads", C_BLK, "mask.expand(B, self.attn.n_heads, L, L), passed as mask=")
class BlkExpand(BB):
    def forward(self, x, mask=None):
        if mask is not None:
            B, L = x.shape[:2]
            mask = mask.expand(B, self.attn.n_heads, L, L)
        return BlockRight.forward(self, x, mask)


@right("blk-dict-dispatch", C_BLK, "{True: pre, False: post}[bool(self.norm_first)](x) with nested functions")
class BlkDispatch(BB):
    def forward(self, x, mask=None):
        def pre(t):
            t = t + self.dropout1(self.attn(self.norm1(t), mask))
            return t + self.dropout2(self.ffn(self.norm2(t)))

        def post(t):
            t = self.norm1(t + self.dropout1(self.attn(t, mask)))
            return self.norm2(t + self.dropout2(self.ffn(t)))

        return {True: pre, False: post}[bool(self.norm_first)](x)


@right("blk-F-layer-norm-with-params", C_BLK, "F.layer_norm(t, (d,), norm.weight, norm.bias, norm.eps)")
class BlkFLN(BB):
    def forward(self, x, mask=None):
        def n(norm, t):
            return F.layer_norm(t, (t.shape[-1],), norm.weight, norm.bias, norm.eps)

        if self.norm_first:
            x = x + self.dropout1(self.attn(n(self.norm1, x), mask))
            return x + self.dropout2(self.ffn(n(self.norm2, x)))
        x = n(self.norm1, x + self.dropout1(self.attn(x, mask)))
        return n(self.norm2, x + self.dropout2(self.ffn(x)))


@right("blk-all-true-default-mask", C_BLK, "mask None replaced by an all-True (B, 1, 1, L) mask from x's sizes")
class BlkAllTrue(BB):
    def forward(self, x, mask=None):
        if mask is None:
            mask = torch.ones(x.shape[0], 1, 1, x.shape[1], dtype=torch.bool)
        return BlockRight.forward(self, x, mask)


@right("blk-module-list-steps", C_BLK, "nn.ModuleList of (norm, dropout) pairs built in __init__, zipped with subs")
class BlkSteps(BB):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.steps = nn.ModuleList([nn.ModuleList([self.norm1, self.dropout1]),
                                    nn.ModuleList([self.norm2, self.dropout2])])

    def forward(self, x, mask=None):
        for (norm, drop), sub in zip(self.steps, (lambda t: self.attn(t, mask), self.ffn)):
            x = x + drop(sub(norm(x))) if self.norm_first else norm(x + drop(sub(x)))
        return x


@right("blk-F-dropout-from-modules-clone", C_BLK, "F.dropout(p=self.dropout1.p, training=self.training) on a clone")
class BlkFDropMods(BB):
    def forward(self, x, mask=None):
        def d1(t):
            return F.dropout(t, p=self.dropout1.p, training=self.training)

        def d2(t):
            return F.dropout(t, p=self.dropout2.p, training=self.training)

        res = x.clone()
        if self.norm_first:
            h = res + d1(self.attn(self.norm1(res), mask))
            return h + d2(self.ffn(self.norm2(h)))
        h = self.norm1(res + d1(self.attn(res, mask)))
        return self.norm2(h + d2(self.ffn(h)))


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
