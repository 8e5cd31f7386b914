"""Checker of the ``FeedForward`` class (notebook 06): w1, the activation, w2, and nothing else."""

from __future__ import annotations

import functools

import torch
import torch.nn.functional as F

from ._compare import _close, slips
from ._modules import Pair, _build, _sub
from ._run import ExerciseError, _checker, _gen, _randn
from .registry import exercise

_ACTS = {
    "gelu": F.gelu, "relu": F.relu, "none": lambda t: t, "tanh": lambda t: F.gelu(t, approximate="tanh"),
    "sigmoid": lambda t: t * torch.sigmoid(1.702 * t), "silu": F.silu,
    "erf_no_sqrt2": lambda t: 0.5 * t * (1 + torch.erf(t / 2)),
}
_NAMES = {"gelu": "GELU", "relu": "ReLU"}


def _ffn(x, p, *, act, act_out=False, residual=False, bias=True, act_in=False, gate=False, tied=False):
    x64, p = x.double(), {path: value.double() for path, value in p.items()}
    linear_h = F.linear(_ACTS[act](x64) if act_in else x64, p["w1.weight"], p["w1.bias"] if bias else None)
    h = linear_h if act_in else _ACTS[act](linear_h)
    if gate:  # a gated unit that reuses w1 for its gate
        h = h * linear_h
    y = F.linear(h, p["w1.weight"].T if tied else p["w2.weight"], p["w2.bias"] if bias else None)
    y = _ACTS[act](y) if act_out else y
    return {"out": (y + x64 if residual else y).to(x.dtype)}


_slip = slips(_ffn)


def _ffn_mistakes(expected: str):
    other = "relu" if expected == "gelu" else "gelu"
    mistakes = [
        (f"it uses {_NAMES[other]} where this feed-forward network should use {_NAMES[expected]}"
         + {"gelu": " (the default activation is the exact GELU: F.gelu(h)).",
            "relu": " (activation='relu' was asked: F.relu(h); read self.activation)."}[expected], _slip(act=other)),
        ("there is no non-linearity between w1 and w2: apply the activation to w1(x) before w2.", _slip(act="none")),
        ("the activation is also applied after w2; the output is w2(act(w1(x))), with nothing after w2.",
         _slip(act=expected, act_out=True)),
        ("it adds the input back (a residual). The feed-forward network returns w2(act(w1(x))) only; "
         "the encoder block adds the residual.", _slip(act=expected, residual=True)),
        ("the biases of w1 and w2 are missing: call the layers, self.w1(x), or pass their bias to F.linear.",
         _slip(act=expected, bias=False)),
        ("the activation is applied to x before w1; it belongs between the two layers: w2(act(w1(x))).",
         _slip(act=expected, act_in=True)),
        ("the hidden layer is multiplied by w1(x) again, a gated unit whose gate reuses w1"
         + (" (or ReLU squared, relu(h) ** 2, which is the same: relu(h) * h)" if expected == "relu" else "")
         + ". This feed-forward network is w2(act(w1(x))) (a gated variant such as SwiGLU has gate weights of its "
         "own).",
         _slip(act=expected, gate=True)),
        ("the second layer uses w1's weight (transposed) instead of w2's: call self.w2(h), which has its own "
         "weight (d_model, d_ff).", _slip(act=expected, tied=True)),
    ]
    if expected == "gelu":
        mistakes += [
            ("it uses an approximation of GELU (tanh or sigmoid). The course uses the exact GELU with "
             "the erf: F.gelu(h) (approximate='none').", _slip({"act": "tanh"}, {"act": "sigmoid"})),
            ("it uses SiLU (swish) instead of GELU: use F.gelu(h).", _slip(act="silu")),
            ("the GELU divides by 2 inside the erf; the exact GELU is 0.5 * h * (1 + erf(h / sqrt(2))), "
             "which is F.gelu(h).", _slip(act="erf_no_sqrt2")),
        ]
    return mistakes


_FFN_PATHS = ("w1.weight", "w1.bias", "w2.weight", "w2.bias")

_FFN_SETTINGS = [
    ({"w2.bias": 0.0}, "with w2's bias set to zero, in yours and in the reference, your output is right, so the "
                       "mistake is in how w2's bias is used: the output is self.w2(h), its bias added once."),
    ({"w1.bias": 0.0}, "with w1's bias set to zero, in yours and in the reference, your output is right, so the "
                       "mistake is in how w1's bias is used: h = self.w1(x), its bias added once, before the "
                       "activation."),
    ({"w1.weight": "identity", "w1.bias": 0.0},
     "with w1 an identity matrix and no bias, in yours and in the reference, your output is right, so the mistake "
     "is in how w1 is applied: the first step is h = self.w1(x) (x @ W1^T + b1, which the layer computes)."),
    ({"w2.weight": "identity", "w2.bias": 0.0},
     "with w2 an identity matrix and no bias, in yours and in the reference, your output is right, so the mistake "
     "is in how w2 is applied: the last step is self.w2(h) on the activated hidden layer, nothing after it."),
]

_SQRT2 = 2 ** 0.5
_CURVES = {
    "GELU": F.gelu, "ReLU": F.relu, "GELU's tanh approximation": lambda t: F.gelu(t, approximate="tanh"),
    "SiLU (swish)": F.silu, "the sigmoid": torch.sigmoid, "tanh": torch.tanh, "softplus": F.softplus,
    "ELU": F.elu, "Leaky ReLU": F.leaky_relu, "no activation (the identity)": lambda t: t,
    "|x|, the absolute value: negative values come out positive": torch.abs,
    "min(0, x), which keeps the negative values and makes the positive ones 0 (ReLU does the opposite)":
        lambda t: t.clamp(max=0),
    "0.5 * x * erf(x / sqrt(2)), GELU without the 1 + inside the bracket": lambda t: 0.5 * t * torch.erf(t / _SQRT2),
    "x * erf(x / sqrt(2)), GELU without the 0.5 and without the 1 + inside the bracket":
        lambda t: t * torch.erf(t / _SQRT2),
    "0.5 * (1 + erf(x / sqrt(2))), the normal CDF without GELU's factor x": lambda t: 0.5 * (1 + torch.erf(t / _SQRT2)),
    "0.5 * x * (1 - erf(x / sqrt(2))), with 1 - where GELU has 1 +": lambda t: 0.5 * t * (1 - torch.erf(t / _SQRT2)),
    "0.5 * x * (1 + tanh(x / sqrt(2))), tanh where the exact GELU has erf":
        lambda t: 0.5 * t * (1 + torch.tanh(t / _SQRT2)),
}
_BIG = 4  # the probe's last inputs: -100, -10, 10, 100


def _near(got, want) -> bool:
    """Close on the ordinary inputs, and apart on the few large ones (whose size would hide a small difference)."""
    g, w = got.reshape(-1), want.reshape(-1)
    return (got.shape == want.shape and _close(g[:-_BIG], w[:-_BIG], 2.0)
            and _close(g[-_BIG:], w[-_BIG:], 2.0))


def _identity_ffn(pair, w2_bias: float = 0.0):
    """A new copy of the learner's class with w1 and w2 identity matrices, w1's bias 0 and w2's ``w2_bias``."""
    fresh = pair.rebuild()
    with torch.no_grad():
        for path in _FFN_PATHS:
            p = _sub(pair.name, fresh, path)
            p.copy_(torch.eye(*p.shape) if p.dim() == 2 else torch.full_like(p, w2_bias if path == "w2.bias" else 0))
    return fresh.eval()


def _erf_constant(xs, got):
    """The c for which ``got`` is 0.5 * x * (1 + erf(x / c)) on the ordinary inputs (None when none is)."""
    x, y = xs.reshape(-1)[:-_BIG], got.reshape(-1)[:-_BIG]
    keep = (x.abs() > 0.2) & (x.abs() < 2.5)
    t = 2 * y[keep] / x[keep] - 1
    if not bool(((t.abs() < 1) & (t != 0)).all()):
        return None
    c = float((x[keep] / torch.erfinv(t)).median())
    if not 0.05 < c < 50 or not _near(got, 0.5 * xs * (1 + torch.erf(xs / c))):
        return None
    return c


def _alone(pair, label):
    """``(x, got, moved)``: a copy with w1 and w2 identity matrices and no biases (the network is then act(x)) on
    ``x`` (1, 6, d_model), values from -3 to 3 and a few large ones, and on the same values shuffled (``moved``, in
    x's order again); None when the copy cannot be built or run."""
    try:
        fresh = _identity_ffn(pair)
        d_model = _sub(pair.name, fresh, "w1.weight").shape[1]
        x = torch.cat([torch.linspace(-3.0, 3.0, 6 * d_model - _BIG), torch.tensor([-100.0, -10.0, 10.0, 100.0])])
        x = x.reshape(1, 6, d_model)  # (and a few large values, where a clamp or a saturation shows)
        order = torch.randperm(x.numel(), generator=_gen(3))
        with torch.no_grad():
            got = pair.call(label, x, module=fresh).double()
            moved = pair.call(label, x.reshape(-1)[order].reshape(x.shape), module=fresh).double()
    except ExerciseError:
        return None
    if moved.shape == got.shape:
        back = torch.empty_like(moved.reshape(-1))
        back[order] = moved.reshape(-1)
        moved = back.reshape(moved.shape)
    return x, got, moved


def _values(xs, got, ref, digits: int = 4) -> str:
    """A few of the activation's values, at about -1, 1 and 3 and where it is furthest from ``ref``."""
    inputs, flat, ref = xs.reshape(-1), got.reshape(-1), ref.reshape(-1)
    worst = int((flat - ref).abs().argmax())
    at = sorted({int((inputs - point).abs().argmin()) for point in (-1.0, 1.0, 3.0)} | {worst})
    return ", ".join(f"f({float(inputs[i]):.3g}) = {float(flat[i]):.{digits}g} (not {float(ref[i]):.{digits}g})"
                     for i in at)


def _erf_probe(pair, activation: str, label) -> str:
    """A GELU written out whose constant inside the erf is not sqrt(2), read back from the activation alone (first
    of the probes: 1.414 is too near for the others to see on the activation, not on the whole layer)."""
    found = _alone(pair, label) if activation == "gelu" else None
    if found is None:
        return ""
    x, got, _ = found
    xs = x.double()
    c = _erf_constant(xs, got) if got.shape == x.shape else None
    if c is None or abs(c - _SQRT2) <= 5e-5:
        return ""
    shown = f"{c:.5g}"
    k = round(c / _SQRT2)  # k * GELU(x / k) is 0.5 * x * (1 + erf(x / (k * sqrt(2))))
    how = (" (x * sqrt(2) where x / sqrt(2) belongs)" if abs(c - 1 / _SQRT2) < 5e-5 else
           " (erf(x), nothing dividing x)" if abs(c - 1) < 5e-5 else
           f" (the same as {k} * GELU(x / {k}): is x divided by {k} before the activation and the result multiplied "
           f"by {k} after it?)" if k >= 2 and abs(c / _SQRT2 - k) < 5e-5 else "")
    return (f"with w1 and w2 identity matrices and no biases, your FeedForward returns 0.5 * x * (1 + erf(x / "
            f"{shown})){how}: {_values(xs, got, F.gelu(xs), 6)}. The constant inside the erf is {shown}, where the "
            "exact GELU has sqrt(2) = 1.41421...: 0.5 * h * (1 + torch.erf(h / math.sqrt(2))), which is F.gelu(h).")


def _curve_probe(pair, activation: str, label) -> str:
    """Show the activation alone: with w1 and w2 identity matrices and no biases, the network is act(x)."""
    found = _alone(pair, label)
    if found is None:  # a copy that cannot be built or run says nothing here
        return ""
    x, got, moved = found
    want_name, xs = _NAMES[activation], x.double()
    act = _CURVES[want_name]
    if got.shape != x.shape or _near(got, act(xs)):
        return ""
    if moved.shape == got.shape and not _close(moved, got, 2.0):
        return ("with w1 and w2 identity matrices and no biases, what your FeedForward makes of one value depends on "
                "the others: the same values put in other places come out as other values. Something besides w1 "
                "and w2 mixes the features or the positions (a mean, a norm, a softmax); the activation works on "
                "each value by itself: w2(activation(w1(x))) and no more.")
    curves = {**_CURVES, f"x + {want_name}(x) (the input added back)": lambda t: t + act(t),
              f"{want_name} applied twice": lambda t: act(act(t))}
    found = [curve for curve, f in curves.items() if curve != want_name and _near(got, f(xs))]
    values = _values(xs, got, act(xs))
    flat, ref = got.reshape(-1), act(xs).reshape(-1)
    big = ref.abs() > 1e-2 * float(ref.abs().max())
    ratio = flat[big] / ref[big]
    c = float(ratio.mean())
    dropout = (" (if it makes up for dropout: in eval() mode nn.Dropout does nothing, and in training it already "
               "divides what it keeps by 1 - p, so there is nothing to make up for)." if c < 1 else ".")
    if not found and float(ratio.max() - ratio.min()) < 1e-4 * float(ratio.abs().max()) and _near(got, c * act(xs)):
        inside = _scaled_inside(pair, label, x, xs, act, c)
        if inside and want_name == "GELU" and abs(c - 2) < 1e-3:
            return ("with w1 and w2 identity matrices and no biases, your FeedForward returns GELU(x) times 2, and "
                    "with w2's bias set to 1 as well it returns 2 * GELU(x) + 1: the activation itself is doubled. "
                    "If you wrote GELU out, its 0.5 is missing: 0.5 * h * (1 + torch.erf(h / math.sqrt(2))) (or "
                    "something else doubles the hidden layer). Use F.gelu(h).")
        if inside:
            return (f"with w1 and w2 identity matrices and no biases, your FeedForward returns {want_name}(x) times "
                    f"{c:.4g}, and with w2's bias set to 1 as well it returns {c:.4g} * {want_name}(x) + 1: the "
                    "activation is right and something scales the hidden layer after it, before w2. Nothing should"
                    f"{dropout} The layer is w2(activation(w1(x))) and no more.")
        return (f"with w1 and w2 identity matrices and no biases, your FeedForward returns {want_name}(x) times "
                f"{c:.4g}: the activation is right and something scales the output. Nothing should{dropout} The "
                "layer is w2(activation(w1(x))) and no more.")
    if found and found[0].startswith("|x|") and want_name == "ReLU":
        return (f"with w1 and w2 identity matrices and no biases, your FeedForward returns its activation of x alone, "
                f"and it is {found[0]}: {values}. ReLU is max(0, x), which makes every negative value 0, where the "
                "absolute value (h.abs()) turns it positive: use F.relu(h) (or h.clamp(min=0)).")
    seen = f"it is {found[0]}" if found else "it is none of the usual ones"
    return (f"with w1 and w2 identity matrices and no biases, your FeedForward returns its activation of x alone, "
            f"and {seen}: {values}. This one should be {want_name}"
            + (": F.gelu(h) (the exact GELU, with the erf)." if want_name == "GELU" else
               ": F.relu(h), max(0, h), 0 for every negative value."))


def _scaled_inside(pair, label, x, xs, act, c) -> bool:
    """Whether a factor ``c`` on the activation comes before w2's bias (in the hidden layer): with that bias 1, the
    output is then c * act(x) + 1, where a factor on the output gives c * (act(x) + 1)."""
    try:
        fresh = _identity_ffn(pair, w2_bias=1.0)
        with torch.no_grad():
            got = pair.call(label, x, module=fresh).double()
    except ExerciseError:
        return False
    return _near(got, c * act(xs) + 1) and not _near(got, c * (act(xs) + 1))


def _takes_activation(name, cls) -> bool:
    """Whether the class takes the exercise's ``activation`` argument, found by building one with it (never
    from the signature the class reports). A class that refuses the argument itself is GELU only, which the
    exercise allows; one that takes it must then follow it."""
    try:
        _build(name, cls, 8, 16, activation="relu")
    except ExerciseError as exc:
        if isinstance(exc.__cause__, TypeError) and "activation" in str(exc.__cause__):
            return False
        raise
    return True


_FFN_HINT = ("output = w2(activation(w1(x))), the same for every position; take the sizes from x, never fixed "
             "numbers.")
_FFN_RANDOM = ("this FeedForward was built without dropout (the exercise's has none), so nothing in it may be "
               "random, even in train() mode.")


@_checker("feed_forward")
def check_feed_forward(cls):
    """Check a ``FeedForward(d_model, d_ff)`` class (``w1``, ``w2``, exact GELU by default)."""
    from ..feed_forward import FeedForward as Reference

    name = exercise("feed_forward").name
    g = _gen(4)
    settings = [(8, 32, None, 31), (6, 10, None, 32)]
    if _takes_activation(name, cls):
        settings += [(8, 16, "relu", 33), (8, 16, "gelu", 34)]
    for d_model, d_ff, activation, seed in settings:
        kwargs = {} if activation is None else {"activation": activation}
        pair = Pair(name, cls, (d_model, d_ff), Reference(d_model, d_ff, **kwargs), _FFN_PATHS, seed=seed,
                    kwargs=kwargs)
        act = activation or "gelu"
        x = _randn(g, 2, 5, d_model)
        setting = f"with d_model={d_model}, d_ff={d_ff}" + (f", activation={activation!r}" if activation else "")
        cases = [(f"x (2, 5, {d_model})", x), ("tiny inputs (about 1e-3)", x * 1e-3),
                 ("large inputs (about 1000)", x * 1e3), (f"x (1, 3, {d_model})", _randn(g, 1, 3, d_model)),
                 (f"x (4, 7, {d_model})", _randn(g, 4, 7, d_model))]
        for mode in pair.modes("eval", "train"):
            for case, xx in cases:
                label = f"{setting}, {case}, in {mode}() mode"
                pair.check(label, (xx,), _ffn_mistakes(act), (xx, pair.params()), _FFN_HINT, random_hint=_FFN_RANDOM,
                           probes=[functools.partial(_erf_probe, pair, act, label),
                                   pair.settings_probe(label, (xx,), _FFN_SETTINGS),
                                   functools.partial(_curve_probe, pair, act, label)],
                           axes=("sequence", "position", "feature"))
        pair.gradients(f"{setting}, {cases[0][0]}, in eval() mode", x)
