"""Checker of the ``LayerNorm`` class (notebook 05): the axis, the biased variance, eps, gamma and beta."""

from __future__ import annotations

import functools
import math

import torch

from ._compare import _close, _compare_output, _float32_detour, slips
from ._modules import Pair, _contract_eps, _sub
from ._run import ExerciseError, _checker, _gen, _randn
from .registry import exercise


def _ln(x, weight, bias, eps, *, dims=(-1,), unbiased=False, use_w=True, use_b=True, center=True, swap=False,
        rms=False, bias_first=False, eps_how="add", weight_scale=None):
    """LayerNorm in float64 and its usual slips; ``eps_how``: how eps meets the variance ("add", "none", "out":
    added to the standard deviation, "root_out": its root added so, "clamp": var.clamp(min=eps), "squared": eps
    read as a standard deviation)."""
    x64 = x.double()
    mean = x64.mean(dim=dims, keepdim=True) if center else 0.0
    # RMSNorm: the mean square, nothing subtracted
    var = (x64 ** 2).mean(dim=dims, keepdim=True) if rms else x64.var(dim=dims, keepdim=True, unbiased=unbiased)
    std = {"add": lambda: torch.sqrt(var + eps), "none": lambda: torch.sqrt(var + 0.0), "out": lambda: var.sqrt() + eps,
           "clamp": lambda: torch.sqrt(var.clamp(min=eps)), "squared": lambda: torch.sqrt(var + eps ** 2),
           "root_out": lambda: var.sqrt() + eps ** 0.5}[eps_how]()
    if weight_scale is not None:  # gamma changed before use (normalised, say)
        weight = weight_scale(weight.double())
    w, b = (bias, weight) if swap else (weight, bias)
    w, b = w.double() if use_w else 1.0, b.double() if use_b else 0.0
    y = (x64 - mean) / std
    return {"out": ((y + b) * w if bias_first else y * w + b).to(x.dtype)}


_slip = slips(_ln)


_LN_MISTAKES = [
    ("it normalises over the wrong axis. LayerNorm normalises each token over its own features, the "
     "last dimension: mean and variance with dim=-1, keepdim=True (not across the sequence or batch).",
     lambda x, w, b, e: [_ln(x, w, b, e, dims=(d,)) for d in range(x.dim() - 1)]
     + [_ln(x, w, b, e, dims=tuple(range(x.dim())))] + ([_ln(x, w, b, e, dims=(-2, -1))] if x.dim() > 2 else [])),
    ("it normalises each feature over the batch and the sequence, as BatchNorm does. LayerNorm "
     "normalises each token over its own features: mean and variance with dim=-1, keepdim=True.",
     lambda x, w, b, e: _ln(x, w, b, e, dims=tuple(range(x.dim() - 1)))),
    ("it divides by the root mean square without subtracting the mean: that is RMSNorm. LayerNorm "
     "first centres each token: (x - mean) / sqrt(var + eps).", _slip(center=False, rms=True)),
    ("self.bias is added before multiplying by self.weight. The order is weight * x_hat + bias.",
     _slip(bias_first=True)),
    ("it uses the unbiased variance (dividing by d_model - 1). LayerNorm divides by d_model: "
     "x.var(dim=-1, unbiased=False, keepdim=True) (torch.var and torch.std default to unbiased).",
     _slip({}, {"eps_how": "out"}, unbiased=True)),
    ("eps is added outside the square root. It belongs inside: (x - mean) / sqrt(var + eps).", _slip(eps_how="out")),
    ("eps is added outside the square root, as its own root: sqrt(var) + sqrt(eps) is not sqrt(var + eps). eps "
     "belongs inside: (x - mean) / sqrt(var + eps).", _slip(eps_how="root_out")),
    ("the variance is not centred: (x ** 2).mean(-1) is the mean square, the variance only when the mean is 0. "
     "Square the centred values, ((x - mean) ** 2).mean(-1), or x.var(dim=-1, unbiased=False).",
     # (not where the mean dwarfs the spread: there any answer that loses the spread looks like this one)
     lambda x, w, b, e: [] if float(x.double().mean(-1).abs().max()) > 1e3 else [_ln(x, w, b, e, rms=True)]),
    ("eps is missing: divide by sqrt(var + eps), not sqrt(var) (it matters when the variance is tiny).",
     _slip(eps_how="none")),
    ("it ignores the eps it was given: use self.eps (the value passed to __init__), not a fixed number.",
     lambda x, w, b, e: [_ln(x, w, b, fixed) for fixed in (1e-5, 1e-6, 1e-12, 1e-8) if fixed != e]),
    ("gamma (self.weight) and beta (self.bias) are swapped: y = x_hat * weight + bias.", _slip(swap=True)),
    ("gamma and beta are missing: after normalising, multiply by self.weight and add self.bias.",
     _slip(use_w=False, use_b=False)),
    ("gamma (self.weight) is missing: multiply the normalised x by self.weight before adding self.bias.",
     _slip(use_w=False)),
    ("beta (self.bias) is missing: add self.bias after multiplying by self.weight.", _slip(use_b=False)),
    ("the mean is not subtracted: x_hat = (x - mean) / sqrt(var + eps).", _slip(center=False)),
    ("the variance is clamped at eps (var.clamp(min=eps)) instead of having eps added: divide by "
     "sqrt(var + eps), which differs wherever the variance is small.", _slip(eps_how="clamp")),
    ("eps is squared: sqrt(var + eps ** 2) reads eps as a standard deviation. eps is added to the variance "
     "as it is: sqrt(var + eps).", _slip(eps_how="squared")),
    ("self.weight is changed before it is used (normalised or rescaled): multiply by gamma as it is, "
     "y = self.weight * x_hat + self.bias.",
     _slip(*({"weight_scale": scale} for scale in (lambda g: g / g.norm(), lambda g: g / g.abs().max(),
                                                   lambda g: g / g.sum())))),
    ("two slips: it normalises over the wrong axis (LayerNorm normalises each token over its own features, "
     "dim=-1, keepdim=True) and beta (self.bias) is never added.",
     lambda x, w, b, e: [_ln(x, w, b, e, dims=(d,), use_b=False) for d in range(x.dim() - 1)]),
]


def _affine(x, weight, bias, x_hat, after=0.0):
    """``weight * x_hat + bias (+ after)``, ``x_hat`` in float64, in ``x``'s dtype (for the slips below)."""
    return {"out": (x_hat * weight.double() + bias.double() + after).to(x.dtype)}


def _ln_parts(x):
    """x in float64, its mean and its centred values over the last dimension."""
    x64 = x.double()
    mean = x64.mean(-1, keepdim=True)
    return x64, mean, x64 - mean


def _ln_other_axis(x, w, b, e, which):
    """The mean (``which`` "mean") or the variance ("var") over another axis than the last, the other one right."""
    x64, mean, c = _ln_parts(x)
    var = (c * c).mean(-1, keepdim=True)
    out = []
    for d in range(x.dim() - 1):
        if which == "mean":
            m = x64.mean(d, keepdim=True)
            out.append(_affine(x, w, b, (x64 - m) / torch.sqrt(var + e)))
            # (the variance then centred on that mean, as x.var does not but (x - m) ** 2 does)
            out.append(_affine(x, w, b, (x64 - m) / torch.sqrt(((x64 - m) ** 2).mean(-1, keepdim=True) + e)))
        else:
            out.append(_affine(x, w, b, c / torch.sqrt(x64.var(d, keepdim=True, unbiased=False) + e)))
    return out


def _ln_swapped_stats(x, w, b, e):
    """``mean, var = torch.var_mean(...)`` (it returns var first), and ``mean, std = torch.std_mean(...)``."""
    x64, mean, c = _ln_parts(x)
    var = (c * c).mean(-1, keepdim=True)
    std = var.sqrt()
    return [_affine(x, w, b, (x64 - var) / torch.sqrt(mean + e)),
            _affine(x, w, b, (x64 - std) / torch.sqrt(mean ** 2 + e)),
            _affine(x, w, b, (x64 - std) / (mean + e))]


def _ln_x_hat(formula):
    """A slip that changes only x_hat: ``formula(x64, mean, centred, var, eps)``."""
    def make(x, w, b, e):
        x64, mean, c = _ln_parts(x)
        return _affine(x, w, b, formula(x64, mean, c, (c * c).mean(-1, keepdim=True), e))
    return make


def _ln_eps_after(x, w, b, e):
    """eps added to the normalised x (before or after gamma and beta) instead of to the variance."""
    _, _, c = _ln_parts(x)
    x_hat = c / (c * c).mean(-1, keepdim=True).sqrt()
    return [_affine(x, w, b, x_hat + e), _affine(x, w, b, x_hat, after=e)]


def _ln_wrong_count(x, w, b, e):
    """The sums over the features divided by the size of another dimension (x.shape[k]), for the mean, the
    variance or both."""
    x64, mean, c = _ln_parts(x)
    n, out = x.shape[-1], []
    for size in sorted({x.shape[k] for k in range(x.dim() - 1)} - {n}):
        m = x64.sum(-1, keepdim=True) / size
        for centre, count in ((m, size), (mean, size), (m, n)):
            v = ((x64 - centre) ** 2).sum(-1, keepdim=True) / count
            out.append(_affine(x, w, b, (x64 - centre) / torch.sqrt(v + e)))
    return out


def _ln_norm_not_std(x, w, b, e):
    """Divided by the norm of the centred x (sqrt(d_model) times its standard deviation), eps in or out."""
    _, _, c = _ln_parts(x)
    sq = (c * c).sum(-1, keepdim=True)
    return [_affine(x, w, b, c / (sq.sqrt() + e)), _affine(x, w, b, c / torch.sqrt(sq + e))]


# Found by probing learners' answers after the list above was written (kept after it: a tie goes to the first).
_LN_MISTAKES += [
    ("the variance is taken over another axis than the mean: both belong to the last dimension, "
     "x.var(dim=-1, unbiased=False, keepdim=True), each token over its own features.",
     lambda x, w, b, e: _ln_other_axis(x, w, b, e, "var")),
    ("the mean is taken over another axis than the variance: both belong to the last dimension, "
     "x.mean(dim=-1, keepdim=True), each token over its own features.",
     lambda x, w, b, e: _ln_other_axis(x, w, b, e, "mean")),
    ("the mean and the spread are swapped: torch.var_mean returns (var, mean), in that order, and "
     "torch.std_mean returns (std, mean). Write var, mean = torch.var_mean(x, dim=-1, keepdim=True, correction=0).",
     _ln_swapped_stats),
    ("the centred x is multiplied by the standard deviation instead of divided by it (is it divided by "
     "torch.rsqrt(...)? rsqrt is already 1 / sqrt): (x - mean) / sqrt(var + eps), or (x - mean) * "
     "torch.rsqrt(var + eps).", _ln_x_hat(lambda x64, m, c, v, e: c * torch.sqrt(v + e))),
    ("it takes the square root of the standard deviation: x.std() is already sqrt(var). Divide by "
     "sqrt(var + eps), var = x.var(dim=-1, unbiased=False, keepdim=True).",
     lambda x, w, b, e: [_ln_x_hat(lambda x64, m, c, v, e: c / torch.sqrt(v.sqrt() + e))(x, w, b, e),
                         _ln_x_hat(lambda x64, m, c, v, e: c / torch.sqrt(x64.std(-1, keepdim=True) + e))(
                             x, w, b, e)]),
    ("eps is added twice, inside the square root and again outside it: divide by sqrt(var + eps) alone.",
     _ln_x_hat(lambda x64, m, c, v, e: c / (torch.sqrt(v + e) + e))),
    ("eps is added to the normalised x, after the division, instead of to the variance: eps belongs under the "
     "square root, (x - mean) / sqrt(var + eps).", _ln_eps_after),
    ("eps is added to x - mean, above the fraction, instead of to the variance below it: "
     "(x - mean) / sqrt(var + eps).", _ln_x_hat(lambda x64, m, c, v, e: (c + e) / torch.sqrt(v))),
    ("the output is not normalised at all: it is self.weight * x + self.bias with x as it came in. Multiply "
     "the normalised x_hat = (x - mean) / sqrt(var + eps) by self.weight.",
     _ln_x_hat(lambda x64, m, c, v, e: x64)),
    ("the variance has lost its brackets: sum / d - 1 subtracts 1 from the variance (negative, so its square root "
     "is NaN). The variance is the mean of (x - mean)^2, the sum divided by d_model: "
     "((x - mean) ** 2).mean(dim=-1, keepdim=True).",
     _ln_x_hat(lambda x64, m, c, v, e: c / torch.sqrt(v - 1 + e))),
    ("a sum over the features is divided by the size of another dimension (x.shape[0] or x.shape[1]), not by "
     "the number of features: take the mean over the last dimension, x.mean(dim=-1, keepdim=True), or divide by "
     "x.shape[-1].", _ln_wrong_count),
    ("the centred values are squared in place (c.pow_(2), c **= 2 or c *= c on the tensor you divide), so the "
     "squares are divided instead of x - mean: square a copy, var = (c ** 2).mean(dim=-1, keepdim=True).",
     _ln_x_hat(lambda x64, m, c, v, e: c * c / torch.sqrt(v + e))),
    ("it divides by the norm of x - mean, which is sqrt(d_model) times the standard deviation: divide by "
     "sqrt(var + eps), var being the mean of (x - mean)^2 (the norm divided by sqrt(d_model) is the standard "
     "deviation).", _ln_norm_not_std),
]


_LN_HINT = ("y = weight * (x - mean) / sqrt(var + eps) + bias, with mean and the biased variance over the last "
            "dimension.")

_LN_UNREPEATABLE = ("a LayerNorm has nothing random in it, in train() mode too: no dropout inside it, no layer "
                    "built inside forward, nothing stored on self from one call to the next.\nHint: compute the "
                    "mean and variance of this x and apply self.weight and self.bias; nothing else.")

_LN_AXES = {2: ("token", "feature"), 3: ("sequence", "position", "feature"),
            4: ("sequence", None, "position", "feature")}

_LN_SETTINGS = [
    ({"bias": 0.0}, "with beta (self.bias) set to zero, in yours and in the reference, your output is right, so "
                    "the mistake is in how beta is used: add self.bias once, after multiplying by self.weight."),
    ({"weight": 1.0}, "with gamma (self.weight) set to one, in yours and in the reference, your output is right, "
                      "so the mistake is in how gamma is used: multiply the normalised x by self.weight."),
    ({"weight": 1.0, "bias": 0.0}, "with gamma one and beta zero your output is right, so the normalising is "
                                   "right and the mistake is in gamma and beta: y = self.weight * x_hat + "
                                   "self.bias, both as they are."),
]


def _ln_probe(pair, label, x) -> str:
    """Localise a LayerNorm mistake no listed slip (nor a parameter set alone) explains: what the output of
    gamma = 1, beta = 0 gets wrong (its mean, its spread, its response to a shift or a scale of x)."""
    rounded = _rounds_to_half(pair, label, x)
    if rounded:
        return rounded
    with pair.setting({"bias": 0.0, "weight": 2.0}, both=False), torch.no_grad():
        doubled = pair.call(label, x).double()
        _sub(pair.name, pair.cand, "weight").fill_(1.0)
        y = pair.call(label, x).double()
        shifted = pair.call(label, x + 3.0).double()
        scaled = pair.call(label, x * 4.0).double()
    if y.shape != x.shape or doubled.shape != x.shape:
        return ""
    if not _close(doubled, 2 * y, 2.0):
        fit = float((doubled * y).sum() / (y * y).sum().clamp_min(1e-30))
        return (f"with beta zero, gamma = 2 should give exactly twice the output of gamma = 1, but yours gives "
                f"{fit:.4g} times it: gamma (self.weight) must multiply the normalised x as it is, "
                "y = self.weight * x_hat + self.bias (no 1 + weight, no other change to it).")
    n = x.shape[-1]
    mean = y.mean(dim=-1)
    std = y.var(dim=-1, unbiased=False).sqrt()
    var = x.double().var(dim=-1, unbiased=False)
    spread = (var / (var + pair.ref.eps)).sqrt()
    if float(mean.abs().max()) > 1e-3:
        return (f"with gamma one and beta zero, each token's output should have mean 0 over its {n} features, but "
                f"yours has means up to {float(mean.abs().max()):.4g}: the mean of each token (dim=-1) is not "
                "subtracted as it should be.")
    if not _close(y, shifted, 10.0):
        return ("adding 3 to every feature of a token changes your output (by up to "
                f"{float((shifted - y).abs().max()):.4g}), but LayerNorm's output does not change, since the "
                "mean is subtracted: subtract each token's own mean over dim=-1 before dividing.")
    ratio = (std / spread)
    if float((ratio - 1).abs().max()) > 1e-3:
        r, low, high = float(ratio.median()), float(ratio.min()), float(ratio.max())
        found = (f"yours has {r:.4g} for every token" if high - low <= 1e-3 * high else
                 f"yours varies from token to token, from {low:.4g} to {high:.4g}, so each token's own spread is "
                 "not divided out (is the square root missing, or the variance of the wrong axis?)")
        return (f"with gamma one and beta zero, each token's output should have standard deviation 1 (its "
                f"variance over the {n} features, divided by n), but {found}: divide by sqrt(var + eps), var "
                "being the mean of (x - mean)^2 over dim=-1.")
    if not _close(y, scaled, 10.0):
        return ("multiplying a token by 4 changes your output (by up to "
                f"{float((scaled - y).abs().max()):.4g}), but LayerNorm's does not: the division must be by the "
                "token's own standard deviation, sqrt(var + eps).")
    return ""


def _rounds_to_half(pair, label, x) -> str:
    """Whether the learner's output stays exactly the same when x is first rounded to half precision: then the
    code itself rounds x to float16 or bfloat16 (a right answer's output follows every digit of x). Said only of
    an output within 1% of the reference's (one that ignores x, or most of it, is no rounding)."""
    if not x.is_floating_point() or x.dtype in (torch.float16, torch.bfloat16):
        return ""
    with torch.no_grad():
        got = pair.call(label, x)
        want = pair.want(x)
        if got.shape != want.shape or not _close(got, want, 500.0):
            return ""
        for dtype, name in ((torch.float16, "float16"), (torch.bfloat16, "bfloat16")):
            low = x.to(dtype).to(x.dtype)
            if not torch.equal(low, x) and torch.equal(pair.call(label, low), got):
                return (f"your output stays exactly the same when x is first rounded to {name}, so your code rounds "
                        f"x to {name} (a .half(), .bfloat16() or .to(torch.{name})), which keeps only about "
                        f"{3 if dtype == torch.float16 else 2} significant digits: compute in x's own dtype.")
    return ""


@_checker("layer_norm")
def check_layer_norm(cls):
    """Check a ``LayerNorm(d_model, eps=1e-5)`` class (parameters ``weight``, ``bias``)."""
    from ..layer_norm import LayerNorm as Reference

    name = exercise("layer_norm").name
    g = _gen(3)
    for d_model, eps, seed in ((16, None, 21), (8, 1e-3, 22)):
        kwargs = {} if eps is None else {"eps": eps}
        pair = Pair(name, cls, (d_model,), Reference(d_model, implementation="eager", **kwargs), ("weight", "bias"),
                    seed=seed, kwargs=kwargs, before=functools.partial(_default_eps, name, eps))
        ref = pair.ref
        w, b, e = ref.weight.detach(), ref.bias.detach(), ref.eps
        eps_txt = f"eps={e:g}"
        x = _randn(g, 2, 5, d_model) + 0.5
        cases = [
            (f"on x of shape (2, 5, {d_model}), {eps_txt}", x, ""),
            (f"on x of shape (4, {d_model}) (2-D input), {eps_txt}", _randn(g, 4, d_model) * 2 - 1, ""),
            (f"on tiny inputs (about 1e-3), {eps_txt}", x * 1e-3,
             "It works on ordinary inputs but not on tiny ones, where eps matters: "
             "(x - mean) / sqrt(var + eps), with the eps given to __init__."),
            (f"on large inputs (about 1000), {eps_txt}", x * 1e3, ""),
            (f"on x of shape (3, 2, 4, {d_model}) (4-D input), {eps_txt}", _randn(g, 3, 2, 4, d_model),
             "Normalise over the last dimension, dim=-1, whatever the number of dimensions."),
        ]
        for mode in pair.modes("eval", "train"):
            for label, xx, case_hint in cases:
                label = label if mode == "eval" else f"{label}, in train() mode"
                pair.check(label, (xx,), _LN_MISTAKES, (xx, w, b, e), _LN_HINT, repeat=True, case_hint=case_hint,
                           unrepeatable=_LN_UNREPEATABLE,
                           factor=2.0, probes=[pair.settings_probe(label, (xx,), _LN_SETTINGS, factor=2.0),
                                               functools.partial(_ln_probe, pair, label, xx)],
                           axes=_LN_AXES[xx.dim()])
        pair.gradients(cases[0][0], cases[0][1])
        # In float64, as after model.double(): the result must stay float64 (no .float() inside).
        pair.cand.double().eval()
        ref.double()
        x64 = x.double()
        label = f"on a float64 x of shape (2, 5, {d_model}) with the module in float64 (.double()), {eps_txt}"
        got, want = pair.call(label, x64), ref(x64)
        _compare_output(name, got, want, label, _LN_MISTAKES, (x64, w, b, e),
                        "compute in the input's dtype: no .float() or float32 constants as tensors.",
                        factor=2.0, axes=_LN_AXES[3])
        detour = _float32_detour(got, want)
        # A mean far from 0 next to the spread: the variance as E[x^2] - E[x]^2 loses its digits there, and so
        # does float32, whose 7 digits cannot hold 1e8 + 1.
        far = x64 + 1e8
        label = f"on a float64 x of 1e8 + values of about 1 (a mean large next to the spread), {eps_txt}"
        _compare_output(name, pair.call(label, far), ref(far), label, _LN_MISTAKES, (far, w, b, e),
                        f"{detour}. Float32's 7 digits cannot hold 1e8 + 1: keep x's dtype all the way (no "
                        ".float(); torch.zeros_like or x.new_full for new tensors)." if detour else
                        "it works until the mean is large next to the spread. Then E[x^2] - E[x]^2 subtracts two "
                        "nearly equal numbers and loses the variance's digits: compute the variance as the mean "
                        "of (x - mean)^2.", factor=2.0, axes=_LN_AXES[3])


def _default_eps(name, eps, cand, ref) -> None:
    """The exercise's __init__ keeps nn.LayerNorm's default eps."""
    default_eps = _contract_eps(name, cand, "")
    if eps is None and default_eps is not None and not math.isclose(default_eps, 1e-5, rel_tol=1e-6):
        raise ExerciseError(
            f"Your {name}'s default eps is {default_eps:g}; the exercise's (and nn.LayerNorm's) is 1e-5. "
            "Keep the __init__ the exercise gives: def __init__(self, d_model, eps=1e-5)."
        )
