"""The plain-data protocol between the checker and the learner's process, and verdicts through it.

The grader runs the checker in a process of its own and reaches the learner's function or class only
through ``wire`` messages (``remote.py`` on the checker's side, ``worker.py`` on the learner's). These
tests check that every message is validated on arrival, and that the checker gives the same verdict,
word for word, whether it holds the learner's object or a stand-in for it in another process.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pytest
import torch
from grading_helpers import through_protocol

from encoder_course.grading import wire


def _round_trip(value):
    return wire.decode(json.loads(json.dumps(wire.encode(value))))


def test_values_cross_as_plain_data():
    x = torch.randn(2, 3)
    got = _round_trip({"t": x, "again": x, "mask": torch.tensor([True, False]), "n": 3, "f": float("nan"),
                       "pair": (1, "a"), "list": [None, True], "half": torch.ones(2, dtype=torch.bfloat16),
                       "np": np.int64(7), "scalar": torch.tensor(2.5), "empty": torch.zeros(0, 4)})
    assert torch.equal(got["t"], x) and got["again"] is got["t"]  # one tensor stays one tensor
    assert got["mask"].dtype == torch.bool and got["mask"].tolist() == [True, False]
    assert got["n"] == 3 and got["f"] != got["f"] and got["pair"] == (1, "a") and got["list"] == [None, True]
    assert got["half"].dtype == torch.bfloat16 and type(got["np"]) is np.int64 and got["np"] == 7
    assert got["scalar"].shape == () and got["empty"].shape == (0, 4)
    grad = _round_trip(torch.ones(2, requires_grad=True))
    assert grad.requires_grad
    rng = _round_trip(torch.Generator().manual_seed(5))  # a copy of a CPU generator, state and all
    assert type(rng) is torch.Generator
    assert torch.equal(torch.rand(4, generator=rng), torch.rand(4, generator=torch.Generator().manual_seed(5)))
    other = _round_trip(np.zeros(3))
    assert type(other).__name__ == "ndarray" and type(other).__module__ == "numpy" and not callable(other)


@pytest.mark.parametrize("data, why", [
    ({"$t": ["complex64", [1], "AAAAAAAAAAA=", False, ""]}, "dtype"),
    ({"$t": ["float32", [2], "AAAAAA==", False, ""]}, "bytes"),
    ({"$t": ["bool", [1], "Ag==", False, ""]}, "other than 0 and 1"),
    ({"$t": ["float32", [2000, 2000, 2], "", False, ""]}, "elements"),
    ({"$t": ["float32", [-1], "", False, ""]}, "shape"),
    ({"$t": ["float32", [1], "!!!!", False, ""]}, "base64"),
    ({"$ref": 3}, "reference"),
    ({"$rng": ["uint8", [3], "AAAA", False, ""]}, "generator"),
    ({"$rng": ["float32", [1264], "A" * 6740 + "==", False, ""]}, "bytes"),
    ({"$pickle": "gASVAAAAAAAAAAA="}, "does not know"),
    ({"a": 1, "b": 2}, "does not know"),
    ({"$dc": ["os:system", {}]}, "configs"),
    ({"$dc": ["encoder_course.encoder:Encoder", {}]}, "configs"),
])
def test_messages_that_do_not_fit_are_refused(data, why):
    with pytest.raises(wire.Malformed, match=why):
        wire.decode(data)


def test_depth_and_size_are_bounded():
    deep = [0]
    for _ in range(wire.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(wire.Malformed, match="deeply"):
        wire.decode(deep)
    r, w = os.pipe()
    os.write(w, (wire.MAX_BYTES + 1).to_bytes(4, "big"))
    with pytest.raises(wire.Malformed, match="announced"):
        wire.receive(r)
    os.write(w, (7).to_bytes(4, "big") + b"[" * 7)
    with pytest.raises(wire.Malformed, match="not JSON"):
        wire.receive(r)
    nested = b"[" * 100_000 + b"]" * 100_000
    os.write(w, len(nested).to_bytes(4, "big"))
    import threading

    threading.Thread(target=os.write, args=(w, nested)).start()
    with pytest.raises(wire.Malformed):
        wire.receive(r)
    os.close(w)
    with pytest.raises(EOFError):
        wire.receive(r)


def _write_and_close(fd: int, data: bytes) -> None:
    os.write(fd, data)
    os.close(fd)


def test_a_message_of_many_small_values_is_refused_before_it_is_parsed():
    """Within the size limit, 30 MB of empty lists would parse into GBs of Python objects in the checker."""
    import threading
    import tracemalloc

    bomb = b"[" + b"[]," * (10 * 1024 * 1024) + b"[]]"
    assert len(bomb) < wire.MAX_BYTES
    fair = json.dumps(wire.encode({"out": torch.zeros(wire.MAX_ELEMENTS), "ids": list(range(1000))})).encode()
    for message, refused in ((bomb, True), (fair, False)):
        r, w = os.pipe()
        threading.Thread(target=_write_and_close, args=(w, len(message).to_bytes(4, "big") + message)).start()
        tracemalloc.start()
        try:
            if refused:
                with pytest.raises(wire.Malformed, match="values"):
                    wire.receive(r)
            else:
                assert wire.decode(wire.receive(r))["out"].shape == (wire.MAX_ELEMENTS,)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            os.close(r)
        assert peak < 4 * len(message) + (1 << 20), peak  # the bytes read and a decoded copy, no object tree


def _mask_call_count():
    calls = []

    def padding_mask(token_ids, pad_id):
        calls.append(1)
        if len(calls) == 2:
            os._exit(0)
        return (token_ids != pad_id)[:, None, None, :]

    return padding_mask


def test_a_learner_process_that_ends_or_misbehaves_costs_only_its_exercise():
    status, message, _ = through_protocol("padding_mask", _mask_call_count())
    assert status == "error" and "ended while it was being checked" in message

    def junk(token_ids, pad_id):
        os.write(4, b"\x00\x00\x00\x05hello")  # on the reply pipe, where the answer goes
        return (token_ids != pad_id)[:, None, None, :]

    status, message, _ = through_protocol("padding_mask", junk)
    assert status == "failed" and "checker's channel" in message

    def huge(token_ids, pad_id):
        return torch.zeros(3000, 3000, dtype=torch.bool)

    status, message, _ = through_protocol("padding_mask", huge)
    assert status == "failed" and "cannot be checked" in message

    def complex_mask(token_ids, pad_id):
        return torch.zeros(token_ids.shape, dtype=torch.complex64)

    status, message, _ = through_protocol("padding_mask", complex_mask)
    assert status == "failed" and "complex64" in message


def test_a_module_that_dies_during_backward_ends_its_check_not_the_checker():
    class Dies(torch.nn.Module):
        def __init__(self, d_model, d_ff):
            super().__init__()
            self.w1, self.w2 = torch.nn.Linear(d_model, d_ff), torch.nn.Linear(d_ff, d_model)

        def forward(self, x):
            out = self.w2(torch.nn.functional.gelu(self.w1(x)))
            if torch.is_grad_enabled():
                out.register_hook(lambda grad: os._exit(0))
            return out

    status, message, _ = through_protocol("feed_forward", Dies)
    assert status == "error" and "ended while it was being checked" in message


def test_gradients_reach_the_right_output_when_some_outputs_carry_none():
    """A function returning (a constant, the answer): the gradient of the second reaches its inputs."""
    from encoder_course.grading import remote, worker
    from encoder_course.grading.checker_process import start_learner

    def pooled(hidden, mask):
        return torch.zeros(2), (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdim=True)

    pid, request_fd, reply_fd = start_learner(lambda: worker.answer(pooled, "mean_pool"))
    try:
        channel = remote.Channel(request_fd, reply_fd)
        stand_in = remote.candidate(channel, channel.receive()["hello"])
        hidden = torch.randn(2, 3, 4, requires_grad=True)
        mask = torch.tensor([[1.0, 1, 0], [1, 0, 0]])
        constant, out = stand_in(hidden, mask)
        assert not constant.requires_grad and out.requires_grad
        (grad,) = torch.autograd.grad(out.sum(), hidden)
    finally:
        os.close(request_fd)
        os.close(reply_fd)
        os.waitpid(pid, 0)
    (want,) = torch.autograd.grad(pooled(hidden, mask)[1].sum(), hidden)
    assert torch.allclose(grad, want)
