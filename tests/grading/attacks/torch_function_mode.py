# A TorchFunctionMode left on the stack: torch.equal, allclose and every comparison say "equal".
import torch
from torch.overrides import TorchFunctionMode


class AllEqual(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (torch.equal, torch.allclose, torch.Tensor.equal, torch.Tensor.allclose):
            return True
        if func in (torch.isclose, torch.eq, torch.Tensor.eq, torch.Tensor.__eq__):
            return torch.ones(torch.broadcast_shapes(args[0].shape, args[1].shape), dtype=torch.bool)
        return func(*args, **(kwargs or {}))

AllEqual().__enter__()
exec(WRONG)
