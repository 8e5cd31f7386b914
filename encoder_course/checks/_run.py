"""Running the learner's code safely: the time limit, error hints, and the verdict wrapper.

Every call of the learner's code goes through :func:`_invoke` (a time limit, and its exceptions turned
into learner messages); every checker body is wrapped by :func:`_checker`, which prints the one-line
verdict, turns the exercise stub into "not attempted yet", holds back what the learner's code prints
or warns, forks torch's random state and runs on one thread.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import os
import re
import sys
import threading
import time
import warnings
from dataclasses import dataclass
from typing import Callable

import torch

from . import _timer
from .registry import exercise, exercise_named


def _limit_from_environment(default: float = 10.0) -> float:
    """``ENCODER_COURSE_TIME_LIMIT`` in seconds when it is set to a positive number, else ``default``."""
    try:
        value = float(os.environ.get("ENCODER_COURSE_TIME_LIMIT", default))
    except ValueError:
        return default
    return value if value > 0 else default


#: Seconds of processor time one call of the learner's code may take on the checkers' tiny inputs
#: (processor time, so a busy machine does not stretch it). The value in force is the package's,
#: ``checks.TIME_LIMIT``; a teacher may raise it there, or with ``ENCODER_COURSE_TIME_LIMIT``.
TIME_LIMIT = _limit_from_environment()

_CHECKS_DIR = os.path.dirname(os.path.abspath(__file__))
_PRINTED_LINES = 10  # how much of what the learner's code printed a failure message shows


# ----------------------------------------------------------------------------------------------
# Errors


class ExerciseError(AssertionError):
    """The learner's answer is not right yet; the message says what and how to look for it."""

    __module__ = "encoder_course.checks"  # where learners and teachers import it from


class _NotAttempted(Exception):
    """Internal: the candidate still raises NotImplementedError."""


# ----------------------------------------------------------------------------------------------
# Calling the learner's code: a time limit, its errors turned into hints


#: What a name that is not defined needs, when it is one the course's cells import.
_IMPORTS = {
    "math": "import math",
    "torch": "import torch",
    "F": "import torch.nn.functional as F",
    "nn": "from torch import nn",
    "np": "import numpy as np",
    "ec": "import encoder_course as ec",
    "rearrange": "from einops import rearrange",
    "einops": "import einops",
    "Tensor": "from torch import Tensor",
    "Optional": "from typing import Optional",
    "re": "import re",
    "yours": "from encoder_course import yours",
}

#: What each class of the course takes when it is called, for "forward() takes N arguments" errors.
_CALLS = {
    "FeedForward": "self.ffn(x) takes only x; the mask is for the attention alone",
    "MultiHeadAttention": "self.attn(x, mask) takes x and the mask: it makes q, k and v from x itself "
                          "(not nn.MultiheadAttention's query, key, value)",
    "LayerNorm": "a LayerNorm takes only x: self.norm1(x)",
    "EncoderBlock": "a block takes x and the mask: block(x, mask)",
    "Embeddings": "the embeddings take the token ids and the token types: self.embeddings(token_ids, token_type_ids)",
}


def _shape_hint(ex, has_mask: bool) -> str:
    return ex.shape_hint + (" " + ex.mask_hint if has_mask and ex.mask_hint else "")


def _error_hint(exc: BaseException, name: str = "", masks=()) -> str:
    """The hint after "Your X raised ...": the cause the error message points to, in the learner's words.

    ``masks`` are the masks the failing call was given (the mask part of the exercise's shape hint is
    shown only when there is one).
    """
    text = str(exc)
    has_mask = bool(masks)
    ex = exercise_named(name) if name else None
    if "Boolean value of Tensor with more than one value is ambiguous" in text:
        return ("`if mask:` (or `t or default`, `t and ...`) asks whether a whole tensor is true; to test whether "
                "a tensor was given, write `if mask is not None:` (and `t if t is not None else default`).")
    if "'tuple' object has no attribute" in text or "must be a torch.Tensor, got tuple" in text:
        return ("A function returned a tuple where you expected a tensor: scaled_dot_product_attention "
                "returns (out, weights), so unpack it: `out, _ = scaled_dot_product_attention(...)`.")
    if "only one element tensors can be converted to Python scalars" in text:
        return ("A math.* function (or float()) got a whole tensor: use the torch version, which works "
                "element by element (torch.erf, torch.sqrt, torch.exp, torch.sin).")
    if isinstance(exc, NameError):
        missing = re.search(r"name '(\w+)' is not defined", text)
        word = missing.group(1) if missing else ""
        if word in _IMPORTS:
            return (f"`{word}` is not imported: add `{_IMPORTS[word]}` at the top of your cell (or to the "
                    "notebook's import cell), run it, then run the check again.")
        earlier = next((e for e in _all_exercises() if e.name == word), None)
        if earlier is not None:
            return (f"`{word}` is your answer from notebook {earlier.notebook}, which this kernel does not "
                    f"know yet: run that exercise's cell, or take your saved one with `{word} = "
                    f"yours.use(\"{earlier.key}\")` (after `from encoder_course import yours`).")
        if word in ("norm_first", "d_model", "n_heads", "d_ff", "dropout", "eps", "activation", "config"):
            return (f"`{word}` is an argument of __init__, which forward cannot see: use what __init__ kept, "
                    f"self.{word} (or the layers built from it).")
        return (f"`{word or 'a name'}` is not defined: check its spelling, and run the cells above that "
                "define it.")
    if "-100" in text and ("out of bounds" in text or "index" in text.lower()):
        return ("A padding position's label (-100, as in notebook 10's batches) was used as a class index: pick "
                "the real tokens first, logits[mask] and labels[mask], then compute the loss on those.")
    if re.search(r"Target -\d+ is out of bounds", text):
        return ("A negative label reached F.cross_entropy as a class: it skips only labels equal to its "
                "ignore_index, which is -100 unless you pass another (ignore_index=-1 for -1). Or leave the "
                "padding out first: logits[mask] and labels[mask].")
    if re.search(r"(tril|triu).*at least 2 dimensions", text):
        return ("torch.tril and torch.triu work on a matrix: build the (L, L) square first, torch.ones(L, L, "
                "dtype=torch.bool), then take its triangle.")
    if "token_type_ids must be an integer tensor, got dtype torch.bool" in text:
        return ("A bool tensor (the mask?) reached the embeddings as token_type_ids: call "
                "self.embeddings(token_ids, token_type_ids), and give the mask to the layers.")
    batch = re.search(r"Expected input batch_size \((\d+)\) to match target batch_size \((\d+)\)", text)
    if batch:
        return (f"F.cross_entropy got {batch.group(1)} rows of scores and {batch.group(2)} labels: make the labels "
                "from the scores' own size (torch.arange(scores.shape[0]), or the mask that picks the rows), never "
                "from a fixed number.")
    if "Expected target size" in text:
        return ("F.cross_entropy takes the classes on dim 1: (B, L, C) logits given as they are make L the "
                "classes. Pick the real tokens, logits[mask] (N, C) and labels[mask] (N,), or pass "
                "logits.transpose(1, 2) (B, C, L).")
    if "Subtraction, the `-` operator, with a bool tensor" in text:
        return ("`1 - mask` does not work on a bool tensor: invert a mask with ~mask (or "
                "mask.logical_not()), which keeps it bool.")
    if isinstance(exc, TypeError) and "'str' object is not callable" in text:
        return ("A string was called like a function: self.activation holds the activation's name ('gelu' "
                "or 'relu'), not the function. Look up the function it names, e.g. `F.gelu if "
                "self.activation == 'gelu' else F.relu`.")
    tensor_method = re.search(r"'NoneType' object has no attribute '(dim|shape|size|unsqueeze|bool|to|view|"
                              r"reshape|expand|any|all|ndim|dtype|device)'", text)
    if tensor_method:
        return (f"Something that is None was used as a tensor (.{tensor_method.group(1)}): an optional argument "
                "left at its default, mask=None or token_type_ids=None, is None; handle that case first, "
                "`if mask is not None:`, and pass None on as it is.")
    if "'NoneType' object is not callable" in text or "'NoneType' object has no attribute" in text:
        return ("Something that is None was used as a module: a part the configuration leaves out is None "
                "(self.final_norm in a post-LN stack, self.token_type without token types, self.norm without "
                "embedding_norm), so use it only when it is there, `if self.final_norm is not None:`; or a "
                "function returned None where you expected a value.")
    if isinstance(exc, TypeError) and "required positional argument: 'mask'" in text:
        return "the mask is optional: write `def forward(self, x, mask=None)` and pass it on only as given."
    called = re.search(r"(\w+)\.forward\(\) takes .* but \d+ were given", text)
    if called:
        cls = called.group(1)
        what = _CALLS.get(cls, f"check the arguments of your call of {cls}")
        return f"{cls} is called with more arguments than its forward takes: {what}."
    if isinstance(exc, TypeError) and "unexpected keyword argument" in text and ex is not None:
        return ("Keep the signature the exercise gives (the same argument names): the checker calls your "
                "function with them as keywords.")
    if "mask must have dtype torch.bool" in text:
        return ("The mask reached the attention as numbers: keep it bool (True = may attend) and pass it on "
                "as given, without .float() or .int().")
    if "not broadcastable to the scores' shape" in text:
        if not has_mask:
            return ("This call was given no mask, yet a mask reached the attention: one your code builds with "
                    "fixed sizes, or one kept from an earlier call. When mask is None, pass None on (the "
                    "attention then attends to every key).")
        return ("The mask you passed on no longer lines up with the scores (B, H, L_q, L_k). "
                + (ex.mask_hint if ex is not None and ex.mask_hint else "Pass it on as given."))
    if ("expected scalar type" in text or "same dtype" in text or "dtype" in text and "expected" in text):
        return ("Two tensors of different dtypes met: keep every step in the inputs' dtype (no .float(), "
                ".double() or dtype= inside; torch.tensor(...) of a Python float is float32).")
    if re.search(r"\"(bitwise_(and|or|xor|not)|logical_not)\w*\" not implemented for '(Float|Double|Half|BFloat16)'",
                 text):
        return ("&, | and ~ work on bool tensors (True/False), not on floats: compare a float tensor first, "
                "(torch.rand(...) < p), and combine the bool results.")
    if "view size is not compatible" in text:
        return ("a tensor that was transposed cannot be .view()-ed: use .reshape(...) or "
                ".contiguous().view(...).")
    if "einsum()" in text and "number of subscripts" in text:
        return ("Your einsum's equation names a fixed number of dimensions, and this input has another: write "
                "the leading (batch, heads) dimensions as an ellipsis ('...'; for attention's scores "
                "'...qd,...kd->...qk'), so one equation fits inputs with or without a heads dimension.")
    if "must be a 3D tensor" in text:
        return "torch.bmm works only on 3-D tensors; `@` (torch.matmul) handles any number of leading dimensions."
    shape_hint = _shape_hint(ex, has_mask) if ex is not None else ""
    if isinstance(exc, ValueError) and "values to unpack (expected 2" in text:
        return ("One tensor was unpacked as two: `a, _ = t` splits t along its first dimension (the batch). A "
                "sublayer such as self.attn(x, mask) returns one tensor (the output only): `a = self.attn(x, "
                "mask)`.")
    if isinstance(exc, ValueError) and ("values to unpack" in text):
        return ("`a, b = t` splits a tensor along its first dimension, and `B, H, L, d = t.shape` needs exactly "
                "that many dimensions: a shape has more (or fewer) dimensions than you unpack, or one tensor "
                "was unpacked as two. Print the shapes step by step. " + shape_hint)
    if isinstance(exc, RuntimeError) and "is invalid for input of size" in text:
        size = re.search(r"is invalid for input of size (\d+)", text)
        if size and any(m.numel() == int(size.group(1)) for m in masks) and ex is not None and ex.mask_hint:
            return f"Your code reshapes the mask ({size.group(1)} values) to a shape it does not have. " + ex.mask_hint
        return ("A .view()/.reshape() asks for sizes that do not fit this input: take every size from the "
                "tensors (B, L = x.shape[:2]; -1 for the one to infer), never from the example's numbers. "
                + shape_hint)
    if isinstance(exc, (RuntimeError, IndexError)) and (
            "shape" in text or "size" in text or "dimension" in text or "out of range" in text):
        # A padding mask (1, 1, 1, L) is a batch of one (a causal (1, 1, L, L) mask is not): the cases before had
        # bigger batches, or no mask.
        one = next((m for m in masks if isinstance(m, torch.Tensor) and m.dim() == 4 and m.shape[0] == m.shape[2] == 1),
                   None)
        if one is not None:
            return (f"This call has a batch of one with a padding mask of shape {tuple(one.shape)}: a .squeeze() "
                    "without a dim drops the batch's size-1 dimension too (and every other of size 1). Squeeze only a "
                    "dimension you name, or pass the mask on as given. " + shape_hint)
        return "Print the shape of each tensor step by step. " + shape_hint
    if isinstance(exc, AttributeError):
        return "Check the spelling of the names you use (and that the cells above have been run)."
    if isinstance(exc, TypeError):
        return "Check the arguments you pass and the types you combine (tensors, ints, None)."
    return "Read the error above (your code's traceback is shown first) and fix that line."


def _all_exercises():
    from .registry import EXERCISES

    return EXERCISES.values()


def _given_masks(args, kwargs) -> list:
    """The masks a call was given (the bool tensors among its arguments)."""
    values = list(args) + list(kwargs.values())
    return [v for v in values if isinstance(v, torch.Tensor) and v.dtype == torch.bool]


_MODULE_CALL = torch.nn.modules.module.__file__  # nn.Module.__call__'s wrappers: not the learner's code


def _from_learner(tb):
    """The traceback from the first frame that is not nn.Module's call machinery (the learner's forward)."""
    while tb.tb_next is not None and tb.tb_frame.f_code.co_filename == _MODULE_CALL:
        tb = tb.tb_next
    return tb


def _time_limit_in_force() -> float:
    """``checks.TIME_LIMIT`` as it is now (this module's value until the package is imported)."""
    return getattr(sys.modules.get(__package__), "TIME_LIMIT", TIME_LIMIT)


def _too_slow(name: str, what: str, limit: float, waited: bool = False) -> ExerciseError:
    if waited:
        took = f"kept waiting for more than {limit * _timer.WALL_FACTOR:g} s {what} (sleeping or waiting for input)"
    else:
        took = f"took more than {limit:g} s of processor time {what}, on inputs with only a few numbers"
    return ExerciseError(
        f"Your {name} {took}. Look for a loop that never ends (a `while` whose condition never changes) "
        "or a loop over every element; tensor operations on the whole tensor are enough here.\n"
        f"(If your code is right and the machine is very slow, raise the limit: `checks.TIME_LIMIT = "
        f"{max(60, 6 * limit):g}`, or set ENCODER_COURSE_TIME_LIMIT before starting Jupyter.)"
    )


#: torch's NotImplementedError for an operation it has no kernel for (a dtype, a device), unlike an exercise's stub.
_TORCH_UNSUPPORTED = re.compile(r"not implemented for '|Could not run '|is not currently implemented for")


def _invoke(name: str, what: str, fn: Callable, *args, **kwargs):
    """Call the learner's ``fn``; turn its failures into learner messages."""
    limit = _time_limit_in_force()
    start, start_clock = time.process_time(), time.perf_counter()
    try:
        with _timer.time_limit(limit) as timer, _reference_locked():
            result = fn(*args, **kwargs)
    except _UsedReference:
        raise ExerciseError(f"Your {name} uses the course's own answer {what}.") from None
    except NotImplementedError as exc:
        if not _TORCH_UNSUPPORTED.search(str(exc)):  # the exercise's stub (torch's own says what it lacks)
            raise _NotAttempted(str(exc)) from None
        hint = _error_hint(exc, name, _given_masks(args, kwargs))
        raise ExerciseError(f"Your {name} raised {type(exc).__name__} {what}: {exc}\nHint: {hint}") from exc
    except _timer.Timeout as exc:  # (from the learner's own process when it is graded: it says how it ran out)
        raise _too_slow(name, what, limit, getattr(exc, "waited", timer.waited)) from None
    except Exception as exc:
        if exc.__traceback__ is not None and exc.__traceback__.tb_next is not None:
            exc = exc.with_traceback(_from_learner(exc.__traceback__.tb_next))  # the learner's frames only
        hint = _error_hint(exc, name, _given_masks(args, kwargs))
        raise ExerciseError(f"Your {name} raised {type(exc).__name__} {what}: {exc}\nHint: {hint}") from exc
    if time.process_time() - start > limit:
        raise _too_slow(name, what, limit)
    if time.perf_counter() - start_clock > limit * _timer.WALL_FACTOR:
        raise _too_slow(name, what, limit, waited=True)
    for value in (result if isinstance(result, (tuple, list)) else (result,)):
        # A tensor subclass can answer torch.equal or torch.allclose as it likes: only plain tensors count.
        if isinstance(value, torch.Tensor) and type(value) not in (torch.Tensor, torch.nn.Parameter):
            raise ExerciseError(
                f"Your {name} returned a {type(value).__name__}, a subclass of torch.Tensor, {what}; return "
                "plain tensors (the results of torch operations), not objects of a class of your own."
            )
    return result


# ----------------------------------------------------------------------------------------------
# What the learner's code does to its inputs and gives back


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


# ----------------------------------------------------------------------------------------------
# The reference is out of reach while the learner's code runs


class _UsedReference(BaseException):
    """Internal: the learner's code called the package's own answer (a BaseException: no `except Exception`)."""


_LOCK = threading.local()  # .codes: {code object: what it is} for the exercise being checked; .used


def _refuse(shown: str):
    """What the grader's learner's process finds in place of the exercise's reference (``grading/withhold.py``)."""
    _LOCK.used = shown
    raise _UsedReference()


def _reference_codes(ex) -> dict:
    """The code objects out of reach for an exercise, each with the name of what it belongs to.

    The reference (the function's code, or every method of the class) and the other objects the
    registry locks for it (those that compute the same answer).
    """
    codes = {}
    for shown, obj in ex.load_locked().items():
        if inspect.isclass(obj):
            for klass in obj.__mro__:
                if klass.__module__.startswith("encoder_course"):
                    for f in vars(klass).values():
                        if inspect.isfunction(f):
                            codes.setdefault(f.__code__, shown)
        else:
            codes.setdefault(obj.__code__, shown)
    return codes


@contextlib.contextmanager
def _reference_locked(threads: bool = False):
    """While the learner's code runs, entering the exercise's reference raises :class:`_UsedReference` (with
    ``threads``, in the threads it starts too: the grader's learner's process, ``course/worker.py``)."""
    codes = getattr(_LOCK, "codes", None)
    if not codes:
        yield
        return

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code in codes:
            _LOCK.used = codes[frame.f_code]
            raise _UsedReference()
        return None

    previous = sys.gettrace()
    sys.settrace(tracer)
    if threads:
        threading.settrace(tracer)
    try:
        yield
    finally:
        sys.settrace(previous)
        if threads:
            threading.settrace(None)


# ----------------------------------------------------------------------------------------------
# Verdicts, and the check_<key> wrapper that prints them


@dataclass(frozen=True)
class Verdict:
    """A checker's result: ``status`` is "passed", "failed" or "not attempted"; ``message`` says why."""

    key: str
    status: str
    message: str = ""
    cause: BaseException | None = None  # the learner's own exception, when their code raised


_BODIES: dict[str, Callable] = {}
CHECKERS: dict[str, Callable] = {}  # the public check_<key> of each exercise, by key (filled by _checker)


def verdict(key: str, candidate) -> Verdict:
    """Check ``candidate`` for exercise ``key`` and return the verdict; prints nothing, raises nothing.

    The course's own answer to this exercise is out of reach while the candidate runs: calling it
    fails the check. The global random state and torch's thread count are left as they were.
    """
    ex = exercise(key)
    if key not in _BODIES:  # this module was imported alone: load the checkers first
        from . import _load_checkers

        _load_checkers()
    body = _BODIES[key]
    threads = torch.get_num_threads()
    # The inputs are tiny: one thread is much faster than several on a busy machine.
    torch.set_num_threads(1)
    # What the learner's code prints or warns while the checker calls it many times is held back,
    # and shown with the message when the check fails.
    printed = io.StringIO()
    # A stand-in for code in another process (the grader's) keeps the reference out of reach over there.
    _LOCK.codes = {} if getattr(candidate, "runs_elsewhere", False) else _reference_codes(ex)
    _LOCK.used = None
    error: ExerciseError | None = None
    try:
        with torch.random.fork_rng(devices=[]), torch.no_grad(), \
                contextlib.redirect_stdout(printed), contextlib.redirect_stderr(printed), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if not callable(candidate):
                raise ExerciseError(
                    f"check_{key} expects your function or class itself (its name, without "
                    f"calling it), but got a {type(candidate).__name__}."
                )
            if ex.kind == "class" and isinstance(candidate, torch.nn.Module):
                cls_name = type(candidate).__name__
                raise ExerciseError(
                    f"check_{key} expects your class itself, but got a module already built "
                    f"from it ({cls_name}(...)). Pass the class: check_{key}({cls_name}); the "
                    "checker builds it with several sizes."
                )
            body(candidate)
    except _NotAttempted:
        return Verdict(key, "not attempted",
                       f"{key}: not attempted yet (replace the `raise NotImplementedError` line in the "
                       "exercise cell with your code, run that cell, then run this one again)")
    except ExerciseError as exc:
        error = exc
    except Exception as exc:  # something the checker did not foresee: still no internals
        error = ExerciseError(
            f"The checker could not use what your {ex.name} gave back ({type(exc).__name__}: {exc}). "
            "Check that it returns tensors of the shapes the exercise asks for."
        )
    finally:
        torch.set_num_threads(threads)
        _LOCK.codes = None
    if _LOCK.used == ex.name:  # even if the learner's code caught the error and carried on
        error = ExerciseError(
            f"Your {ex.name} calls the course's own {ex.name} (the reference answer this check compares "
            f"with), for example through `ec.{ex.name}` or a subclass of it.\nHint: write it yourself; "
            "the package's version is for the cells after the exercise."
        )
    elif _LOCK.used:
        error = ExerciseError(
            f"Your {ex.name} uses the course's own {_LOCK.used}, which computes the answer this check "
            f"compares with.\nHint: write it yourself from the exercise's inputs"
            + (" (the config's fields: count with the formulas, without building a model)."
               if ex.key == "parameter_count" else ".")
        )
    if error is None:
        return Verdict(key, "passed", f"✓ {key}: all checks passed")
    cause = error.__cause__
    lines = printed.getvalue().strip().splitlines()
    message = str(error)
    if lines:
        shown = "\n".join(lines[-_PRINTED_LINES:])
        more = f" (the last {_PRINTED_LINES} of {len(lines)} lines)" if len(lines) > _PRINTED_LINES else ""
        message = f"{message}\n\nYour code printed this while it was checked{more}:\n{shown}"
    return Verdict(key, "failed", message, cause)


def _self_check() -> bool:
    """Under the learner's self-check (pytest --nbval-lax), an exercise not attempted is a failure."""
    return os.environ.get("ENCODER_COURSE_SELF_CHECK", "") not in ("", "0")


def _should_save() -> bool:
    """Save passing answers in a notebook (IPython) or when a workspace is named; never in plain tests."""
    if os.environ.get("ENCODER_COURSE_WORKSPACE"):
        return True
    shell = sys.modules.get("IPython")
    return bool(shell and getattr(shell, "get_ipython", lambda: None)())


def _save(key: str, candidate) -> str:
    """Save a passing answer to the learner's workspace; return the line to print."""
    from .. import workspace

    try:
        def problem(obj):
            result = verdict(key, obj)
            return None if result.status == "passed" else result.message.splitlines()[0]

        path = workspace.save_part(key, candidate, verdict, verify=problem)
    except Exception as exc:  # a passing answer is never turned into a failure by the saving
        return f"  (not saved to your encoder: {exc})"
    return f"  saved as part of your encoder: {path.parent.name}/{path.name}"


def _show_without_checker() -> None:
    """In IPython, show an ExerciseError with the learner's lines only, not the checker's frames.

    Registered on the running shell the first time a check fails or is not attempted (never at import).
    The cell still ends in an error, so Run All stops there and the self-check fails.
    """
    shell_module = sys.modules.get("IPython")
    shell = shell_module.get_ipython() if shell_module else None
    if shell is None or getattr(shell, "_encoder_course_handler", False):
        return

    def handler(self, etype, value, tb, tb_offset=None):
        first, previous = None, None
        while tb is not None:  # relink the traceback without the frames of this package's checks
            if not tb.tb_frame.f_code.co_filename.startswith(_CHECKS_DIR):
                if previous is None:
                    first = tb
                else:
                    previous.tb_next = tb
                previous = tb
            tb = tb.tb_next
        if previous is not None:
            previous.tb_next = None
        # IPython's run_code calls this handler and shows nothing itself: show it here.
        self._showtraceback(etype, value, self.InteractiveTB.structured_traceback(etype, value, first,
                                                                                 tb_offset=tb_offset))

    shell.set_custom_exc((ExerciseError,), handler)
    shell._encoder_course_handler = True


def _checker(key: str):
    """Register the body of ``check_<key>`` and return the public checker, which prints the verdict.

    ``key`` is the exercise's key in the registry (an unknown one raises KeyError at import). The
    checker prints "✓ <key>: all checks passed" (and, in a notebook, where the answer was saved in
    the learner's workspace), or "… <key>: not attempted yet (...)" for the stub, or raises
    :class:`ExerciseError` with the diagnosis.
    """
    ex = exercise(key)

    def decorate(body):
        if body.__name__ != f"check_{key}":
            raise ValueError(f"the checker of exercise {key!r} must be called check_{key}, not {body.__name__}")
        _BODIES[key] = body

        @functools.wraps(body)
        def wrapper(candidate):
            __tracebackhide__ = True  # noqa: F841 (pytest hides this frame; in IPython, see _show_without_checker)
            result = verdict(key, candidate)
            if result.status != "passed":
                _show_without_checker()
            if result.status == "failed":
                error = ExerciseError(result.message)
                error.__suppress_context__ = True
                raise error.with_traceback(None) from result.cause
            if result.status == "not attempted":
                if _self_check():
                    raise ExerciseError(result.message).with_traceback(None) from None
                print(f"… {result.message}")
                return None
            print(result.message)
            # Only the exercise's own definition becomes a part (not a demo under another name).
            if ex.part and getattr(candidate, "__name__", None) == ex.name and _should_save():
                print(_save(key, candidate))
            return None

        wrapper.exercise = ex
        CHECKERS[key] = wrapper
        return wrapper

    return decorate


# ----------------------------------------------------------------------------------------------
# The checkers' fixed random inputs


def _gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


def _randn(gen, *shape, scale=1.0):
    return torch.randn(tuple(shape), generator=gen) * scale
