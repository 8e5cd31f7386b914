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
        ("the hidden layer is multiplied by w1(x) again, a gated unit whose gate reuses w1. This feed-forward "
         "network is w2(act(w1(x))) (a gated variant such as SwiGLU has gate weights of its own).",
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

_CURVES = {
    "GELU": F.gelu, "ReLU": F.relu, "GELU's tanh approximation": lambda t: F.gelu(t, approximate="tanh"),
    "SiLU (swish)": F.silu, "the sigmoid": torch.sigmoid, "tanh": torch.tanh, "softplus": F.softplus,
    "ELU": F.elu, "Leaky ReLU": F.leaky_relu, "no activation (the identity)": lambda t: t,
}


def _curve_probe(pair, activation: str, label) -> str:
    """Show the activation alone: with w1 and w2 identity matrices and no biases, the network is act(x)."""
    try:  # a copy that cannot be built or run says nothing here
        fresh = pair.rebuild()
        d_model = _sub(pair.name, fresh, "w1.weight").shape[1]
        with torch.no_grad():
            for path in _FFN_PATHS:
                p = _sub(pair.name, fresh, path)
                p.copy_(torch.eye(*p.shape) if p.dim() == 2 else torch.zeros_like(p))
        fresh.eval()
        x = torch.cat([torch.linspace(-3.0, 3.0, 6 * d_model - 4), torch.tensor([-100.0, -10.0, 10.0, 100.0])])
        x = x.reshape(1, 6, d_model)  # (and a few large values, where a clamp or a saturation shows)
        order = torch.randperm(x.numel(), generator=_gen(3))
        with torch.no_grad():
            got = pair.call(label, x, module=fresh).double()
            moved = pair.call(label, x.reshape(-1)[order].reshape(x.shape), module=fresh).double()
    except ExerciseError:
        return ""
    want_name, xs = _NAMES[activation], x.double()
    act = _CURVES[want_name]
    if got.shape != x.shape or _close(got, act(xs), 2.0):
        return ""
    if moved.shape == got.shape and not _close(moved, got.reshape(-1)[order].reshape(got.shape), 2.0):
        return ("with w1 and w2 identity matrices and no biases, what your FeedForward makes of one value depends on "
                "the others: the same values put in other places come out as other values. Something besides w1 "
                "and w2 mixes the features or the positions (a mean, a norm, a softmax); the activation works on "
                "each value by itself: w2(activation(w1(x))) and no more.")
    curves = {**_CURVES, f"x + {want_name}(x) (the input added back)": lambda t: t + act(t),
              f"{want_name} applied twice": lambda t: act(act(t))}
    found = [curve for curve, f in curves.items() if curve != want_name and _close(got, f(xs), 2.0)]
    inputs, flat, ref = xs.reshape(-1), got.reshape(-1), act(xs).reshape(-1)
    worst = int((flat - ref).abs().argmax())
    at = sorted({int((inputs - point).abs().argmin()) for point in (-1.0, 1.0, 3.0)} | {worst})
    values = ", ".join(f"f({float(inputs[i]):.3g}) = {float(flat[i]):.4g} (not {float(ref[i]):.4g})" for i in at)
    big = ref.abs() > 1e-2 * float(ref.abs().max())
    ratio = flat[big] / ref[big]
    if not found and float(ratio.max() - ratio.min()) < 1e-4 * float(ratio.abs().max()):
        c = float(ratio.mean())
        return (f"with w1 and w2 identity matrices and no biases, your FeedForward returns {want_name}(x) times "
                f"{c:.4g}: the activation is right and something scales the output. Nothing should"
                + (" (if it makes up for dropout: in eval() mode nn.Dropout does nothing, and in training it "
                   "already divides what it keeps by 1 - p, so there is nothing to make up for)." if c < 1 else ".")
                + " The layer is w2(activation(w1(x))) and no more.")
    seen = f"it is {found[0]}" if found else "it is none of the usual ones"
    return (f"with w1 and w2 identity matrices and no biases, your FeedForward returns its activation of x alone, "
            f"and {seen}: {values}. This one should be {want_name}"
            + (": F.gelu(h) (the exact GELU, with the erf)." if want_name == "GELU" else ": F.relu(h)."))


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
                           probes=[pair.settings_probe(label, (xx,), _FFN_SETTINGS),
                                   functools.partial(_curve_probe, pair, act, label)],
                           axes=("sequence", "position", "feature"))
        pair.gradients(f"{setting}, {cases[0][0]}, in eval() mode", x)
