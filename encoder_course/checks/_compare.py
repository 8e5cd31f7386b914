"""Comparing the learner's numbers with the reference's, and probing them.

The tolerance and the closeness test, where two results differ, which known mistake a result
matches, whether the gradients agree, and whether anything random hides in the learner's code.
When no known mistake fits, a probe localises the difference (:func:`probe`, :func:`_describe`).
"""

from __future__ import annotations

import functools
import math

import torch

from ._run import ExerciseError, _gen, _randn, _shape

_ATOL = 2e-5  # times the largest reference value
_RTOL = 1e-4
_RNG_PROBE_SEED = 20_170_612  # any value a learner is unlikely to pass to torch.manual_seed


# ----------------------------------------------------------------------------------------------
# Closeness: one tolerance for every comparison, and the known mistakes


def _float32_detour(got: torch.Tensor, want: torch.Tensor) -> str:
    """How many digits a float64 ``got`` shares with ``want`` when that says it went through float32 ("" otherwise).

    Use on ordinary values only (about 1): there two float64 ways of computing agree to about 1e-15 of the
    largest value, a detour through float32 leaves differences near 1e-7.
    """
    if want.dtype != torch.float64 or got.dtype != torch.float64 or got.shape != want.shape:
        return ""
    g, w = got.detach(), want.detach()
    ok = torch.isfinite(w) & torch.isfinite(g)
    scale = float(w[ok].abs().max()) if ok.any() else 0.0
    err = float((g[ok] - w[ok]).abs().max()) if ok.any() else 0.0
    if not scale or err <= 1e-10 * scale:
        return ""
    return (f"on an ordinary float64 input it agrees with the reference to about {-math.log10(err / scale):.0f} "
            "significant digits, where float64 carries about 15: it computes in float32 somewhere (a .float(), "
            "or a new tensor made without dtype=x.dtype) and the float64 weights bring the result back to float64")


def _close(got: torch.Tensor, want: torch.Tensor, factor: float = 1.0) -> bool:
    if got.shape != want.shape:
        return False
    got, want = got.detach().double(), want.detach().double()
    nan_got, nan_want = torch.isnan(got), torch.isnan(want)
    if not torch.equal(nan_got, nan_want):
        return False
    ok = ~nan_want
    g, w = got[ok], want[ok]
    if w.numel() == 0:
        return True
    if torch.isinf(g).any() or torch.isinf(w).any():
        return bool(torch.equal(torch.isinf(g), torch.isinf(w))) and bool(
            torch.equal(g[torch.isinf(g)], w[torch.isinf(w)])
        )
    scale = float(w.abs().max())
    bound = factor * (_ATOL * scale + _RTOL * w.abs()) + 1e-30
    return bool(((g - w).abs() <= bound).all())


def _where_differs(got: torch.Tensor, want: torch.Tensor) -> str:
    diff = (got.detach().double() - want.detach().double()).abs()
    diff = torch.nan_to_num(diff, nan=float("inf"))
    flat = int(diff.argmax())
    index = tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), diff.shape))
    g, w = float(got.detach().reshape(-1)[flat]), float(want.detach().reshape(-1)[flat])
    return f"the largest difference is at index {index}: you have {g:.6g}, the reference {w:.6g}"


def _distance(got: torch.Tensor, want: torch.Tensor) -> float:
    g, w = got.detach().double(), want.detach().double()
    ok = ~torch.isnan(w)
    if not ok.any():
        return 0.0
    diff = torch.nan_to_num((g[ok] - w[ok]).abs(), nan=float("inf"), posinf=float("inf"))
    return float(diff.max()) / (float(torch.nan_to_num(w[ok].abs()).max()) + 1e-30)


def _first_match(got: dict, variants, *args, factor: float = 1.0) -> str | None:
    """Name the mistake whose result matches ``got`` on every given key (the closest one wins;
    near-ties go to the one listed first). ``factor`` widens the tolerance."""
    best, best_distance = None, float("inf")
    for message, make in variants:
        try:
            alt = make(*args)
        except Exception:  # a variant that cannot be computed for these shapes
            continue
        alts = alt if isinstance(alt, (list, tuple)) and alt and isinstance(alt[0], dict) else [alt]
        for one in alts:
            if all(k in one and _close(got[k], one[k], factor) for k in got):
                distance = max(_distance(got[k], one[k]) for k in got)
                if distance < 0.1 * best_distance:
                    best, best_distance = message, distance
    return best


def slips(reference):
    """``slip(*options, **common)``: a listed mistake's results, ``reference(*args, **common, **one)`` for each of
    the ``options`` (keyword dicts) in turn, or once with ``common`` alone."""
    def slip(*options, **common):
        return lambda *args: [reference(*args, **common, **one) for one in options or [{}]]
    return slip


# ----------------------------------------------------------------------------------------------
# Probes: what a mistake nobody listed is, found by varying one thing at a time


#: When a list, every diagnosis a probe gives is appended to it (the tests count who named a mistake).
_PROBED: list | None = None


def _note(found: str) -> str:
    """Record ``found``, a probe's diagnosis (when the tests are listening), and return it."""
    if found and _PROBED is not None:
        _PROBED.append(found)
    return found


def probe(fn):
    """Mark ``fn`` as a probe: it returns a diagnosis ("" when it finds none), which is recorded."""
    @functools.wraps(fn)
    def probing(*args, **kwargs):
        return _note(fn(*args, **kwargs))
    return probing


def _elementwise_bad(got: torch.Tensor, want: torch.Tensor, factor: float = 1.0) -> torch.Tensor:
    """Where ``got`` is outside the tolerance of :func:`_close` (NaN against a number counts as outside)."""
    g, w = got.detach().double(), want.detach().double()
    scale = float(torch.nan_to_num(w, nan=0.0, posinf=0.0, neginf=0.0).abs().max()) if w.numel() else 0.0
    bound = factor * (_ATOL * scale + _RTOL * w.abs()) + 1e-30
    both_nan = torch.isnan(g) & torch.isnan(w)
    same_inf = torch.isinf(g) & torch.isinf(w) & (g == w)
    return ~(both_nan | same_inf | ((g - w).abs() <= bound))


def _spans(indices: list[int]) -> str:
    """``[0, 1, 2, 5]`` as "0-2 and 5"."""
    runs: list[list[int]] = []
    for i in indices:
        if runs and i == runs[-1][1] + 1:
            runs[-1][1] = i
        else:
            runs.append([i, i])
    shown = [f"{a}" if a == b else f"{a}-{b}" for a, b in runs]
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + " and " + shown[-1]


def _permuted(g: torch.Tensor, w: torch.Tensor, bad: torch.Tensor, dim: int, axis: str) -> str:
    """If ``g`` is ``w`` with its entries along ``dim`` reordered, say which entry went where."""
    n = g.shape[dim]
    if n < 2 or n > 64:
        return ""
    moved = {}
    for i in range(n):
        if not bad.select(dim, i).any():
            continue
        found = [j for j in range(n) if j != i
                 and not _elementwise_bad(g.select(dim, i), w.select(dim, j)).any()]
        if not found:
            return ""
        moved[i] = found[0]
    if not moved:
        return ""
    shown = "; ".join(f"your {axis} {i} holds the reference's {axis} {j}" for i, j in list(moved.items())[:3])
    if sorted(moved) == sorted(moved.values()):
        return f"your result has the right {_plural(axis)} in the wrong order ({shown})"
    return f"some {_plural(axis)} of yours hold the values of another {axis} ({shown})"


def _fitted_factor(error, low: float, high: float, tolerance: float) -> float | None:
    """The positive number c between 10^low and 10^high with the least ``error(c)``: the best of a log grid,
    narrowed down around it; None when even that one is off by more than ``tolerance``."""
    c = min((10 ** e for e in torch.linspace(low, high, 81).tolist()), key=error)
    a, b = c / 1.13, c * 1.13
    for _ in range(50):
        third, two_thirds = a + (b - a) / 3, b - (b - a) / 3
        a, b = (a, two_thirds) if error(third) < error(two_thirds) else (third, b)
    c = (a + b) / 2
    return c if error(c) <= tolerance else None


def _plural(word: str) -> str:
    """query -> queries, position -> positions."""
    return word[:-1] + "ies" if word.endswith("y") and word[-2:-1] not in "aeiou" else word + "s"


def _describe(got: torch.Tensor, want: torch.Tensor, axes=(), factor: float = 1.0) -> str:
    """Where and how ``got`` differs from ``want``: the first cause a probe of the numbers finds.

    ``axes`` names each dimension ("sequence", "position", "feature"; None for one not to report).
    Tried in turn: entries in the wrong order along one axis; one factor or one offset for every
    value; which entries of each axis differ (and which are right); and the largest difference.
    """
    g, w = got.detach().double(), want.detach().double()
    bad = _elementwise_bad(g, w, factor)
    axes = tuple(axes) + (None,) * (g.dim() - len(axes))
    for dim, axis in enumerate(axes):
        if axis:
            moved = _permuted(g, w, bad, dim, axis)
            if moved:
                return moved + "."
    finite = torch.isfinite(g) & torch.isfinite(w)
    gf, wf = g[finite], w[finite]
    if gf.numel() > 3 and float(wf.abs().max()) > 0:  # with a few values, a factor or an offset always fits
        # Said only where it explains the difference: what is left after it is a small part of what was there
        # (rounding errors of all sizes and signs, say, are not a factor or an offset, whatever their mean).
        differs = float((gf - wf).abs().max())
        ratio = float((gf * wf).sum() / (wf * wf).sum())
        if (abs(ratio - 1) > 1e-3 and not _elementwise_bad(gf, ratio * wf, 4 * factor).any()
                and float((gf - ratio * wf).abs().max()) <= 0.25 * differs):
            sign = " (the sign flipped)" if ratio < 0 else ""
            return (f"every value of yours is {ratio:.4g} times the reference's{sign}: the pattern is right, "
                    "a factor is wrong.")
        offset = float((gf - wf).mean())
        if (abs(offset) > 1e-6 and not _elementwise_bad(gf - offset, wf, 4 * factor).any()
                and float((gf - offset - wf).abs().max()) <= 0.25 * differs):
            return f"every value of yours is off by the same {offset:.4g}: the pattern is right, a constant is added."
    where = []
    for dim, axis in enumerate(axes):
        n = g.shape[dim]
        if not axis or n < 2:
            continue
        wrong = [i for i in range(n) if bad.select(dim, i).any()]
        if 0 < len(wrong) < n:
            right = [i for i in range(n) if i not in wrong]
            many, rest = len(wrong) > 1, len(right) > 1
            where.append(f"{_plural(axis) if many else axis} {_spans(wrong)} of {n} differ{'' if many else 's'} "
                         f"({_plural(axis) if rest else axis} {_spans(right)} {'are' if rest else 'is'} right)")
    count = int(bad.sum())
    share = f"{count} of {bad.numel()} values are wrong"
    if where:
        share += ": only " + "; ".join(where)
    elif count == bad.numel():
        share = f"all {count} values are wrong"
    return f"{share}; {_where_differs(got, want)}."


# ----------------------------------------------------------------------------------------------
# Randomness: is anything random, or seeded, inside the learner's code?


def _identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and values (NaN equal to NaN): how a repeated call of a right answer compares."""
    return (a.shape == b.shape and a.dtype == b.dtype
            and torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))


def _fresh_rng_state() -> torch.Tensor:
    """Seed torch's generator with a value of the checker's own and return that state.

    Code that draws random numbers, or that seeds the generator itself (torch.manual_seed inside a
    forward), leaves a different state behind. (The checkers run inside ``fork_rng``, so the
    learner's own random state is untouched.)
    """
    torch.manual_seed(_RNG_PROBE_SEED)
    return torch.random.get_rng_state()


def _random_inside(rerun, got) -> str:
    """Call the learner's code again on the same input: is anything random inside it?"""
    state = _fresh_rng_state()
    again = rerun()
    if not isinstance(again, torch.Tensor):
        return ""
    if not _identical(again, got):
        return "two calls on the same input give different outputs"
    if not torch.equal(state, torch.random.get_rng_state()):
        return "it draws random numbers (torch's random state changes during a call)"
    return ""


# ----------------------------------------------------------------------------------------------
# Gradients: the right numbers must also train


def _gradients(fn, inputs: dict, params: dict, seed: int):
    """Run ``fn`` on copies of ``inputs`` that require grad; return (outputs, gradients by name).

    The loss is a random weighting of every output (``fn`` returns a tensor or a tuple of tensors),
    so each output element's gradient path counts.
    """
    leaves = {k: v.detach().clone().requires_grad_(True) for k, v in inputs.items()}
    for tensor in params.values():
        tensor.grad = None
    with torch.enable_grad():
        outs = fn(**leaves)
        outs = outs if isinstance(outs, (tuple, list)) else (outs,)
        if not all(isinstance(o, torch.Tensor) for o in outs):
            return outs, None
        if not any(o.requires_grad for o in outs):
            return outs, {}
        g = _gen(seed)
        loss = sum((o * _randn(g, *o.shape).to(o.dtype)).sum() for o in outs if o.requires_grad)
        targets = {**leaves, **params}
        grads = torch.autograd.grad(loss, list(targets.values()), allow_unused=True)
    return outs, dict(zip(targets, grads))


def _check_gradients(name, label, cand_fn, ref_fn, inputs: dict, cand_params=None, ref_params=None):
    """The learner's code must pass gradients back to its inputs and parameters as the reference does."""
    cand_params, ref_params = cand_params or {}, ref_params or {}
    _, want = _gradients(ref_fn, inputs, ref_params, seed=99)
    try:
        _, got = _gradients(cand_fn, inputs, cand_params, seed=99)
    except RuntimeError as exc:  # raised by backward (the learner's own errors come as ExerciseError)
        raise ExerciseError(
            f"Backpropagating through your {name} fails {label}: {exc}\nHint: an in-place operation (x += ..., "
            "masked_fill_, relu_) changed a tensor that autograd still needed; write it out of place "
            "(x = x + ..., masked_fill)."
        ) from exc
    if got is None:
        return  # the output checks have already said what is wrong
    for key, ref_grad in want.items():
        mine = got.get(key)
        if ref_grad is None or mine is None or mine.shape != ref_grad.shape:
            continue
        broken = ~torch.isfinite(mine) & torch.isfinite(ref_grad)
        if broken.any():
            kind = "NaN" if torch.isnan(mine[broken]).any() else "infinite"
            raise ExerciseError(
                f"Your {name} gives the right numbers but a {kind} gradient {label}: {int(broken.sum())} of "
                f"{mine.numel()} entries of `{key}`'s gradient are {kind} (the reference's are all finite), so "
                "one training step would turn every weight into NaN.\nHint: torch.where(ok, a / b, 0) keeps the "
                "right value but not the right gradient: the backward pass still goes through a / b where b is "
                "0 (0 / 0 is NaN, and NaN times the 0 from where() is still NaN). Make the division itself safe: "
                "divide by b.clamp(min=1) (a count) or by torch.where(b > 0, b, 1) (a sum), then zero the rows "
                "that have nothing."
            )
    # One scale for all: a gradient that is zero in theory (the key projection's bias, whose shift
    # the softmax ignores) is rounding noise, and is judged against the others' size.
    want = {key: g for key, g in want.items() if g is not None}
    scale = max((float(g.abs().max()) for g in want.values() if g.numel()), default=0.0)
    got = {key: (got.get(key) if got.get(key) is not None else torch.zeros_like(g)) for key, g in want.items()}
    cut = [key for key, g in want.items() if float(g.abs().max()) > 1e-3 * scale and not torch.any(got[key])]
    if cut:
        what = "no gradient for " + ", ".join(f"`{key}`" for key in cut)
        raise ExerciseError(
            f"Your {name} gives the right numbers but cuts the gradient {label}: {what} comes back, so "
            "training could not learn through it.\nHint: no torch.no_grad(), .detach(), .data or .item() "
            "inside; keep every step a torch operation on the tensors you were given."
        )
    for key, ref_grad in want.items():
        error = (got[key].detach().double() - ref_grad.detach().double()).abs()
        if got[key].shape != ref_grad.shape or bool((error > 1e-4 * scale + 1e-3 * ref_grad.abs()).any()):
            raise ExerciseError(
                f"Your {name} gives the right numbers but the wrong gradient for `{key}` {label}: "
                f"{_where_differs(got[key], ref_grad)}.\nHint: something inside is taken out of the gradient "
                "(a .detach(), .data, or a statistic computed without gradient); keep every step a torch "
                "operation on the tensors you were given."
            )


# ----------------------------------------------------------------------------------------------
# One output against the reference's: the verdict and its message


def _shape_hint(got_shape, want_shape, masked: bool = False) -> str:
    """What a wrong shape most likely comes from ("" when nothing specific fits)."""
    got_shape, want_shape = tuple(got_shape), tuple(want_shape)
    if len(got_shape) < len(want_shape) and tuple(s for s in want_shape if s != 1) == \
            tuple(s for s in got_shape if s != 1):
        return ("a dimension of size 1 was dropped: .squeeze() without a dim removes every size-1 dimension "
                "(here a batch or a head of one); squeeze only a dimension you name, or not at all.")
    if sorted(got_shape) == sorted(want_shape):
        return "the dimensions are in the wrong order; check your transposes and reshapes."
    if masked and len(got_shape) == len(want_shape) + 1:
        return ("your result has one dimension too many, and only the cases with a mask bring it: the mask "
                "already lines up with the scores, so pass it on as given (a mask.unsqueeze(...) or "
                "mask[:, None] adds a dimension the scores do not have).")
    return ""


def _compare_output(name, got, want, label, mistakes, variant_args, generic_hint, case_hint="",
                    factor=1.0, rerun=None, random_hint="", fresh=None, masked=False, others=(), probes=(),
                    axes=()):
    """Raise the learner-facing verdict when ``got`` differs from ``want``; return when it is right.

    In order: the shape (``masked``: the call had a mask, for the shape hint), the dtype, randomness
    (``rerun``), state kept between calls (``fresh``: a newly built copy's output), the known
    ``mistakes``, then ``others`` (calls of the learner's code on the other inputs, whose error, if
    any, says more than a difference of numbers), then the ``probes`` (each returns a diagnosis or
    ""), and last :func:`_describe` of the numbers (``axes`` names their dimensions).
    """
    if got.shape != want.shape:
        hint = _shape_hint(got.shape, want.shape, masked)
        raise ExerciseError(
            f"Your {name} returned shape {_shape(got)} {label}, but it should be {_shape(want)}."
            + (f"\nHint: {hint}" if hint else "")
        )
    if got.dtype != want.dtype:
        raise ExerciseError(
            f"Your {name} returned dtype {got.dtype} {label}, but the input is {want.dtype}. Keep "
            "the input's dtype."
        )
    if _close(got, want, factor):
        return
    randomness = _random_inside(rerun, got) if rerun is not None else ""
    if randomness:
        raise ExerciseError(f"Your {name} is random {label}: {randomness}.\nHint: {random_hint}")
    if fresh is not None:
        try:
            new = fresh()
        except Exception:  # the copy cannot be built or run: no verdict from it
            new = None
        if isinstance(new, torch.Tensor) and _close(new, want, factor):
            raise ExerciseError(
                f"Your {name} keeps something from one call to the next {label}: a newly built copy with "
                "the same weights gives the right answer on this input, yours does not after the calls "
                "before it.\nHint: do not store results on self inside forward (statistics, a mask, keys "
                "and values); compute everything from the inputs of this call."
            )
    mistake = _first_match({"out": got}, mistakes, *variant_args)
    if mistake:
        raise ExerciseError(f"Your {name} is not right yet {label}: {mistake}")
    # No known mistake fits these numbers: an error on another input (a batch of one, other padding)
    # usually says more about the cause than a difference of numbers.
    for call in others:
        call()  # raises the learner-facing ExerciseError of that input, if any
    for one in probes:
        found = _note(one())
        if found:
            raise ExerciseError(f"Your {name} is not right yet {label}: {found}\nHint: {case_hint or generic_hint}")
    if torch.isnan(got).any() or torch.isinf(got).any():
        raise ExerciseError(
            f"Your {name} returned NaN or infinite values {label}.\nHint: {case_hint or generic_hint}"
        )
    raise ExerciseError(
        f"Your {name} is not right yet {label}: {_described(got, want, axes, factor)}"
        f"\nHint: {case_hint or generic_hint}"
    )


_described = probe(_describe)
