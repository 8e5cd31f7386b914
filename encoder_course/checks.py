"""Exercise checkers: compare a learner's code with the package's reference and name the mistake.

Each ``check_<name>(candidate)`` either

* prints exactly one line starting with "✓" (the code is right),
* prints one line "… <name>: not attempted yet (…)" when the candidate still raises
  ``NotImplementedError`` (the exercise stub), and returns without raising so Run All goes on, or
* raises :class:`ExerciseError` (an ``AssertionError``) whose message says what is wrong in plain
  words and how to look for it. If the learner's code itself raised, that exception is chained.

How the checks work. The candidate runs on small, fixed, randomised inputs (batched and multi-head
shapes, padding masks, ``d_v != d_k``, tiny (1e-3) and large magnitudes) and, for classes, with
every parameter (norms included) set to random values that are copied into the package's reference
module. Where the result differs from the reference, the checker computes the usual mistakes
(softmax over the wrong axis, missing scaling, inverted mask, heads split without the transpose,
unbiased variance, ...) on the same inputs and names the one the learner's result matches.

Design decisions (documented for teachers and maintainers):

* **Fully masked query rows are not tested.** The package returns zero weights there; a ``-inf``
  fill gives NaN and a ``torch.finfo(dtype).min`` fill gives uniform weights. The exercises do not
  ask for that case, so every mask the checkers use leaves at least one key per query row, and all
  three behaviours are accepted.
* **Tolerance.** Float32 results are compared element-wise with
  ``|got - want| <= 2e-5 * max|want| + 1e-4 * |want|`` (a tolerance relative to the size of the
  numbers, so the 1e-3 and the large inputs are judged alike), which accepts every correct order of
  operations (einsum, pre-scaled queries, ``F.layer_norm``, ...) and rejects every mistake we know.
* **Time.** Each call of the candidate on the tiny inputs must finish within :data:`TIME_LIMIT`
  seconds (interrupted with a timer signal where possible, reported as "took more than N s").
* The global random state is saved and restored, so a check cell never changes the numbers of the
  cells after it.
* What the learner's code prints or warns while it is checked is held back, so a passing check cell
  shows only its pass line (what nbval compares); a failure message ends with the last lines printed.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import itertools
import math
import signal
import threading
import time
import warnings
from typing import Callable

import torch
import torch.nn.functional as F

__all__ = [
    "ExerciseError", "TIME_LIMIT", "check_causal_mask", "check_encoder_block", "check_feed_forward",
    "check_layer_norm", "check_multi_head_attention", "check_padding_mask",
    "check_scaled_dot_product_attention", "check_sinusoidal_positions",
]

#: Seconds one call of the learner's code may take on the checkers' tiny inputs.
TIME_LIMIT = 10.0

_PRINTED_LINES = 10  # how much of what the learner's code printed a failure message shows
_RNG_PROBE_SEED = 20_170_612  # any value a learner is unlikely to pass to torch.manual_seed

_ATOL = 2e-5  # times the largest reference value
_RTOL = 1e-4


class ExerciseError(AssertionError):
    """The learner's answer is not right yet; the message says what and how to look for it."""


class _NotAttempted(Exception):
    """Internal: the candidate still raises NotImplementedError."""


class _Timeout(BaseException):
    """Internal: raised by the timer signal (a BaseException so ``except Exception`` cannot eat it)."""


# ----------------------------------------------------------------------------------------------
# Running the learner's code safely


@contextlib.contextmanager
def _time_limit(seconds: float):
    """Interrupt the block after ``seconds`` (main thread on POSIX); elsewhere only measure."""
    usable = (
        hasattr(signal, "setitimer")
        and threading.current_thread() is threading.main_thread()
        and seconds > 0
    )
    if not usable:
        yield
        return

    def _on_alarm(signum, frame):
        raise _Timeout()

    try:
        previous = signal.signal(signal.SIGALRM, _on_alarm)
    except ValueError:  # not allowed here after all
        yield
        return
    old_timer = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if old_timer[0] > 0:  # someone else had a timer running: give it back
            signal.setitimer(signal.ITIMER_REAL, *old_timer)


_SHAPE_HINTS = {
    "sinusoidal_positions": "The positions form a column (seq_len, 1) and the frequencies a row "
                            "(d_model / 2,), so pos / freq has shape (seq_len, d_model / 2).",
    "scaled_dot_product_attention": "To swap only the last two dimensions use k.transpose(-2, -1) (k.T "
                                    "and k.t() do something else for more than 2 dimensions). The mask "
                                    "already lines up with the scores (..., L_q, L_k), keys last: use it "
                                    "as given, without transposing or reshaping it, in "
                                    "scores.masked_fill(~mask, ...), which broadcasts it (indexing with "
                                    "scores[~mask] does not).",
    "MultiHeadAttention": "Take B and L from x.shape (never fixed numbers); split (B, L, d_model) into "
                          "(B, L, H, d_head) and transpose to (B, H, L, d_head); merge back with transpose(1, 2) "
                          "and reshape(B, L, d_model); use k.transpose(-2, -1) for the scores. The mask may be "
                          "any shape that broadcasts to (B, H, L, L), such as (B, 1, 1, L) or (L, L): pass it "
                          "on as given.",
    "LayerNorm": "Normalise over the last dimension whatever the rank of x (dim=-1, not a fixed number); "
                 "a mean or variance taken without keepdim=True no longer lines up with x: "
                 "x.mean(dim=-1, keepdim=True).",
    "FeedForward": "The layer w1 maps d_model to d_ff and w2 maps d_ff back to d_model: apply w1 first, w2 last. "
                   "nn.Linear stores its weight as (out_features, in_features), so by hand it is "
                   "x @ w1.weight.T + w1.bias; simplest is to call self.w1(x).",
    "EncoderBlock": "The sublayers self.attn(x, mask) and self.ffn(x) both take and return (B, L, d_model); "
                    "check what you pass to each.",
}


def _error_hint(exc: BaseException, name: str = "") -> str:
    text = str(exc)
    if "Boolean value of Tensor with more than one value is ambiguous" in text:
        return ("`if mask:` asks whether a whole tensor is true; to test whether a mask was given, write "
                "`if mask is not None:`.")
    if "'tuple' object has no attribute" in text:
        return ("A function returned a tuple where you expected a tensor: scaled_dot_product_attention "
                "returns (out, weights), so unpack it: `out, _ = scaled_dot_product_attention(...)`.")
    if "only one element tensors can be converted to Python scalars" in text:
        return ("A math.* function (or float()) got a whole tensor: use the torch version, which works "
                "element by element (torch.erf, torch.sqrt, torch.exp, torch.sin).")
    if ("expected scalar type" in text or "same dtype" in text or "dtype" in text and "expected" in text):
        return ("Two tensors of different dtypes met: keep every step in the inputs' dtype (no .float(), "
                ".double() or dtype= inside; torch.tensor(...) of a Python float is float32).")
    if "view size is not compatible" in text:
        return ("a tensor that was transposed cannot be .view()-ed: use .reshape(...) or "
                ".contiguous().view(...).")
    if isinstance(exc, TypeError) and "required positional argument: 'mask'" in text:
        return "the mask is optional: write `def forward(self, x, mask=None)` and pass it on only as given."
    if "must be a 3D tensor" in text:
        return "torch.bmm works only on 3-D tensors; `@` (torch.matmul) handles any number of leading dimensions."
    if isinstance(exc, (RuntimeError, IndexError)) and (
            "shape" in text or "size" in text or "dimension" in text or "out of range" in text):
        return "Print the shape of each tensor step by step. " + _SHAPE_HINTS.get(
            name, "Check which dimension each operation works on.")
    if isinstance(exc, (NameError, AttributeError)):
        return "Check the spelling of the names you use (and that the cells above have been run)."
    if isinstance(exc, TypeError):
        return "Check the arguments you pass and the types you combine (tensors, ints, None)."
    return "Read the error above (your code's traceback is shown first) and fix that line."


def _invoke(name: str, what: str, fn: Callable, *args, **kwargs):
    """Call the learner's ``fn``; turn its failures into learner messages."""
    start = time.perf_counter()
    try:
        with _time_limit(TIME_LIMIT):
            result = fn(*args, **kwargs)
    except NotImplementedError as exc:
        raise _NotAttempted(str(exc)) from None
    except _Timeout:
        raise ExerciseError(
            f"Your {name} took more than {TIME_LIMIT:g} s {what}, on inputs with only a few numbers. "
            "Look for a loop that never ends (a `while` whose condition never changes) or a loop "
            "over every element; tensor operations on the whole tensor are enough here."
        ) from None
    except Exception as exc:
        if exc.__traceback__ is not None and exc.__traceback__.tb_next is not None:
            exc = exc.with_traceback(exc.__traceback__.tb_next)  # show the learner's frames only
        raise ExerciseError(
            f"Your {name} raised {type(exc).__name__} {what}: {exc}\nHint: {_error_hint(exc, name)}"
        ) from exc
    if time.perf_counter() - start > TIME_LIMIT:
        raise ExerciseError(
            f"Your {name} took more than {TIME_LIMIT:g} s {what}, on inputs with only a few numbers. "
            "Use whole-tensor operations instead of Python loops over elements."
        )
    return result


def _snapshot(values: dict) -> dict:
    return {k: v.detach().clone() for k, v in values.items() if isinstance(v, torch.Tensor)}


def _check_unchanged(name: str, before: dict, after: dict) -> None:
    for key, old in before.items():
        new = after[key]
        if new.shape != old.shape or not torch.equal(new.detach(), old):
            raise ExerciseError(
                f"Your {name} changed its input `{key}` in place (for example with `{key} /= ...`, "
                f"`{key} -= ...`, `{key}.masked_fill_(...)` or `{key}[...] = ...`).\n"
                f"Hint: use operations that make a new tensor (`{key} = {key} / ...`, "
                "`masked_fill` without the underscore) so the caller's tensor stays as it was."
            )


def _shape(t) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _expect_tensor(name: str, value, what: str, role: str = "a tensor") -> torch.Tensor:
    if isinstance(value, torch.Tensor):
        return value
    kind = type(value).__name__
    if value is None:
        raise ExerciseError(f"Your {name} returned None {what}. Did you forget the `return` line?")
    if type(value).__module__ == "numpy":
        raise ExerciseError(
            f"Your {name} returned a NumPy {kind} {what}; it should return {role} (a torch.Tensor).\n"
            "Hint: stay with torch operations (no .numpy(), no np.* functions) so the result stays a tensor."
        )
    if isinstance(value, list):
        raise ExerciseError(
            f"Your {name} returned a Python list {what}; it should return {role}"
            f"{'' if role.startswith('the pair') else ' (a torch.Tensor)'}.\n"
            "Hint: return the tensor itself (no .tolist(), no list of tensors; torch.stack joins "
            "tensors into one)."
        )
    if isinstance(value, tuple):
        raise ExerciseError(
            f"Your {name} returned a tuple of {len(value)} values {what}; it should return {role} "
            "(a single torch.Tensor).\nHint: return only the output tensor, not extra values."
        )
    if inspect.isgenerator(value):
        raise ExerciseError(
            f"Your {name} returned a generator {what}: it uses `yield` where it should `return` {role}."
        )
    tensor = "" if role.startswith("the pair") else " (a torch.Tensor)"
    raise ExerciseError(f"Your {name} returned a {kind} {what}; it should return {role}{tensor}.")


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


def _first_match(got: dict, variants, *args) -> str | None:
    """Name the mistake whose result matches ``got`` on every given key (the closest one wins;
    near-ties go to the one listed first)."""
    best, best_distance = None, float("inf")
    for message, make in variants:
        try:
            alt = make(*args)
        except Exception:  # a variant that cannot be computed for these shapes
            continue
        alts = alt if isinstance(alt, (list, tuple)) and alt and isinstance(alt[0], dict) else [alt]
        for one in alts:
            if all(k in one and _close(got[k], one[k]) for k in got):
                distance = max(_distance(got[k], one[k]) for k in got)
                if distance < 0.1 * best_distance:
                    best, best_distance = message, distance
    return best


_CLASS_EXERCISES = ("multi_head_attention", "layer_norm", "feed_forward", "encoder_block")


def _checker(name: str):
    """Wrap a checker body: print the one-line verdict, turn a stub into 'not attempted yet'."""

    def decorate(body):
        @functools.wraps(body)
        def wrapper(candidate):
            error: ExerciseError | None = None
            threads = torch.get_num_threads()
            # The inputs are tiny: one thread is much faster than several on a busy machine.
            torch.set_num_threads(1)
            # What the learner's code prints or warns while the checker calls it many times is kept
            # out of the cell's output: the self-check (nbval) compares that output with the one
            # pass line. It is shown with the message when the check fails.
            printed = io.StringIO()
            try:
                with torch.random.fork_rng(devices=[]), torch.no_grad(), \
                        contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                        warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    if not callable(candidate):
                        raise ExerciseError(
                            f"check_{name} expects your function or class itself (its name, without "
                            f"calling it), but got a {type(candidate).__name__}."
                        )
                    if name in _CLASS_EXERCISES and isinstance(candidate, torch.nn.Module):
                        cls_name = type(candidate).__name__
                        raise ExerciseError(
                            f"check_{name} expects your class itself, but got a module already built "
                            f"from it ({cls_name}(...)). Pass the class: check_{name}({cls_name}); the "
                            "checker builds it with several sizes."
                        )
                    body(candidate)
            except _NotAttempted:
                print(
                    f"… {name}: not attempted yet (replace the `raise NotImplementedError` line in the "
                    "exercise cell with your code, run that cell, then run this one again)"
                )
                return None
            except ExerciseError as exc:
                error = exc
            except Exception as exc:  # something the checker did not foresee: still no internals
                error = ExerciseError(
                    f"The checker could not use what your {name} gave back ({type(exc).__name__}: {exc}). "
                    "Check that it returns tensors of the shapes the exercise asks for."
                )
            finally:
                torch.set_num_threads(threads)
            if error is not None:
                cause = error.__cause__
                lines = printed.getvalue().strip().splitlines()
                if lines:
                    shown = "\n".join(lines[-_PRINTED_LINES:])
                    more = f" (the last {_PRINTED_LINES} of {len(lines)} lines)" if len(lines) > _PRINTED_LINES else ""
                    error = ExerciseError(f"{error}\n\nYour code printed this while it was checked{more}:\n{shown}")
                error.__suppress_context__ = True
                raise error.with_traceback(None) from cause
            print(f"✓ {name}: all checks passed")
            return None

        return wrapper

    return decorate


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(gen, *shape, scale=1.0):
    return torch.randn(*shape, generator=gen) * scale


# ----------------------------------------------------------------------------------------------
# Positions


def _positions(seq_len, d_model, *, swap=False, halves=False, exponent="2i", start=0, multiply=False,
               base=10000.0, odd="cos"):
    pos = torch.arange(start, start + seq_len, dtype=torch.float64).unsqueeze(1)
    i = torch.arange(d_model // 2, dtype=torch.float64)
    cols = torch.arange(d_model, dtype=torch.float64)
    if exponent == "2i":
        e_even = e_odd = 2 * i / d_model
    elif exponent == "i":
        e_even = e_odd = i / d_model
    elif exponent == "4i":
        e_even = e_odd = 4 * i / d_model
    elif exponent == "zero":  # integer division: 2i // d_model is 0 for every pair
        e_even = e_odd = torch.zeros_like(i)
    else:  # each column its own exponent j/d_model
        e_even, e_odd = cols[0::2] / d_model, cols[1::2] / d_model
    f_even, f_odd = (base ** e_even), (base ** e_odd)
    a_even = pos * f_even if multiply else pos / f_even
    a_odd = pos * f_odd if multiply else pos / f_odd
    first, second = (torch.cos, torch.sin) if swap else (torch.sin, torch.cos)
    if odd != "cos":  # the same function in both columns (a copy-paste slip)
        first = second = {"sin": torch.sin, "cos_both": torch.cos}[odd]
    pe = torch.empty(seq_len, d_model, dtype=torch.float64)
    if halves:
        pe[:, : d_model // 2], pe[:, d_model // 2:] = first(a_even), second(a_odd)
    else:
        pe[:, 0::2], pe[:, 1::2] = first(a_even), second(a_odd)
    return pe.float()


_POSITION_MISTAKES = [
    ("sin and cos are swapped. Column 2i (even) holds the sine and column 2i+1 (odd) the cosine.",
     lambda L, d: {"pe": _positions(L, d, swap=True)}),
    ("the sines and cosines sit in two halves (all sines, then all cosines). In the original "
     "paper they are interleaved: column 2i is sin and column 2i+1 is cos of the same frequency.\n"
     "Hint: fill pe[:, 0::2] with the sines and pe[:, 1::2] with the cosines.",
     lambda L, d: {"pe": _positions(L, d, halves=True)}),
    ("the sines and cosines sit in two halves (and in the wrong order). They should be "
     "interleaved: column 2i is sin, column 2i+1 is cos of the same frequency (pe[:, 0::2], pe[:, 1::2]).",
     lambda L, d: {"pe": _positions(L, d, halves=True, swap=True)}),
    ("the exponent is wrong: you used 10000^(i/d_model) with i the pair index, but the exponent is "
     "2i/d_model (the even column number 2i divided by d_model).",
     lambda L, d: {"pe": _positions(L, d, exponent="i")}),
    ("the exponent is wrong: you doubled 2i a second time (10000^(4i/d_model)). If you take the even "
     "column numbers with torch.arange(0, d_model, 2), they already are 2i.",
     lambda L, d: {"pe": _positions(L, d, exponent="4i")}),
    ("the exponent is wrong for the odd columns: column 2i+1 should use the same frequency as column "
     "2i (exponent 2i/d_model), not its own column number (2i+1)/d_model.",
     lambda L, d: {"pe": _positions(L, d, exponent="j")}),
    ("you multiply the position by 10000^(2i/d_model) instead of dividing by it: the angle is "
     "pos / 10000^(2i/d_model).",
     lambda L, d: {"pe": _positions(L, d, multiply=True)}),
    ("positions start at 1, but they count from 0 (the first row is sin(0) = 0, cos(0) = 1).",
     lambda L, d: {"pe": _positions(L, d, start=1)}),
    ("the odd columns hold sines too. Column 2i is sin and column 2i+1 is cos of the same angle.",
     lambda L, d: {"pe": _positions(L, d, odd="sin")}),
    ("the even columns hold cosines too. Column 2i is sin and column 2i+1 is cos of the same angle.",
     lambda L, d: {"pe": _positions(L, d, odd="cos_both")}),
    ("every pair of columns has the same frequency, as if the exponent 2i/d_model were always 0. "
     "That happens with integer division (2 * i // d_model) or integer tensors: make the exponent a "
     "float, e.g. torch.arange(0, d_model, 2, dtype=torch.float32) / d_model.",
     lambda L, d: {"pe": _positions(L, d, exponent="zero")}),
] + [
    (f"the base of the frequencies is {other:g}; the paper uses 10000: pos / 10000^(2i/d_model).",
     lambda L, d, other=other: {"pe": _positions(L, d, base=other)})
    for other in (1000.0, 100.0, 100000.0, 10.0)
]


def _wrong_frequency(got: torch.Tensor, want: torch.Tensor, d_model: int) -> str:
    """If each column pair of ``got`` is (sin, cos) of pos * w for some w, name the first wrong w."""
    g = got.detach().double()
    if g.shape[0] < 3:
        return ""
    pos = torch.arange(g.shape[0], dtype=torch.float64)[:, None]
    w_got = torch.atan2(g[1, 0::2], g[1, 1::2])  # the angle at position 1, in (-pi, pi]
    if not torch.allclose(g[:, 0::2], torch.sin(pos * w_got), atol=1e-4) or not torch.allclose(
            g[:, 1::2], torch.cos(pos * w_got), atol=1e-4):
        return ""  # not a clean sin/cos pair with one frequency per pair
    w_want = 1.0 / 10000.0 ** (torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    wrong = (w_got - w_want).abs() > 1e-4 * w_want.abs().clamp_min(1e-3)
    if not wrong.any():
        return ""
    i = int(wrong.nonzero()[0])
    return (f"each column pair is a sine and a cosine, as it should be, but with the wrong frequency: pair "
            f"{i} (columns {2 * i} and {2 * i + 1}) turns by {float(w_got[i]):.6g} per position, and "
            f"1 / 10000^({2 * i}/{d_model}) = {float(w_want[i]):.6g} is right. Check the exponent "
            "2i/d_model (i counts pairs from 0, and d_model is the width asked for, not a fixed number) and "
            "that the positions are 0, 1, 2, ... as they are.")


@_checker("sinusoidal_positions")
def check_sinusoidal_positions(fn):
    """Check ``sinusoidal_positions(seq_len, d_model) -> Tensor[seq_len, d_model]`` (float32)."""
    from .positions import sinusoidal_positions as reference

    for seq_len, d_model in [(6, 8), (1, 2), (50, 16), (9, 64)]:
        what = f"for seq_len={seq_len}, d_model={d_model}"
        got = _invoke("sinusoidal_positions", what, fn, seq_len, d_model)
        got = _expect_tensor("sinusoidal_positions", got, what, "the position table")
        want = reference(seq_len, d_model)
        if got.shape != want.shape:
            hint = ""
            if tuple(got.shape) == (d_model, seq_len):
                hint = "\nHint: rows and columns are swapped: one row per position, one column per feature."
            raise ExerciseError(
                f"Your sinusoidal_positions returned shape {_shape(got)} {what}, but it should be "
                f"(seq_len, d_model) = {_shape(want)}.{hint}"
            )
        if got.dtype != torch.float32:
            if got.is_floating_point():
                hint = "compute in float32 (the default), or convert the finished table with .float()."
            else:
                hint = ("an integer table cannot hold sines and cosines (they are cut to -1, 0 or 1). "
                        "Create the table and the position and index tensors as floats: "
                        "torch.zeros(seq_len, d_model) and torch.arange(..., dtype=torch.float32) "
                        "(torch.arange gives integers by default).")
            raise ExerciseError(
                f"Your sinusoidal_positions returned dtype {got.dtype} {what}; it should be "
                f"torch.float32.\nHint: {hint}"
            )
        if torch.isnan(got).any():
            raise ExerciseError(
                f"Your sinusoidal_positions returned NaN values {what}. Look for a division by zero "
                "or a power of a negative number."
            )
        if not _close(got, want, factor=5.0):
            mistake = _first_match({"pe": got}, _POSITION_MISTAKES, seq_len, d_model)
            if mistake:
                raise ExerciseError(f"Your sinusoidal_positions is not right yet {what}: {mistake}")
            frequency = _wrong_frequency(got, want, d_model)
            if frequency:
                raise ExerciseError(f"Your sinusoidal_positions is not right yet {what}: {frequency}")
            raise ExerciseError(
                f"Your sinusoidal_positions gives different values from the formula {what}; "
                f"{_where_differs(got, want)}.\nHint: PE[pos, 2i] = sin(pos / 10000^(2i/d_model)) and "
                "PE[pos, 2i+1] = cos(pos / 10000^(2i/d_model)), positions from 0."
            )


# ----------------------------------------------------------------------------------------------
# Attention


def _attention(q, k, v, mask=None, *, scale="sqrt", softmax_dim=-1, mask_mode="fill", fill="zero",
               weights_are="softmax"):
    """Reference attention and its usual mistakes (computed in float64, returned as q's dtype)."""
    dtype = q.dtype
    q, k, v = q.double(), k.double(), v.double()
    d_k = q.shape[-1]
    scores = q @ k.transpose(-2, -1)
    if scale == "sqrt":
        scores = scores / math.sqrt(d_k)
    elif scale == "d":
        scores = scores / d_k
    elif scale == "times":
        scores = scores * math.sqrt(d_k)
    elif scale == "sqrt_dv":
        scores = scores / math.sqrt(v.shape[-1])
    elif scale == "sqrt_lk":
        scores = scores / math.sqrt(k.shape[-2])
    elif scale == "sqrt_lq":
        scores = scores / math.sqrt(q.shape[-2])
    elif scale == "half":  # d_k ** 1/2 reads as (d_k ** 1) / 2
        scores = scores / (d_k / 2)
    raw = scores
    if mask is not None:
        mask = torch.broadcast_to(mask, scores.shape)
        use = ~mask if mask_mode == "inverted" else mask
        if mask_mode in ("fill", "inverted"):
            scores = scores.masked_fill(~use, float("-inf") if fill != "min" else torch.finfo(dtype).min)
        elif mask_mode == "zero":
            scores = scores.masked_fill(~use, 0.0)
    weights = torch.softmax(scores, dim=softmax_dim)
    if mask is not None:
        if mask_mode == "after":
            weights = weights.masked_fill(~mask, 0.0)
        if mask_mode in ("fill", "inverted") and fill == "zero":
            weights = weights.masked_fill(~use.any(dim=-1, keepdim=True), 0.0)
    if weights_are == "scaled_after":  # softmax of the unscaled scores, then divided by sqrt(d_k)
        weights = weights / math.sqrt(d_k)
    out = weights @ v
    if weights_are == "scores":
        weights = raw
    return {"out": out.to(dtype), "weights": weights.to(dtype)}


def _inverted(q, k, v, mask):
    return [_attention(q, k, v, mask, mask_mode="inverted", fill=f) for f in ("zero", "nan", "min")]


def _wrong_axes(q, k, v, mask):
    dims = [d for d in range(-q.dim(), -1)]
    return [_attention(q, k, v, mask, softmax_dim=d) for d in dims]


_ATTENTION_MISTAKES = [
    ("the softmax runs over the wrong axis. Each query's row of weights (over the keys, the last "
     "dimension) must sum to 1.\nHint: torch.softmax(scores, dim=-1).", _wrong_axes),
    ("the scores are not scaled. Divide q @ k^T by sqrt(d_k), the size of the queries' last dimension.",
     lambda q, k, v, m: _attention(q, k, v, m, scale="none")),
    ("the scores are divided by d_k; divide them by the square root of d_k: math.sqrt(d_k).",
     lambda q, k, v, m: _attention(q, k, v, m, scale="d")),
    ("the scores are multiplied by sqrt(d_k); divide them by it instead.",
     lambda q, k, v, m: _attention(q, k, v, m, scale="times")),
    ("the scores are scaled with the size of v (d_v); use the size of q and k (d_k = q.shape[-1]).",
     lambda q, k, v, m: _attention(q, k, v, m, scale="sqrt_dv")),
    ("the mask is inverted. True means 'may attend', so fill the scores where the mask is False "
     "(use ~mask or mask == False).", _inverted),
    ("masked scores are set to 0, but exp(0) = 1, so masked keys still get weight. Fill them with "
     "float('-inf') (or torch.finfo(scores.dtype).min) before the softmax.",
     lambda q, k, v, m: _attention(q, k, v, m, mask_mode="zero")),
    ("the mask is applied after the softmax, so the remaining weights no longer sum to 1. Fill the "
     "masked scores with float('-inf') before the softmax instead.",
     lambda q, k, v, m: _attention(q, k, v, m, mask_mode="after")),
    ("the mask has no effect: masked keys still get weight. Fill the scores where mask is False with "
     "float('-inf') before the softmax, e.g. scores.masked_fill(~mask, float('-inf')).",
     lambda q, k, v, m: _attention(q, k, v, m, mask_mode="ignore")),
    ("the scores are divided by the square root of the number of keys (L_k = k.shape[-2]); divide by "
     "sqrt(d_k), the size of the last dimension of q and k: q.shape[-1].",
     lambda q, k, v, m: _attention(q, k, v, m, scale="sqrt_lk")),
    ("the scores are divided by the square root of the number of queries (L_q). d_k is the last "
     "dimension of q, q.shape[-1]; q.shape[2] is d_k only for 3-D inputs, and L_q once there is a heads "
     "dimension.",
     lambda q, k, v, m: _attention(q, k, v, m, scale="sqrt_lq")),
    ("the scores are divided by d_k / 2. In Python `d_k ** 1/2` means (d_k ** 1) / 2, because ** binds "
     "tighter than /: write d_k ** 0.5 or math.sqrt(d_k).",
     lambda q, k, v, m: _attention(q, k, v, m, scale="half")),
    ("the scaling comes after the softmax: the weights are divided by sqrt(d_k), so rows no longer sum "
     "to 1. Scale the scores before the softmax: softmax(q @ k^T / sqrt(d_k)).",
     lambda q, k, v, m: _attention(q, k, v, m, scale="none", weights_are="scaled_after")),
    ("the weights you return are the raw scores from before the softmax. Return the weights after "
     "the softmax (the ones you multiply v with).",
     lambda q, k, v, m: _attention(q, k, v, m, weights_are="scores")),
]


def _fitted_scale(q, k, weights) -> float | None:
    """If ``weights`` are softmax(q k^T / c) for one wrong constant c, return c."""
    scores_shape = (*torch.broadcast_shapes(q.shape[:-2], k.shape[:-2]), q.shape[-2], k.shape[-2])
    if tuple(weights.shape) != scores_shape or not torch.isfinite(weights).all() or (weights <= 0).any():
        return None
    raw = (q.double() @ k.double().transpose(-2, -1))
    logs = torch.log(weights.double())
    raw_c, logs_c = raw - raw.mean(-1, keepdim=True), logs - logs.mean(-1, keepdim=True)
    slope = float((raw_c * logs_c).sum() / (raw_c * raw_c).sum())  # 1 / c
    if slope <= 0:
        return None
    residual = float((logs_c - slope * raw_c).abs().max())
    if residual > 1e-4 * max(1.0, float(logs_c.abs().max())):
        return None
    scale = 1.0 / slope
    return None if abs(scale - math.sqrt(q.shape[-1])) < 1e-3 * scale else scale


def _attention_cases():
    g = _gen(1)
    cases = []
    # d_k = 8 here: with d_k = 4, sqrt(d_k) = d_k / 2 and two slips would pass unseen.
    q, k, v = _randn(g, 2, 3, 8), _randn(g, 2, 5, 8), _randn(g, 2, 5, 6)
    cases.append(("on batched inputs q (2, 3, 8), k (2, 5, 8), v (2, 5, 6) without a mask", q, k, v, None,
                  ""))
    q, k, v = _randn(g, 2, 3, 4, 8), _randn(g, 2, 3, 5, 8), _randn(g, 2, 3, 5, 6)
    cases.append(("on multi-head inputs q (2, 3, 4, 8), k (2, 3, 5, 8), v (2, 3, 5, 6) without a mask",
                  q, k, v, None,
                  "It works for 3-D inputs but not with a heads dimension: transpose only the last two "
                  "dimensions (k.transpose(-2, -1)) and use dim=-1."))
    pad = torch.tensor([[True] * 5, [True, True, True, False, False]])
    q, k, v = _randn(g, 2, 3, 4, 8), _randn(g, 2, 3, 5, 8), _randn(g, 2, 3, 5, 6)
    cases.append(("with a padding mask of shape (2, 1, 1, 5) (True = may attend), q (2, 3, 4, 8)",
                  q, k, v, pad[:, None, None, :],
                  "Without a mask your code is right, so look at how you use the mask: fill the scores "
                  "where mask is False with float('-inf') before the softmax."))
    q, k, v = _randn(g, 2, 4, 8), _randn(g, 2, 5, 8), _randn(g, 2, 5, 3)
    cases.append(("with a padding mask of shape (2, 1, 5) on 3-D inputs", q, k, v, pad[:, None, :], ""))
    x = _randn(g, 1, 2, 5, 4)
    cases.append(("with a causal mask of shape (5, 5) (self-attention)", x, x.clone() * 0.5 + 0.1,
                  _randn(g, 1, 2, 5, 6), torch.ones(5, 5, dtype=torch.bool).tril(), ""))
    rnd = torch.rand(2, 2, 4, 5, generator=g) > 0.5
    rnd[..., 0] = True  # every query keeps at least one key (fully masked rows are not tested)
    q, k, v = _randn(g, 2, 2, 4, 8), _randn(g, 2, 2, 5, 8), _randn(g, 2, 2, 5, 6)
    cases.append(("with a full (2, 2, 4, 5) mask", q, k, v, rnd, ""))
    q, k, v = _randn(g, 2, 3, 4, 8), _randn(g, 2, 3, 5, 8), _randn(g, 2, 3, 5, 6)
    cases.append(("with tiny inputs (about 1e-3)", q * 1e-3, k * 1e-3, v * 1e-3, pad[:, None, None, :], ""))
    q, k, v = _randn(g, 2, 3, 4, 8), _randn(g, 2, 3, 5, 8), _randn(g, 2, 3, 5, 6)
    cases.append(("with large inputs (q, k about 10, v about 1000)", q * 10, k * 10, v * 1e3,
                  pad[:, None, None, :],
                  "It works on ordinary inputs but not on large ones. If you wrote the softmax yourself, "
                  "subtract each row's maximum before exp() (or use torch.softmax)."))
    q, k, v = _randn(g, 2, 3, 4, 8), _randn(g, 2, 3, 5, 8), _randn(g, 2, 3, 5, 6)
    cases.append(("on float64 inputs with a padding mask (2, 1, 1, 5)", q.double(), k.double(), v.double(),
                  pad[:, None, None, :], "Keep the inputs' dtype: no .float() and no float32 tensors inside."))
    return cases


@_checker("scaled_dot_product_attention")
def check_scaled_dot_product_attention(fn):
    """Check ``scaled_dot_product_attention(q, k, v, mask=None) -> (out, weights)``."""
    name = "scaled_dot_product_attention"
    for label, q, k, v, mask, case_hint in _attention_cases():
        inputs = {"q": q, "k": k, "v": v}
        if mask is not None:
            inputs["mask"] = mask
        before = _snapshot(inputs)
        if mask is None:
            result = _invoke(name, label, fn, q, k, v)
        else:
            result = _invoke(name, label, fn, q, k, v, mask)
        _check_unchanged(name, before, inputs)
        want = _attention(q, k, v, mask)
        want_out, want_w = want["out"], want["weights"]
        if isinstance(result, torch.Tensor):
            raise ExerciseError(
                f"Your {name} returned a single tensor {label}; it should return two: (out, weights).\n"
                "Hint: end with `return out, weights`."
            )
        if not isinstance(result, (tuple, list)) or len(result) != 2:
            if isinstance(result, (tuple, list)):
                raise ExerciseError(
                    f"Your {name} returned {len(result)} values {label}; it should return two: (out, weights)."
                )
            _expect_tensor(name, result, label, "the pair (out, weights)")
        for position, what in ((0, "first value (out)"), (1, "second value (the weights)")):
            if result[position] is None:
                raise ExerciseError(
                    f"Your {name} returned None as its {what} {label}.\nHint: return both tensors, "
                    "`return out, weights` (F.scaled_dot_product_attention gives only out: compute the "
                    "weights yourself)."
                )
        out = _expect_tensor(name, result[0], label, "out as its first value")
        weights = _expect_tensor(name, result[1], label, "the weights as its second value")
        if out.shape == want_w.shape and weights.shape == want_out.shape and out.shape != weights.shape:
            raise ExerciseError(
                f"Your {name} returned (weights, out) {label}; the order is (out, weights)."
            )
        for what, got, ref, desc in (("out", out, want_out, "(..., L_q, d_v)"),
                                     ("weights", weights, want_w, "(..., L_q, L_k)")):
            if got.shape != ref.shape:
                hint = ""
                if what == "out" and got.shape[-1] == q.shape[-1] != v.shape[-1]:
                    hint = "\nHint: out's last dimension comes from v (d_v), not from q: out = weights @ v."
                raise ExerciseError(
                    f"Your {name} returned {what} of shape {_shape(got)} {label}, but it should be "
                    f"{desc} = {_shape(ref)}.{hint}"
                )
            if got.dtype != ref.dtype:
                raise ExerciseError(
                    f"Your {name} returned {what} with dtype {got.dtype} {label}, but the inputs are "
                    f"{ref.dtype}. Keep the inputs' dtype (no .double(), no float64 constants as tensors)."
                )
        bad = {key: t for key, t, ref in (("out", out, want_out), ("weights", weights, want_w))
               if not _close(t, ref)}
        if not bad:
            continue
        def rerun(q=q, k=k, v=v, mask=mask, label=label):
            again = _invoke(name, label, fn, q, k, v, *([] if mask is None else [mask]))
            return again[0] if isinstance(again, (tuple, list)) and len(again) == 2 else None

        randomness = _random_inside(rerun, out)
        if randomness:
            raise ExerciseError(
                f"Your {name} is random {label}: {randomness}. Something random is inside, such as dropout "
                "(F.dropout(x, p) is active unless you pass training=False).\nHint: this function has no "
                "dropout; leave it out (and no torch.manual_seed inside it)."
            )
        if list(bad) == ["weights"] and mask is not None and _close(weights, _attention(q, k, v)["weights"]):
            raise ExerciseError(
                f"Your {name}'s out is right but the weights you return are from before the mask was "
                f"applied {label}.\nHint: return the weights after the softmax of the masked scores, the "
                "same ones you multiply v with."
            )
        mistake = _first_match(bad, _ATTENTION_MISTAKES, q, k, v, mask)
        if mistake:
            raise ExerciseError(f"Your {name} is not right yet {label}: {mistake}")
        scale = _fitted_scale(q, k, weights) if mask is None else None
        if scale is not None:
            d_k = q.shape[-1]
            raise ExerciseError(
                f"Your {name} is not right yet {label}: your weights are softmax(q @ k^T / c) with c = "
                f"{scale:.4g}, but c should be sqrt(d_k) = sqrt({d_k}) = {math.sqrt(d_k):.4g}. Look at how "
                "you compute the scale (d_k = q.shape[-1]; math.sqrt(d_k) or d_k ** 0.5)."
            )
        if any(torch.isnan(t).any() for t in bad.values()):
            hint = case_hint or (
                "NaN comes from exp() overflowing or from a row where every score is -inf. "
                + ("Check that the mask is not inverted." if mask is not None else
                   "If you wrote the softmax yourself, subtract each row's maximum before exp().")
            )
            raise ExerciseError(f"Your {name} returned NaN values {label}.\nHint: {hint}")
        if "out" in bad and "weights" not in bad:
            raise ExerciseError(
                f"Your {name}'s weights are right but out is not {label}: "
                f"{_where_differs(out, want_out)}.\nHint: out = weights @ v."
            )
        if "weights" in bad and "out" not in bad:
            raise ExerciseError(
                f"Your {name}'s out is right but the weights you return are not {label}: "
                f"{_where_differs(weights, want_w)}.\nHint: return the weights after the softmax, the "
                "same ones you multiply v with."
            )
        sums = weights.sum(dim=-1)
        extra = case_hint
        if not extra and not torch.allclose(sums[~torch.isnan(sums)], torch.ones(()), atol=1e-3):
            extra = "Each row of your weights should sum to 1 (a softmax over the keys, dim=-1)."
        raise ExerciseError(
            f"Your {name} gives different numbers from the reference {label}: "
            f"{_where_differs(bad.get('out', out), want_out if 'out' in bad else want_w)}."
            + (f"\nHint: {extra}" if extra else
               "\nHint: softmax(q @ k^T / sqrt(d_k)) @ v, with masked scores set to -inf before the softmax.")
        )
    # Gradients, on the multi-head case with a padding mask (the numbers are right by now).
    from .attention import scaled_dot_product_attention as reference

    label, q, k, v, mask, _ = _attention_cases()[2]
    _check_gradients(name, label, lambda q, k, v: _invoke(name, label, fn, q, k, v, mask),
                     lambda q, k, v: reference(q, k, v, mask), {"q": q, "k": k, "v": v})


def _module_gradients(name, cand, ref, paths, label, x, *extra) -> None:
    """Compare the gradients for x and the contract's parameters (both modules in eval mode)."""
    cand.eval()
    _check_gradients(name, label, lambda x: _call_module(name, cand, label, x, *extra),
                     lambda x: ref(x, *[e for e in extra if e is not None]), {"x": x},
                     {path: _sub(name, cand, path) for path in paths},
                     {path: _sub(name, ref, path) for path in paths})


# ----------------------------------------------------------------------------------------------
# Masks


def _check_mask_like(name, got, want, label, layout,
                     build="a comparison such as `token_ids != pad_id` already gives bools"):
    got = _expect_tensor(name, got, label, "a bool mask")
    if got.shape != want.shape:
        hint = f"\nHint: {layout}"
        raise ExerciseError(
            f"Your {name} returned shape {_shape(got)} {label}, but it should be {_shape(want)}.{hint}"
        )
    if got.dtype != torch.bool:
        raise ExerciseError(
            f"Your {name} returned dtype {got.dtype} {label}; a mask should be a bool tensor "
            f"(True = may attend).\nHint: {build}; do not convert it to numbers (no .float(), .int(), "
            ".long())."
        )
    return got


@_checker("padding_mask")
def check_padding_mask(fn):
    """Check ``padding_mask(token_ids, pad_id) -> BoolTensor[B, 1, 1, L]`` (True = real token)."""
    from .masks import padding_mask as reference

    name = "padding_mask"
    cases = [
        (torch.tensor([[5, 7, 9, 0, 0], [3, 4, 0, 0, 0], [8, 6, 2, 4, 1]]), 0,
         "for token ids of shape (3, 5) with pad_id=0"),
        (torch.tensor([[0, 17, 4, 1, 1, 1], [0, 9, 9, 9, 12, 2]]), 1,
         "for token ids of shape (2, 6) with pad_id=1 (0 is a real token here)"),
        (torch.tensor([[2, 3]]), 0, "for token ids of shape (1, 2) without padding"),
        (torch.tensor([[0, 0, 4, 5], [6, 0, 7, 0]]), 0,
         "for token ids (2, 4) padded on the left and in the middle (pad_id=0)"),
    ]
    for ids, pad_id, label in cases:
        inputs = {"token_ids": ids}
        before = _snapshot(inputs)
        got = _invoke(name, label, fn, ids, pad_id)
        _check_unchanged(name, before, inputs)
        want = reference(ids, pad_id)
        b, length = ids.shape
        if isinstance(got, torch.Tensor) and got.shape != want.shape:
            if tuple(got.shape) == (b, length):
                layout = ("add the two middle dimensions so the mask broadcasts over heads and queries: "
                          "mask[:, None, None, :] gives (B, 1, 1, L).")
            elif sorted(got.shape) == sorted(want.shape) and got.shape[-1] == length:
                layout = "the batch axis comes first: (B, 1, 1, L), e.g. mask[:, None, None, :]."
            elif sorted(got.shape) == sorted(want.shape):
                layout = "the key axis L must be the last dimension: (B, 1, 1, L)."
            else:
                layout = "the shape should be (B, 1, 1, L), e.g. (token_ids != pad_id)[:, None, None, :]."
        else:
            layout = "the shape should be (B, 1, 1, L)."
        got = _check_mask_like(name, got, want, label, layout)
        if torch.equal(got, want):
            continue
        if torch.equal(got, ~want):
            raise ExerciseError(
                f"Your {name} is inverted {label}: it marks the padding with True. In this course True "
                "means 'may attend', so real tokens are True and padding is False (token_ids != pad_id)."
            )
        if pad_id != 0 and torch.equal(got, (ids != 0)[:, None, None, :]):
            raise ExerciseError(
                f"Your {name} compares with 0 instead of pad_id {label}. Use the pad_id argument: "
                "token_ids != pad_id."
            )
        raise ExerciseError(
            f"Your {name} gives a different mask {label}: you return {got[:, 0, 0, :].int().tolist()}, "
            f"the right mask is {want[:, 0, 0, :].int().tolist()} (1 = True = real token)."
        )


@_checker("causal_mask")
def check_causal_mask(fn):
    """Check ``causal_mask(L) -> BoolTensor[L, L]``, True on and below the diagonal."""
    name = "causal_mask"
    for length in (5, 1, 2, 8):
        label = f"for L={length}"
        got = _invoke(name, label, fn, length)
        want = torch.ones(length, length, dtype=torch.bool).tril()
        got = _check_mask_like(name, got, want, label,
                               "return one row per query and one column per key: shape (L, L).",
                               "build it from bools, e.g. torch.ones(L, L, dtype=torch.bool).tril()")
        if torch.equal(got, want):
            continue
        ones = torch.ones(length, length, dtype=torch.bool)
        if torch.equal(got, ones.triu(1)):
            message = ("it is inverted: True marks the future positions. True means 'may attend', so "
                       "position i may attend to 0..i (the lower triangle, torch.tril).")
        elif torch.equal(got, ones.triu()):
            message = ("True sits on and above the diagonal, so each position sees the future. Query i "
                       "(row i) may attend to keys 0..i: the lower triangle, torch.tril.")
        elif torch.equal(got, ones.tril(-1)):
            message = ("the diagonal is False, so a position cannot attend to itself. Keep the diagonal: "
                       "torch.tril(..., diagonal=0).")
        elif torch.equal(got, ~ones.tril(-1)):
            message = "it is inverted. True means 'may attend': True on and below the diagonal (torch.tril)."
        else:
            message = (f"you return {got.int().tolist()}, the right mask is {want.int().tolist()} "
                       "(1 = True = may attend; row = query, column = key).")
        raise ExerciseError(f"Your {name} is not right yet {label}: {message}")


# ----------------------------------------------------------------------------------------------
# Modules: building, randomising, calling


def _build(name: str, cls, *args, **kwargs):
    shown = ", ".join([repr(a) for a in args] + [f"{k}={v!r}" for k, v in kwargs.items()])
    cls_name = getattr(cls, "__name__", type(cls).__name__)
    what = f"when built as {cls_name}({shown})"
    module = _invoke(name, what, cls, *args, **kwargs)
    if not isinstance(module, torch.nn.Module):
        raise ExerciseError(f"{cls_name}({shown}) did not give an nn.Module; your class should "
                            "subclass torch.nn.Module.")
    return module


def _sub(name: str, module, path: str, shape=None):
    obj = module
    parts = path.split(".")
    for i, part in enumerate(parts):
        if not hasattr(obj, part):
            missing = ".".join(parts[: i + 1])
            raise ExerciseError(
                f"Your {name} has no `{missing}`. Keep the names the exercise's __init__ gives "
                "(the checker copies the same weights into the reference through them)."
            )
        obj = getattr(obj, part)
    if shape is not None:
        if not isinstance(obj, torch.Tensor) or tuple(obj.shape) != tuple(shape):
            got = _shape(obj) if isinstance(obj, torch.Tensor) else type(obj).__name__
            raise ExerciseError(f"Your {name}'s `{path}` has shape {got}, expected {tuple(shape)}; keep "
                                "the __init__ the exercise gives.")
    return obj


def _randomise(name: str, module: torch.nn.Module, paths, seed: int) -> None:
    """Give the contract's parameters random values (norm gains around 1, biases around 0).

    Only ``paths`` change: a learner's own extra parameters (a frozen scale, say) keep their values.
    """
    g = _gen(seed)
    for path in paths:
        p = _sub(name, module, path)
        if path.endswith("bias"):
            value = _randn(g, *p.shape, scale=0.3)
        elif p.dim() == 1:  # a norm's gain
            value = 1.0 + _randn(g, *p.shape, scale=0.3)
        else:
            value = _randn(g, *p.shape, scale=1.0 / math.sqrt(p.shape[-1]))
        p.data.copy_(value.to(p.dtype))


def _copy_params(name: str, cand, ref, paths) -> None:
    for path in paths:
        src = _sub(name, cand, path, shape=tuple(_sub(name, ref, path).shape))
        _sub(name, ref, path).data.copy_(src.detach())


def _call_module(name, module, label, *args):
    inputs = {"x": args[0]}
    if len(args) > 1 and args[1] is not None:
        inputs["mask"] = args[1]
    before = _snapshot(inputs)
    if len(args) > 1 and args[1] is None:
        args = args[:1]
    got = _invoke(name, label, module, *args)
    _check_unchanged(name, before, inputs)
    return _expect_tensor(name, got, label, "the output tensor")


def _identical(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Same shape, dtype and values (NaN equal to NaN): how a repeated call of a right answer compares."""
    return (a.shape == b.shape and a.dtype == b.dtype
            and torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True))


def _check_repeatable(name, module, label, got, *args) -> None:
    """In eval() mode a module must give the same output twice: catch dropout left switched on."""
    again = _call_module(name, module, label, *args)
    if not _identical(again, got):
        raise ExerciseError(
            f"Your {name} gives a different output each time {label}: dropout is active in eval mode, or "
            "something is kept from one call to the next.\nHint: use nn.Dropout modules, which switch off "
            "in eval(); F.dropout(x, p) needs training=self.training. Do not store results (statistics, "
            "a mask, keys) on self during forward."
        )


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


def _fresh_output(name, rebuild, cand, label, *inputs):
    """The output of a newly built copy of the learner's module, with the same weights and mode."""
    fresh = rebuild()
    fresh.load_state_dict(cand.state_dict(), strict=False)
    fresh.train(cand.training)
    return _call_module(name, fresh, label, *inputs)


def _compare_output(name, got, want, label, mistakes, variant_args, generic_hint, case_hint="",
                    factor=1.0, rerun=None, random_hint="", fresh=None):
    if got.shape != want.shape:
        hint = ""
        if sorted(got.shape) == sorted(want.shape):
            hint = "\nHint: the dimensions are in the wrong order; check your transposes and reshapes."
        raise ExerciseError(
            f"Your {name} returned shape {_shape(got)} {label}, but it should be {_shape(want)}.{hint}"
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
    if torch.isnan(got).any() or torch.isinf(got).any():
        raise ExerciseError(
            f"Your {name} returned NaN or infinite values {label}.\nHint: {case_hint or generic_hint}"
        )
    raise ExerciseError(
        f"Your {name} gives different numbers from the reference {label}: {_where_differs(got, want)}."
        f"\nHint: {case_hint or generic_hint}"
    )


# ----------------------------------------------------------------------------------------------
# Multi-head attention


_MHA_PATHS = [f"{w}.{p}" for w in ("w_q", "w_k", "w_v", "w_o") for p in ("weight", "bias")]


def _mha(x, p, n_heads, mask=None, *, split="transpose", merge="transpose", scale="head",
         use_wo=True, project_v=True, shared="", bias="all", transpose_w=True, causal=False, residual=False,
         **attn_kw):
    b, length, d_model = x.shape
    d_head = d_model // n_heads
    x64 = x.double()
    lin = {k: v.double() for k, v in p.items()}

    def proj(w, t):
        w = (shared.get(w, w) if isinstance(shared, dict) else shared) if shared and w != "w_o" else w
        keep = bias == "all" or (bias == "w_o only" and w == "w_o")
        weight = lin[f"{w}.weight"] if transpose_w else lin[f"{w}.weight"].T  # F.linear computes t @ W.T
        return F.linear(t, weight, lin[f"{w}.bias"] if keep else None)

    def split_(t):
        if split == "transpose":
            return t.reshape(b, length, n_heads, d_head).transpose(1, 2)
        if split == "head_last":  # (B, L, d_head, H): the features of one head are not contiguous
            return t.reshape(b, length, d_head, n_heads).permute(0, 3, 1, 2)
        return t.reshape(b, n_heads, length, d_head)

    q, k = split_(proj("w_q", x64)), split_(proj("w_k", x64))
    v = split_(proj("w_v", x64) if project_v else x64)
    if scale == "model":
        q = q * math.sqrt(d_head) / math.sqrt(d_model)
    elif scale == "none":
        q = q * math.sqrt(d_head)
    elif scale == "heads":
        q = q * math.sqrt(d_head) / math.sqrt(n_heads)
    elif scale == "d_head":  # divided by d_head itself
        q = q / math.sqrt(d_head)
    if causal:
        tril = torch.ones(length, length, dtype=torch.bool).tril()
        mask = tril if mask is None else mask & tril
    heads = _attention(q, k, v, mask, **attn_kw)["out"]
    if merge == "transpose":
        merged = heads.transpose(1, 2).reshape(b, length, d_model)
    elif merge == "head_last":
        merged = heads.permute(0, 2, 3, 1).reshape(b, length, d_model)
    else:
        merged = heads.reshape(b, length, d_model)
    out = proj("w_o", merged) if use_wo else merged
    if residual:
        out = out + x64
    return {"out": out.to(x.dtype)}


_MHA_MISTAKES = [
    ("the heads are split without the transpose. Reshape (B, L, d_model) to (B, L, H, d_head) and then "
     "transpose to (B, H, L, d_head); a direct view to (B, H, L, d_head) mixes positions and features.",
     lambda x, p, h, m: [_mha(x, p, h, m, split="plain", merge="plain"),
                         _mha(x, p, h, m, split="plain")]),
    ("the heads are merged without the transpose. Transpose (B, H, L, d_head) back to (B, L, H, d_head) "
     "before reshaping to (B, L, d_model) (call .contiguous() or use .reshape).",
     lambda x, p, h, m: _mha(x, p, h, m, merge="plain")),
    ("the heads are split or merged in the wrong order: (B, L, d_model) reshapes to (B, L, H, d_head), "
     "heads before features, so each head owns d_head neighbouring features; (B, L, d_head, H) "
     "interleaves the heads. Use the same order to merge them back.",
     lambda x, p, h, m: [_mha(x, p, h, m, split="head_last", merge="head_last"),
                         _mha(x, p, h, m, split="head_last"), _mha(x, p, h, m, merge="head_last")]),
    ("q, k and v all come from the same projection. Each has its own: q = self.w_q(x), "
     "k = self.w_k(x), v = self.w_v(x).",
     lambda x, p, h, m: [_mha(x, p, h, m, shared=w) for w in ("w_q", "w_k", "w_v")]),
    ("q, k and v do not come from their own projections (a layer is used twice, or two are swapped): "
     "q = self.w_q(x), k = self.w_k(x), v = self.w_v(x).",
     lambda x, p, h, m: [_mha(x, p, h, m, shared=dict(zip(("w_q", "w_k", "w_v"), combo)))
                         for combo in itertools.product(("w_q", "w_k", "w_v"), repeat=3)
                         if combo != ("w_q", "w_k", "w_v") and len(set(combo)) > 1]),
    ("it adds the input back (a residual). Multi-head attention returns w_o(merged heads) only; the "
     "encoder block adds the residual.",
     lambda x, p, h, m: _mha(x, p, h, m, residual=True)),
    ("the projections' biases are missing: call the layers, self.w_q(x), or pass their bias to F.linear.",
     lambda x, p, h, m: [_mha(x, p, h, m, bias="none"), _mha(x, p, h, m, bias="w_o only")]),
    ("the scores are divided by d_head; divide them by its square root, math.sqrt(d_head).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="d_head")),
    ("the projections use the weight matrices untransposed. nn.Linear stores its weight as "
     "(out_features, in_features) and computes x @ W.T + b; simplest is to call the layers: self.w_q(x).",
     lambda x, p, h, m: _mha(x, p, h, m, transpose_w=False)),
    ("later positions get no weight, as with a causal mask. An encoder's attention is bidirectional: "
     "every token may attend to every key the given mask allows (no is_causal, no triangle of its own).",
     lambda x, p, h, m: _mha(x, p, h, m, causal=True)),
    ("the scores are scaled by sqrt(n_heads); each head should use sqrt(d_head) = sqrt(d_model / n_heads).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="heads")),
    ("the output projection is missing: after merging the heads, apply self.w_o.",
     lambda x, p, h, m: _mha(x, p, h, m, use_wo=False)),
    ("the values are not projected: v should be self.w_v(x), split into heads like q and k.",
     lambda x, p, h, m: _mha(x, p, h, m, project_v=False)),
    ("the scores are scaled by sqrt(d_model); each head should use sqrt(d_head) = sqrt(d_model / n_heads).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="model")),
    ("the scores are not scaled: divide each head's q @ k^T by sqrt(d_head).",
     lambda x, p, h, m: _mha(x, p, h, m, scale="none")),
    ("the softmax runs over the wrong axis: it must normalise over the keys, the last dimension (dim=-1).",
     lambda x, p, h, m: [_mha(x, p, h, m, softmax_dim=d) for d in (1, 2)]),
    ("the mask is inverted. True means 'may attend': fill the scores where the mask is False.",
     lambda x, p, h, m: [_mha(x, p, h, m, mask_mode="inverted", fill=f) for f in ("zero", "nan", "min")]),
    ("masked scores are set to 0, which still gives those keys weight. Fill them with float('-inf') "
     "before the softmax.", lambda x, p, h, m: _mha(x, p, h, m, mask_mode="zero")),
    ("the mask is applied after the softmax; fill the masked scores with float('-inf') before it.",
     lambda x, p, h, m: _mha(x, p, h, m, mask_mode="after")),
    ("the mask has no effect (is it passed on to the attention?). Padding keys must get zero weight.",
     lambda x, p, h, m: _mha(x, p, h, m, mask_mode="ignore")),
]


_MHA_RANDOM_HINT = {
    "eval": "in eval() mode nothing may be random: use nn.Dropout modules, which switch off in eval(), or "
            "F.dropout(..., training=self.training); never call torch.manual_seed inside forward.",
    "train": "this MultiHeadAttention was built without dropout (the exercise's has none), so nothing in it "
             "may be random, even in train() mode.",
}


def _mha_cases(g, d_model: int):
    """(label, x, mask, hint) for one width: shapes, masks of several layouts, tiny and large inputs."""
    x = _randn(g, 2, 6, d_model)
    pad = torch.tensor([[True] * 6, [True, True, True, True, False, False]])[:, None, None, :]
    pad3 = torch.tensor([[True, True, False, False], [True] * 4, [True, False, False, False]])[:, None, None, :]
    pairs = torch.rand(3, 1, 4, 4, generator=g) > 0.5
    pairs[..., 0] = True  # every query keeps a key
    size = f"d_model={d_model}"
    return [
        (f"with {size}, x (2, 6, {d_model}), no mask", x, None, ""),
        (f"with {size} and a padding mask (2, 1, 1, 6)", x, pad,
         "Without a mask your class is right: pass the mask on to the attention and fill masked "
         "scores with float('-inf') before the softmax."),
        (f"with {size}, tiny inputs (about 1e-3)", x * 1e-3, pad, ""),
        (f"with {size}, large inputs (about 1000)", x * 1e3, pad,
         "It works on ordinary inputs but not on large ones: if you wrote the softmax yourself, "
         "subtract each row's maximum before exp()."),
        (f"with {size}, a batch of one, x (1, 5, {d_model}), no mask", _randn(g, 1, 5, d_model), None,
         "It works for a batch of 2 but not for a batch of 1: take B and L from x.shape and never squeeze "
         "the batch dimension away (.squeeze() without a dim drops every size-1 dimension)."),
        (f"with {size}, x (3, 4, {d_model}) and padding in the first and last sequences (3, 1, 1, 4)",
         _randn(g, 3, 4, d_model), pad3,
         "Each sequence has its own padding: apply each row of the mask to its own sequence, and do "
         "not assume the first sequence is the longest."),
        (f"with {size}, x (3, 4, {d_model}) and a causal mask of shape (4, 4)", _randn(g, 3, 4, d_model),
         torch.ones(4, 4, dtype=torch.bool).tril(),
         "The mask may have any shape that broadcasts to (B, H, L, L), here (L, L): pass it on to the "
         "attention unchanged (no view or reshape to (B, 1, 1, L)); broadcasting does the rest."),
        (f"with {size}, x (3, 4, {d_model}) and a mask per query and key (3, 1, 4, 4)",
         _randn(g, 3, 4, d_model), pairs,
         "The mask may have any shape that broadcasts to (B, H, L, L), here (B, 1, L, L): pass it on to "
         "the attention unchanged."),
    ]


@_checker("multi_head_attention")
def check_multi_head_attention(cls):
    """Check a ``MultiHeadAttention(d_model, n_heads)`` class (``w_q, w_k, w_v, w_o``; ``forward(x, mask=None)``)."""
    from .multi_head import MultiHeadAttention as Reference

    name = "MultiHeadAttention"
    g = _gen(2)
    # Widths where sqrt(d_head), d_head, sqrt(d_model) and sqrt(n_heads) all differ come first.
    for index, (d_model, n_heads, seed) in enumerate(((16, 2, 11), (12, 3, 12), (16, 4, 14), (8, 1, 13))):
        rebuild = functools.partial(_build, name, cls, d_model, n_heads)
        cand = rebuild()
        ref = Reference(d_model, n_heads, fast=False)
        for path in _MHA_PATHS:
            _sub(name, cand, path, shape=tuple(_sub(name, ref, path).shape))
        _randomise(name, cand, _MHA_PATHS, seed)
        _copy_params(name, cand, ref, _MHA_PATHS)
        params = {path: _sub(name, ref, path).detach() for path in _MHA_PATHS}
        ref.eval()
        cases = _mha_cases(g, d_model)
        for mode in (("eval", "train") if index == 0 else ("eval",)):
            getattr(cand, mode)()
            for label, xx, mask, case_hint in cases:
                label_m = f"{label}, n_heads={n_heads}, in {mode}() mode"
                got = _call_module(name, cand, label_m, xx, mask)
                if mode == "eval":
                    _check_repeatable(name, cand, label_m, got, xx, mask)
                want = ref(xx, mask) if mask is not None else ref(xx)
                _compare_output(
                    name, got, want, label_m, _MHA_MISTAKES, (xx, params, n_heads, mask),
                    "project x with w_q, w_k, w_v; split into heads (B, H, L, d_head); attend with the "
                    "mask; merge the heads back to (B, L, d_model); apply w_o.", case_hint,
                    rerun=functools.partial(_call_module, name, cand, label_m, xx, mask),
                    random_hint=_MHA_RANDOM_HINT[mode],
                    fresh=functools.partial(_fresh_output, name, rebuild, cand, label_m, xx, mask))
        if index == 0:
            label, xx, mask, _ = cases[1]
            _module_gradients(name, cand, ref, _MHA_PATHS, f"{label}, n_heads={n_heads}", xx, mask)


# ----------------------------------------------------------------------------------------------
# LayerNorm


def _ln(x, weight, bias, eps, *, dims=(-1,), unbiased=False, eps_out=False, use_w=True, use_b=True,
        center=True, swap=False, use_eps=True, rms=False, bias_first=False):
    x64 = x.double()
    mean = x64.mean(dim=dims, keepdim=True) if center else 0.0
    var = x64.var(dim=dims, keepdim=True, unbiased=unbiased)
    if rms:  # RMSNorm: the mean square, nothing subtracted
        var = (x64 ** 2).mean(dim=dims, keepdim=True)
    e = eps if use_eps else 0.0
    if eps_out:
        y = (x64 - mean) / (var.sqrt() + e)
    else:
        y = (x64 - mean) / torch.sqrt(var + e)
    w, b = (bias, weight) if swap else (weight, bias)
    if bias_first:
        return {"out": ((y + b.double()) * w.double()).to(x.dtype)}
    if use_w:
        y = y * w.double()
    if use_b:
        y = y + b.double()
    return {"out": y.to(x.dtype)}


_LN_MISTAKES = [
    ("it normalises over the wrong axis. LayerNorm normalises each token over its own features, the "
     "last dimension: mean and variance with dim=-1, keepdim=True (not across the sequence or batch).",
     lambda x, w, b, e: [_ln(x, w, b, e, dims=(d,)) for d in range(x.dim() - 1)]
     + [_ln(x, w, b, e, dims=tuple(range(x.dim())))] + ([_ln(x, w, b, e, dims=(-2, -1))] if x.dim() > 2 else [])),
    ("it normalises each feature over the batch and the sequence, as BatchNorm does. LayerNorm "
     "normalises each token over its own features: mean and variance with dim=-1, keepdim=True.",
     lambda x, w, b, e: _ln(x, w, b, e, dims=tuple(range(x.dim() - 1)))),
    ("it divides by the root mean square without subtracting the mean: that is RMSNorm. LayerNorm "
     "first centres each token: (x - mean) / sqrt(var + eps).",
     lambda x, w, b, e: _ln(x, w, b, e, center=False, rms=True)),
    ("self.bias is added before multiplying by self.weight. The order is weight * x_hat + bias.",
     lambda x, w, b, e: _ln(x, w, b, e, bias_first=True)),
    ("it uses the unbiased variance (dividing by d_model - 1). LayerNorm divides by d_model: "
     "x.var(dim=-1, unbiased=False, keepdim=True) (torch.var and torch.std default to unbiased).",
     lambda x, w, b, e: [_ln(x, w, b, e, unbiased=True), _ln(x, w, b, e, unbiased=True, eps_out=True)]),
    ("eps is added outside the square root. It belongs inside: (x - mean) / sqrt(var + eps).",
     lambda x, w, b, e: _ln(x, w, b, e, eps_out=True)),
    ("eps is missing: divide by sqrt(var + eps), not sqrt(var) (it matters when the variance is tiny).",
     lambda x, w, b, e: _ln(x, w, b, e, use_eps=False)),
    ("it ignores the eps it was given: use self.eps (the value passed to __init__), not a fixed number.",
     lambda x, w, b, e: [_ln(x, w, b, fixed) for fixed in (1e-5, 1e-6, 1e-12, 1e-8) if fixed != e]),
    ("gamma (self.weight) and beta (self.bias) are swapped: y = x_hat * weight + bias.",
     lambda x, w, b, e: _ln(x, w, b, e, swap=True)),
    ("gamma and beta are missing: after normalising, multiply by self.weight and add self.bias.",
     lambda x, w, b, e: _ln(x, w, b, e, use_w=False, use_b=False)),
    ("gamma (self.weight) is missing: multiply the normalised x by self.weight before adding self.bias.",
     lambda x, w, b, e: _ln(x, w, b, e, use_w=False)),
    ("beta (self.bias) is missing: add self.bias after multiplying by self.weight.",
     lambda x, w, b, e: _ln(x, w, b, e, use_b=False)),
    ("the mean is not subtracted: x_hat = (x - mean) / sqrt(var + eps).",
     lambda x, w, b, e: _ln(x, w, b, e, center=False)),
]


@_checker("layer_norm")
def check_layer_norm(cls):
    """Check a ``LayerNorm(d_model, eps=1e-5)`` class (parameters ``weight``, ``bias``)."""
    from .layer_norm import LayerNorm as Reference

    name = "LayerNorm"
    g = _gen(3)
    for d_model, eps, seed in ((16, None, 21), (8, 1e-3, 22)):
        if eps is None:
            rebuild, ref = functools.partial(_build, name, cls, d_model), Reference(d_model)
        else:
            rebuild, ref = functools.partial(_build, name, cls, d_model, eps=eps), Reference(d_model, eps=eps)
        cand = rebuild()
        default_eps = getattr(cand, "eps", None)
        if eps is None and isinstance(default_eps, float) and default_eps != 1e-5:
            raise ExerciseError(
                f"Your {name}'s default eps is {default_eps:g}; the exercise's (and nn.LayerNorm's) is 1e-5. "
                "Keep the __init__ the exercise gives: def __init__(self, d_model, eps=1e-5)."
            )
        for path in ("weight", "bias"):
            _sub(name, cand, path, shape=(d_model,))
        _randomise(name, cand, ("weight", "bias"), seed)
        _copy_params(name, cand, ref, ("weight", "bias"))
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
        for mode in ("eval", "train"):
            getattr(cand, mode)()
            for label, xx, case_hint in cases:
                label_m = label if mode == "eval" else f"{label}, in train() mode"
                got = _call_module(name, cand, label_m, xx)
                _check_repeatable(name, cand, label_m, got, xx)
                _compare_output(name, got, ref(xx), label_m, _LN_MISTAKES, (xx, w, b, e),
                                "y = weight * (x - mean) / sqrt(var + eps) + bias, with mean and the "
                                "biased variance over the last dimension.", case_hint, factor=2.0,
                                fresh=functools.partial(_fresh_output, name, rebuild, cand, label_m, xx))
        _module_gradients(name, cand, ref, ("weight", "bias"), cases[0][0], cases[0][1])
        # In float64, as after model.double(): the result must stay float64 (no .float() inside).
        cand.double().eval()
        x64 = x.double()
        label = f"on a float64 x of shape (2, 5, {d_model}) with the module in float64 (.double()), {eps_txt}"
        got = _call_module(name, cand, label, x64)
        _compare_output(name, got, ref.double()(x64), label, _LN_MISTAKES, (x64, w, b, e),
                        "compute in the input's dtype: no .float() or float32 constants as tensors.",
                        factor=2.0)


# ----------------------------------------------------------------------------------------------
# Feed-forward


def _ffn(x, p, *, act="gelu", act_out=False, residual=False, bias=True):
    x64 = x.double()
    h = F.linear(x64, p["w1.weight"].double(), p["w1.bias"].double() if bias else None)
    acts = {
        "gelu": F.gelu, "relu": F.relu, "none": lambda t: t, "tanh": lambda t: F.gelu(t, approximate="tanh"),
        "sigmoid": lambda t: t * torch.sigmoid(1.702 * t), "silu": F.silu,
        "erf_no_sqrt2": lambda t: 0.5 * t * (1 + torch.erf(t / 2)),
    }
    h = acts[act](h)
    y = F.linear(h, p["w2.weight"].double(), p["w2.bias"].double() if bias else None)
    if act_out:
        y = acts[act](y)
    if residual:
        y = y + x64
    return {"out": y.to(x.dtype)}


def _ffn_mistakes(expected: str):
    other = "relu" if expected == "gelu" else "gelu"
    mistakes = [
        (f"it uses {'ReLU' if other == 'relu' else 'GELU'} where this feed-forward network should use "
         f"{expected.upper() if expected == 'gelu' else 'ReLU'}"
         + (" (the default activation is the exact GELU: F.gelu(h))." if expected == "gelu"
            else " (activation='relu' was asked: F.relu(h); read self.activation)."),
         lambda x, p: _ffn(x, p, act=other)),
        ("there is no non-linearity between w1 and w2: apply the activation to w1(x) before w2.",
         lambda x, p: _ffn(x, p, act="none")),
        ("the activation is also applied after w2; the output is w2(act(w1(x))), with nothing after w2.",
         lambda x, p: _ffn(x, p, act=expected, act_out=True)),
        ("it adds the input back (a residual). The feed-forward network returns w2(act(w1(x))) only; "
         "the encoder block adds the residual.",
         lambda x, p: _ffn(x, p, act=expected, residual=True)),
        ("the biases of w1 and w2 are missing: call the layers, self.w1(x), or pass their bias to F.linear.",
         lambda x, p: _ffn(x, p, act=expected, bias=False)),
    ]
    if expected == "gelu":
        mistakes += [
            ("it uses an approximation of GELU (tanh or sigmoid). The course uses the exact GELU with "
             "the erf: F.gelu(h) (approximate='none').",
             lambda x, p: [_ffn(x, p, act="tanh"), _ffn(x, p, act="sigmoid")]),
            ("it uses SiLU (swish) instead of GELU: use F.gelu(h).", lambda x, p: _ffn(x, p, act="silu")),
            ("the GELU divides by 2 inside the erf; the exact GELU is 0.5 * h * (1 + erf(h / sqrt(2))), "
             "which is F.gelu(h).", lambda x, p: _ffn(x, p, act="erf_no_sqrt2")),
        ]
    return mistakes


@_checker("feed_forward")
def check_feed_forward(cls):
    """Check a ``FeedForward(d_model, d_ff)`` class (``w1``, ``w2``, exact GELU by default)."""
    import inspect

    from .feed_forward import FeedForward as Reference

    name = "FeedForward"
    g = _gen(4)
    paths = ("w1.weight", "w1.bias", "w2.weight", "w2.bias")
    try:
        params_of_init = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        params_of_init = {}
    settings = [(8, 32, None, 31), (6, 10, None, 32)]
    if "activation" in params_of_init:
        settings += [(8, 16, "relu", 33), (8, 16, "gelu", 34)]
    for d_model, d_ff, activation, seed in settings:
        if activation is None:
            rebuild, ref, act = functools.partial(_build, name, cls, d_model, d_ff), Reference(d_model, d_ff), "gelu"
        else:
            rebuild = functools.partial(_build, name, cls, d_model, d_ff, activation=activation)
            ref, act = Reference(d_model, d_ff, activation=activation), activation
        cand = rebuild()
        ref.eval()
        for path in paths:
            _sub(name, cand, path, shape=tuple(_sub(name, ref, path).shape))
        _randomise(name, cand, paths, seed)
        _copy_params(name, cand, ref, paths)
        p = {path: _sub(name, ref, path).detach() for path in paths}
        x = _randn(g, 2, 5, d_model)
        setting = f"d_model={d_model}, d_ff={d_ff}" + (f", activation={activation!r}" if activation else "")
        cases = [
            (f"with {setting}, x (2, 5, {d_model})", x),
            (f"with {setting}, tiny inputs (about 1e-3)", x * 1e-3),
            (f"with {setting}, large inputs (about 1000)", x * 1e3),
            (f"with {setting}, x (1, 3, {d_model})", _randn(g, 1, 3, d_model)),
            (f"with {setting}, x (4, 7, {d_model})", _randn(g, 4, 7, d_model)),
        ]
        for mode in ("eval", "train"):
            getattr(cand, mode)()
            for label, xx in cases:
                label_m = f"{label}, in {mode}() mode"
                got = _call_module(name, cand, label_m, xx)
                if mode == "eval":
                    _check_repeatable(name, cand, label_m, got, xx)
                _compare_output(name, got, ref(xx), label_m, _ffn_mistakes(act), (xx, p),
                                "output = w2(activation(w1(x))), the same for every position; take the "
                                "sizes from x, never fixed numbers.",
                                rerun=functools.partial(_call_module, name, cand, label_m, xx),
                                random_hint="this FeedForward was built without dropout (the exercise's has "
                                            "none), so nothing in it may be random, even in train() mode.",
                                fresh=functools.partial(_fresh_output, name, rebuild, cand, label_m, xx))
        _module_gradients(name, cand, ref, paths, f"{cases[0][0]}, in eval() mode", cases[0][1])


# ----------------------------------------------------------------------------------------------
# Encoder block


_BLOCK_PATHS = (
    [f"attn.{p}" for p in _MHA_PATHS]
    + [f"ffn.{w}.{p}" for w in ("w1", "w2") for p in ("weight", "bias")]
    + [f"{n}.{p}" for n in ("norm1", "norm2") for p in ("weight", "bias")]
)


def _block(x, r, mask, norm_first, kind="right"):
    """The block and its usual mistakes, from the reference's submodules ``r`` (in eval mode)."""
    if kind == "no_mask":
        attn = r.attn
    elif kind == "mask_inverted":
        attn = (lambda t: r.attn(t, ~mask))
    else:
        attn = (lambda t: r.attn(t, mask))
    ffn, n1, n2 = r.ffn, r.norm1, r.norm2
    if kind == "swap_norms":
        n1, n2 = n2, n1
    elif kind == "norm1_twice":
        n2 = n1
    elif kind == "norm2_twice":
        n1 = n2
    elif kind == "ffn_first":  # the norms either stay in place or travel with their sublayer
        outs = []
        for first_norm, second_norm in ((n1, n2), (n2, n1)):
            if norm_first:
                y = x + ffn(first_norm(x))
                outs.append({"out": y + attn(second_norm(y))})
            else:
                y = first_norm(x + ffn(x))
                outs.append({"out": second_norm(y + attn(y))})
        return outs
    elif kind == "no_res_attn":
        return _block_one_residual(x, attn, ffn, n1, n2, norm_first, residual_attn=False)
    elif kind == "no_res_ffn":
        return _block_one_residual(x, attn, ffn, n1, n2, norm_first, residual_ffn=False)
    if kind == "swap_ln":
        norm_first = not norm_first
    if kind in ("attn_twice", "ffn_twice"):
        attn = ffn = attn if kind == "attn_twice" else ffn
    if kind == "post_no_norm2":  # post-LN that returns before the second norm
        x = n1(x + attn(x))
        return {"out": x + ffn(x)}
    if kind == "pre_out_norm":  # pre-LN with an extra norm around the block's output
        x = x + attn(n1(x))
        return {"out": n2(x + ffn(n2(x)))}
    if kind == "sandwich":  # post-LN that also normalises each sublayer's input
        x = n1(x + attn(n1(x)))
        return {"out": n2(x + ffn(n2(x)))}
    if norm_first:
        if kind == "norm_residual":
            h = n1(x)
            x = h + attn(h)
            h = n2(x)
            return {"out": h + ffn(h)}
        if kind == "no_residual":
            x = attn(n1(x))
            return {"out": ffn(n2(x))}
        if kind == "parallel":
            return {"out": x + attn(n1(x)) + ffn(n2(x))}
        x = x + attn(n1(x))
        return {"out": x + ffn(n2(x))}
    if kind == "no_residual":
        x = n1(attn(x))
        return {"out": n2(ffn(x))}
    if kind == "parallel":
        a = n1(x + attn(x))
        return {"out": n2(a + ffn(x))}
    x = n1(x + attn(x))
    return {"out": n2(x + ffn(x))}


def _block_one_residual(x, attn, ffn, n1, n2, norm_first, residual_attn=True, residual_ffn=True):
    if norm_first:
        a = attn(n1(x))
        x = x + a if residual_attn else a
        f = ffn(n2(x))
        return {"out": x + f if residual_ffn else f}
    a = attn(x)
    x = n1(x + a if residual_attn else a)
    f = ffn(x)
    return {"out": n2(x + f if residual_ffn else f)}


# Each mistake of the block: its explanation and the name `_block` computes it under.
_BLOCK_MISTAKES = [
    ("no_residual",
     "a residual connection is missing: each sublayer's output is added to its input (x + ...)."),
    ("swap_norms",
     "norm1 and norm2 are swapped: norm1 goes with the attention sublayer, norm2 with the feed-forward."),
    ("no_res_attn",
     "the residual connection around the attention sublayer is missing: add the attention's "
     "output to its input (x + ...)."),
    ("no_res_ffn",
     "the residual connection around the feed-forward sublayer is missing: add the feed-forward "
     "output to its input (x + ...)."),
    ("norm1_twice",
     "norm1 is used for both sublayers: the feed-forward sublayer has its own LayerNorm, norm2."),
    ("norm2_twice",
     "norm2 is used for both sublayers: the attention sublayer has its own LayerNorm, norm1."),
    ("ffn_first",
     "the sublayers are in the wrong order: attention comes first, then the feed-forward network."),
    ("no_mask",
     "the mask is not passed to the attention: call self.attn(..., mask)."),
    ("post_no_norm2",
     "the second LayerNorm is missing: in post-LN the block ends with x = norm2(x + ffn(x))."),
    ("attn_twice",
     "the attention sublayer is used twice: the second sublayer is the feed-forward network, self.ffn(...)."),
    ("ffn_twice",
     "the feed-forward network is used twice: the first sublayer is the attention, self.attn(..., mask)."),
    ("mask_inverted",
     "the mask is inverted before it reaches the attention. True already means 'may attend': pass "
     "it on as given, self.attn(..., mask)."),
    ("pre_out_norm",
     "the block's output is normalised again. In pre-LN only each sublayer's input is normalised: "
     "return x + ffn(norm2(x)) as it is."),
    ("sandwich",
     "the sublayers' inputs are normalised too. In post-LN the norm comes only after each residual "
     "sum: x = norm1(x + attn(x, mask))."),
    ("norm_residual",
     "the residual adds the normalised x. In pre-LN the residual stream stays un-normalised: "
     "x = x + attn(norm1(x)), not h + attn(h) with h = norm1(x)."),
    ("parallel",
     "the feed-forward network reads the block's input instead of the attention sublayer's result: "
     "compute the attention step first, then feed its output to the feed-forward step."),
]


def _block_mistakes(norm_first: bool):
    asked = ("pre-LN (norm_first=True): x = x + attn(norm1(x)); x = x + ffn(norm2(x))" if norm_first else
             "post-LN (norm_first=False): x = norm1(x + attn(x)); x = norm2(x + ffn(x))")
    wrote = "post-LN" if norm_first else "pre-LN"
    return [
        (f"pre-LN and post-LN are mixed up: you wrote {wrote}, but this block was built as {asked}.\n"
         "Hint: branch on self.norm_first.",
         lambda x, r, m: _block(x, r, m, norm_first, "swap_ln")),
    ] + [(message, functools.partial(_block, norm_first=norm_first, kind=kind))
         for kind, message in _BLOCK_MISTAKES]


@_checker("encoder_block")
def check_encoder_block(cls):
    """Check an ``EncoderBlock(d_model, n_heads, d_ff, dropout=..., norm_first=...)`` class."""
    from .block import EncoderBlock as Reference

    name = "EncoderBlock"
    g = _gen(5)
    d_model, n_heads, d_ff = 16, 4, 32
    pad = torch.tensor([[True] * 5, [True, True, True, False, False]])[:, None, None, :]
    pad3 = torch.tensor([[True, True, False, False], [True] * 4, [True, False, False, False]])[:, None, None, :]
    x = _randn(g, 2, 5, d_model)
    x1, x3 = _randn(g, 1, 3, d_model), _randn(g, 3, 4, d_model)
    for norm_first in (False, True):
        style = "pre-LN (norm_first=True)" if norm_first else "post-LN (norm_first=False)"
        for dropout in (0.3, 0.0):
            rebuild = functools.partial(_build, name, cls, d_model, n_heads, d_ff, dropout=dropout,
                                        norm_first=norm_first)
            cand = rebuild()
            ref = Reference(d_model, n_heads, d_ff, dropout=0.0, norm_first=norm_first, fast=False)
            for path in _BLOCK_PATHS:
                _sub(name, cand, path, shape=tuple(_sub(name, ref, path).shape))
            _randomise(name, cand, _BLOCK_PATHS, 41 + norm_first)
            _copy_params(name, cand, ref, _BLOCK_PATHS)
            for norm in ("norm1", "norm2"):
                eps = getattr(_sub(name, cand, norm), "eps", None)
                if isinstance(eps, float):
                    getattr(ref, norm).eps = eps
            ref.eval()
            cases = [
                (f"as {style}, x (2, 5, {d_model}), no mask", x, None),
                (f"as {style} with a padding mask (2, 1, 1, 5)", x, pad),
                (f"as {style} with tiny inputs (about 1e-3)", x * 1e-3, pad),
                (f"as {style} with large inputs (about 1000)", x * 1e3, pad),
                (f"as {style}, a batch of one, x (1, 3, {d_model}), no mask", x1, None),
                (f"as {style}, x (3, 4, {d_model}) with padding in the first and last sequences", x3, pad3),
            ]
            modes = ("eval",) if dropout else ("eval", "train")
            for mode in modes:
                getattr(cand, mode)()
                for label, xx, mask in cases:
                    label_m = f"{label}, dropout={dropout}, in {mode}() mode"
                    got = _call_module(name, cand, label_m, xx, mask)
                    if mode == "eval":
                        _check_repeatable(name, cand, label_m, got, xx, mask)
                    want = ref(xx, mask) if mask is not None else ref(xx)
                    _compare_output(
                        name, got, want, label_m, _block_mistakes(norm_first), (xx, ref, mask),
                        "post-LN: x = norm1(x + attn(x, mask)); x = norm2(x + ffn(x)). "
                        "pre-LN: x = x + attn(norm1(x), mask); x = x + ffn(norm2(x)). Take the sizes "
                        "from x, never fixed numbers.", factor=3.0,
                        rerun=functools.partial(_call_module, name, cand, label_m, xx, mask),
                        random_hint="this block was built with dropout=0.0, so nothing in it may be random: "
                                    "build the dropout layers from the dropout argument, nn.Dropout(dropout), "
                                    "not from a fixed rate.",
                        fresh=functools.partial(_fresh_output, name, rebuild, cand, label_m, xx, mask))
            if not dropout:
                _module_gradients(name, cand, ref, _BLOCK_PATHS, f"{cases[1][0]}, in eval() mode", x, pad)
            if dropout:
                cand.train()
                label_t = f"as {style}, dropout={dropout}, in train() mode"
                first = _call_module(name, cand, label_t, x, pad)
                second = _call_module(name, cand, label_t, x, pad)
                if torch.equal(first, second):
                    raise ExerciseError(
                        f"Your {name} gives exactly the same output twice {label_t}, so no dropout is "
                        "happening during training.\nHint: apply dropout (self.dropout1, self.dropout2) "
                        "to each sublayer's output before adding it to the residual."
                    )
                _check_dropout_place(name, cand, ref, label_t, x, pad, dropout, norm_first)


def _check_dropout_place(name, cand, ref, label, x, mask, p: float, norm_first: bool) -> None:
    """Dropout belongs on each sublayer's output, and only there.

    With the weights of the sublayers' last layers (attn.w_o, ffn.w2) set to zero, a sublayer outputs
    just its last bias, whatever happens inside it. Keeping one bias and zeroing the other, a right
    block in train() is random only through that sublayer's dropout; with both zero it is not random
    at all and equals the reference (x for pre-LN, norm2(norm1(x)) for post-LN). In pre-LN the
    output minus x is then the kept sublayer's dropped-out bias, which shows the rate: every kept
    value is scaled by 1 / (1 - p).
    """
    def zero(path):
        for module in (cand, ref):
            _sub(name, module, path).data.zero_()

    zero("attn.w_o.weight")
    zero("ffn.w2.weight")
    ffn_bias = _sub(name, cand, "ffn.w2.bias").detach().clone()
    cand.train()
    for sublayer, drop, off, on in (("attention", "dropout1", "ffn.w2.bias", None),
                                    ("feed-forward", "dropout2", "attn.w_o.bias", "ffn.w2.bias")):
        zero(off)
        if on is not None:
            _sub(name, cand, on).data.copy_(ffn_bias)
        first = _call_module(name, cand, label, x, mask)
        if _identical(first, _call_module(name, cand, label, x, mask)):
            raise ExerciseError(
                f"Your {name} never drops the {sublayer} sublayer's output {label}. Dropout goes on what "
                f"the sublayer returns, before the residual sum: x + self.{drop}(...) around it (post-LN: "
                "inside the norm), not on the sublayer's input."
            )
        if norm_first:
            bias = _sub(name, cand, "attn.w_o.bias" if on is None else on).detach().double()
            ratio = ((first.detach().double() - x.double()) / bias)[..., bias.abs() > 1e-2]
            kept = ratio[ratio.abs() > 1e-6]
            scale = 1.0 / (1.0 - p)
            if kept.numel() and not torch.allclose(kept, torch.full_like(kept, scale), rtol=1e-3, atol=0.0):
                raise ExerciseError(
                    f"Your {name}'s dropout on the {sublayer} sublayer scales the values it keeps by "
                    f"{float(kept.median()):.3g} {label}, but dropout={p} keeps each value with probability "
                    f"1 - p and scales it by 1 / (1 - p) = {scale:.3g}.\nHint: apply self.{drop} once, built "
                    "from the dropout argument; p is the probability to drop, not to keep."
                )
    zero("ffn.w2.bias")
    got = _call_module(name, cand, label, x, mask)
    want = ref(x, mask)
    if got.shape == want.shape and not _close(got, want, factor=3.0):
        raise ExerciseError(
            f"Your {name} applies dropout (or something else random) outside the sublayers {label}: with "
            "both sublayers giving zeros, the output still changes in train() mode. Dropout belongs on "
            "each sublayer's output only, before the residual sum: x + dropout(attn(...)), never "
            "dropout(x + attn(...)) or dropout of x itself."
        )
