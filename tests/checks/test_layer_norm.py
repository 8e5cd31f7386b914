"""The checker of ``LayerNorm`` (notebook 05): every wrong answer named, every right one passing."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
from encoder_course import checks

from .catalogue import LB, Catalogue

C_LN = checks.check_layer_norm

CATALOGUE = Catalogue(C_LN)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def make_ln(*, dim=-1, unbiased=False, eps_out=False, gamma_beta=True, eps="self", swap=False):
    class LN(LB):
        def forward(self, x):
            e = self.eps if eps == "self" else eps
            mean = x.mean(dim=dim, keepdim=True)
            var = x.var(dim=dim, keepdim=True, unbiased=unbiased)
            y = (x - mean) / (var.sqrt() + e) if eps_out else (x - mean) / torch.sqrt(var + e)
            if not gamma_beta:
                return y
            return y * self.bias + self.weight if swap else y * self.weight + self.bias

    return LN


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("ln-axis", C_LN, "mean and var over dim 0", "normalises over the wrong axis")(make_ln(dim=0))
wrong("ln-unbiased", C_LN, "x.var(unbiased=True)", "the unbiased variance")(make_ln(unbiased=True))
wrong("ln-eps-outside", C_LN, "(x - mean) / (sqrt(var) + eps)", "outside the square root")(make_ln(eps_out=True))
wrong("ln-no-affine", C_LN, "no weight and no bias", "gamma and beta are missing")(make_ln(gamma_beta=False))
wrong("ln-fixed-eps", C_LN, "eps fixed at 1e-5, self.eps ignored", "use self.eps")(make_ln(eps=1e-5))
wrong("ln-swap", C_LN, "y * bias + weight", "are swapped: y = x_hat * weight + bias")(make_ln(swap=True))


@wrong("ln-uncentred-variance", C_LN, "x - mean on top, but var = (x ** 2).mean(-1) below",
       "the variance is not centred")
class LNUncentred(LB):
    def forward(self, x):
        return self.norm(x, x.mean(-1, keepdim=True), (x ** 2).mean(-1, keepdim=True))


@wrong("ln-root-eps-outside", C_LN, "(x - mean) / (var.sqrt() + math.sqrt(eps))", "as its own root")
class LNRootEpsOutside(LB):
    def forward(self, x):
        centred = x - x.mean(-1, keepdim=True)
        std = centred.pow(2).mean(-1, keepdim=True).sqrt()
        return self.weight * centred / (std + self.eps ** 0.5) + self.bias


@wrong("ln-in-place", C_LN, "x -= mean changes the caller's x", "changed its input `x` in place")
class LNInPlace(LB):
    def forward(self, x):
        x -= x.mean(-1, keepdim=True)
        return self.weight * x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) + self.bias


@wrong("ln-no-beta", C_LN, "forgets + self.bias",
       'beta (self.bias) is missing')
class LNNoBeta(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps)


@wrong("ln-batchnorm", C_LN, "mean/var over dims (0, 1) (BatchNorm-style, over batch and sequence)",
       'as BatchNorm does')
class LNBatch(LB):
    def forward(self, x):
        dims = tuple(range(x.dim() - 1))
        m, v = x.mean(dims, keepdim=True), x.var(dims, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-no-keepdim", C_LN, "mean(-1) without keepdim -> broadcasting error",
       'keepdim=True')
class LNNoKeep(LB):
    def forward(self, x):
        m, v = x.mean(-1), x.var(-1, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-bias-before-weight", C_LN, "(x_hat + bias) * weight",
       'added before multiplying')
class LNOrder(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return ((x - m) / torch.sqrt(v + self.eps) + self.bias) * self.weight


@wrong("ln-rmsnorm", C_LN, "RMSNorm: x / sqrt(mean(x^2) + eps)",
       'RMSNorm')
class LNRms(LB):
    def forward(self, x):
        return self.weight * x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) + self.bias


@wrong("ln-float64", C_LN, "computes in float64 and returns float64",
       'dtype torch.float64')
class LNDouble(LB):
    def forward(self, x):
        x = x.double()
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-std-plus-eps", C_LN, "(x - mean) / (x.std(-1) + eps): unbiased std and eps outside",
       'the unbiased variance')
class LNStd(LB):
    def forward(self, x):
        return self.weight * (x - x.mean(-1, keepdim=True)) / (x.std(-1, keepdim=True) + self.eps) + self.bias


WRONG.append(("ln-instance-passed", C_LN, ec.LayerNorm(16),
              "check_layer_norm(LayerNorm(16)): an instance instead of the class", "Pass the class"))


@wrong("ln-return-mean-var", C_LN, "returns (y, mean, var)",
       'tuple of 3 values')
class LNTuple(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias, m, v


@wrong("ln-running-stats", C_LN, "keeps statistics across calls (BatchNorm habit): eval() reuses the stored ones",
       'keeps `self.run_mean`, `self.run_var`')
class LNRunning(LB):
    def forward(self, x):
        if self.training or not hasattr(self, "run_mean"):
            mean, var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
            self.run_mean, self.run_var = mean.mean(), var.mean()
            return self.norm(x, mean, var)
        return self.norm(x, self.run_mean, self.run_var)


@wrong("ln-cached-stats", C_LN, "computes mean/var on the first call only (if not hasattr(self, 'mean'))",
       'keeps `self.mean`, `self.var`')
class LNCached(LB):
    def forward(self, x):
        if not hasattr(self, "mean"):
            self.mean, self.var = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.norm(x, self.mean, self.var)


@wrong("ln-dim2-hardcoded", C_LN, "mean(dim=2) / var(dim=2): right for (B, L, d), IndexError for 2-D",
       'dim=-1')
class LNDim2(LB):
    def forward(self, x):
        return self.norm(x, x.mean(2, keepdim=True), x.var(2, keepdim=True, unbiased=False))


@wrong("ln-eps-2d-branch", C_LN, "eps=self.eps for 3-D input, a fixed 1e-5 in the 2-D branch",
       'ignores the eps')
class LNEpsBranch(LB):
    def forward(self, x):
        eps = self.eps if x.dim() == 3 else 1e-5
        return self.norm(x, x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False), eps)


@wrong("ln-F-normalize", C_LN, "F.normalize(x - mean, dim=-1) * sqrt(d): eps lost (clamps the norm instead)",
       'eps is missing')
class LNNormalize(LB):
    def forward(self, x):
        c = x - x.mean(-1, keepdim=True)
        return F.normalize(c, dim=-1) * math.sqrt(x.shape[-1]) * self.weight + self.bias


@wrong("ln-std-biased-plus-eps", C_LN, "(x - mean) / (x.std(-1, unbiased=False, keepdim=True) + eps)",
       "outside the square root")
class LNStdB(LB):
    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        return self.weight * (x - m) / (x.std(-1, unbiased=False, keepdim=True) + self.eps) + self.bias


@wrong("ln-normalised-weight", C_LN, "gamma normalised too: self.weight / self.weight.norm()",
       'self.weight is changed before it is used')
class LNWNorm(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return (self.weight / self.weight.norm()) * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-F-layer_norm-shape1", C_LN, "F.layer_norm(x, x.shape[1:], ...) (normalised_shape from dim 1 on)",
       'it normalises over the wrong axis. LayerNorm')
class LNShape1(LB):
    def forward(self, x):
        return F.layer_norm(x, x.shape[1:], eps=self.eps) * self.weight + self.bias


@wrong("ln-clamp-eps", C_LN, "var.clamp(min=eps) instead of var + eps",
       'clamped at eps')
class LNClamp(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v.clamp(min=self.eps)) + self.bias


@wrong("ln-axis0-and-no-beta", C_LN, "two mistakes: statistics over dim 0 AND no + self.bias",
       'two slips: it normalises over the wrong axis')
class LNTwo(LB):
    def forward(self, x):
        m, v = x.mean(0, keepdim=True), x.var(0, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps)


@wrong("ln-detached-stats", C_LN, "mean and var .detach()ed: forward right, gradients wrong",
       'the wrong gradient for `x`')
class LNDetach(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True).detach(), x.var(-1, keepdim=True, unbiased=False).detach()
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-eps-squared", C_LN, "sqrt(var + eps ** 2) (eps read as a standard deviation)",
       'eps is squared')
class LNEps2(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps ** 2) + self.bias


@wrong("ln-default-eps-1e-12", C_LN, "__init__ default changed to eps=1e-12 (BERT's value); forward uses self.eps",
       'default eps is 1e-12')
class LNBertEps(LB):
    def __init__(self, d_model, eps=1e-12):
        super().__init__(d_model, eps)

    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


# Mistakes unlike the listed slips: the probe (gamma and beta set, x shifted or scaled) must name them.
@wrong("ln-probe-median", C_LN, "the median subtracted, not the mean", "the mean of each token (dim=-1) is not")
class LNMedian(LB):
    def forward(self, x):
        m, v = x.median(-1, keepdim=True).values, x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-probe-mean-abs", C_LN, "divided by the mean absolute deviation, not the standard deviation",
       "should have standard deviation 1")
class LNMeanAbs(LB):
    def forward(self, x):
        c = x - x.mean(-1, keepdim=True)
        return self.weight * c / (c.abs().mean(-1, keepdim=True) + self.eps) + self.bias


@wrong("ln-probe-one-plus-gamma", C_LN, "(1 + weight) * x_hat, as some models store gamma - 1",
       "gamma = 2 should give exactly twice")
class LNOnePlus(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return (1 + self.weight) * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-probe-bias-subtracted", C_LN, "beta subtracted instead of added", "the mistake is in how beta is used")
class LNMinusBias(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) - self.bias


@wrong("ln-probe-abs-gamma", C_LN, "self.weight.abs() * x_hat: gamma's sign dropped",
       "the mistake is in how gamma is used")
class LNAbsGamma(LB):
    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight.abs() * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-probe-mean-of-first-half", C_LN, "the mean taken over the first half of the features only",
       "the mean of each token (dim=-1) is not")
class LNHalfMean(LB):
    def forward(self, x):
        m = x[..., : x.shape[-1] // 2].mean(-1, keepdim=True)
        v = x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-plain-tensors", C_LN, "gamma and beta kept as plain tensors (torch.ones, not nn.Parameter)",
       "not a parameter")
class LNPlainTensors(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.weight, self.bias = torch.ones(d_model), torch.zeros(d_model)

    def forward(self, x):
        mean, var = x.mean(-1, keepdim=True), x.var(-1, unbiased=False, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias


@wrong("ln-buffers", C_LN, "gamma and beta registered as buffers", "not a parameter")
class LNBuffers(LNPlainTensors):
    def __init__(self, d_model, eps=1e-5):
        nn.Module.__init__(self)
        self.eps = eps
        self.register_buffer("weight", torch.ones(d_model))
        self.register_buffer("bias", torch.zeros(d_model))


# Right in exact arithmetic; in floats it loses the variance when the mean is large next to the spread.
@wrong("ln-one-pass", C_LN, "E[x^2] - E[x]^2 and rsqrt", "E[x^2] - E[x]^2 subtracts two nearly equal numbers")
class LNOnePass(LB):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = (x * x).mean(-1, keepdim=True) - mean**2
        return self.weight * (x - mean) * torch.rsqrt(var + self.eps) + self.bias


@wrong("ln-eps-parameter", C_LN, "self.eps = nn.Parameter(torch.tensor(eps)): eps trained as a weight",
       "eps is a fixed small number, not a weight")
class LNEpsParameter(LB):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        self.eps = torch.nn.Parameter(torch.tensor(float(eps)))

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        return self.norm(x, mean, ((x - mean) ** 2).mean(-1, keepdim=True))


@wrong("ln-float-cast", C_LN, "x = x.float() first: float32 inside, float64 again through the float64 weights",
       "it computes in float32 somewhere")
class LNFloatCast(LB):
    def forward(self, x):
        x = x.float()
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias


@wrong("ln-probe-no-sqrt", C_LN, "(x - mean) / (var + eps): the square root forgotten",
       "yours varies from token to token")
class LNNoSqrt(LB):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        var = ((x - mean) ** 2).mean(-1, keepdim=True)
        return self.weight * (x - mean) / (var + self.eps) + self.bias


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


wrong("ln-package", C_LN, "the package's own class, passed as the answer", "calls the course's own")(ec.LayerNorm)
right("ln-plain", C_LN, "mean, biased var, eps inside the sqrt, weight and bias")(make_ln())


@right("ln-functional", C_LN, "F.layer_norm over the last dimension")
class LNFunctional(LB):
    def forward(self, x):
        return F.layer_norm(x, (x.shape[-1],), self.weight, self.bias, self.eps)


@right("ln-var_mean-correction0", C_LN, "torch.var_mean(x, -1, correction=0, keepdim=True)")
class LNR1(LB):
    def forward(self, x):
        var, mean = torch.var_mean(x, dim=-1, correction=0, keepdim=True)
        return (x - mean) / (var + self.eps).sqrt() * self.weight + self.bias


@right("ln-subclass-nn", C_LN, "subclass of nn.LayerNorm")
class LNR2(nn.LayerNorm):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps=eps)


@right("ln-std-biased-squared", C_LN, "x.std(unbiased=False)**2 + eps inside sqrt, addcmul")
class LNR3(LB):
    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std2 = x.std(-1, unbiased=False, keepdim=True) ** 2
        return torch.addcmul(self.bias, (x - mean) / torch.sqrt(std2 + self.eps), self.weight)


@right("ln-double-internal", C_LN, "computes in float64, casts back")
class LNR4(LB):
    def forward(self, x):
        xd = x.double()
        m, v = xd.mean(-1, keepdim=True), ((xd - xd.mean(-1, keepdim=True)) ** 2).mean(-1, keepdim=True)
        return ((xd - m) / torch.sqrt(v + self.eps) * self.weight.double() + self.bias.double()).to(x.dtype)


@right("ln-hf-style-eps-name", C_LN, "HF style: self.variance_epsilon, in-place ops on fresh tensors")
class LNR5(nn.Module):
    def __init__(self, d_model, eps=1e-5):
        super().__init__()
        self.variance_epsilon = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))

    def forward(self, x):
        u = x.mean(-1, keepdim=True)
        s = (x - u).pow(2).mean(-1, keepdim=True)
        h = (x - u) / torch.sqrt(s + self.variance_epsilon)
        return h.mul_(self.weight).add_(self.bias)


@right("ln-group-norm", C_LN, "F.group_norm(x.reshape(-1, 1, d), 1) then weight/bias")
class LNGroup(LB):
    def forward(self, x):
        d = x.shape[-1]
        y = F.group_norm(x.reshape(-1, 1, d), 1, eps=self.eps).reshape(x.shape)
        return y * self.weight + self.bias


@right("ln-instance-norm", C_LN, "F.instance_norm(x.reshape(1, -1, d)): each token a channel")
class LNInst(LB):
    def forward(self, x):
        d = x.shape[-1]
        y = F.instance_norm(x.reshape(1, -1, d), eps=self.eps).reshape(x.shape)
        return torch.addcmul(self.bias, y, self.weight)


@right("ln-batch-norm-transposed", C_LN, "F.batch_norm on x.reshape(-1, d).T (tokens as channels), training=True")
class LNBatchT(LB):
    def forward(self, x):
        d = x.shape[-1]
        y = F.batch_norm(x.reshape(-1, d).T, None, None, training=True, eps=self.eps).T.reshape(x.shape)
        return y * self.weight + self.bias


@right("ln-eps-0d-frozen-param", C_LN, "self.eps_t = nn.Parameter(torch.tensor(eps), requires_grad=False) (0-dim)")
class LNEpsParam(LB):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        self.eps_t = nn.Parameter(torch.tensor(eps), requires_grad=False)

    def forward(self, x):
        m, v = x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(v + self.eps_t) + self.bias


@right("ln-rms-of-centred", C_LN, "F.rms_norm(x - mean, (d,), eps=eps): RMS of the centred x is the biased std")
class LNRmsCentred(LB):
    def forward(self, x):
        c = x - x.mean(-1, keepdim=True)
        return F.rms_norm(c, (x.shape[-1],), eps=self.eps) * self.weight + self.bias


@right("ln-centering-matrix", C_LN, "centre with x @ (I - 1/d), var = mean of squares")
class LNMat(LB):
    def forward(self, x):
        d = x.shape[-1]
        C = torch.eye(d, dtype=x.dtype) - 1.0 / d
        c = x @ C
        return self.weight * c / (c.square().mean(-1, keepdim=True) + self.eps).sqrt() + self.bias


@right("ln-unbiased-rescaled", C_LN, "x.var(-1, keepdim=True) * (d - 1) / d (unbiased turned into biased)")
class LNResc(LB):
    def forward(self, x):
        d = x.shape[-1]
        v = x.var(-1, keepdim=True) * (d - 1) / d
        return self.weight * (x - x.mean(-1, keepdim=True)) / torch.sqrt(v + self.eps) + self.bias


# What the learner's side reports is checked against the contract, never taken on trust (grading round 6).


@wrong("ln-nan-eps", C_LN, "self.eps = nan, whatever eps is given", "eps is a small positive number")
class LNNanEps(LB):
    def __init__(self, d_model, eps=1e-5):
        super().__init__(d_model, eps)
        self.eps = float("nan")

    def forward(self, x):
        return x * self.eps


# ----------------------------------------------------------------------------------------------
# Round 7: learners' answers the checker passed or named with a wrong cause, and right answers in more styles


def _stats(x):
    return x.mean(-1, keepdim=True), x.var(-1, keepdim=True, unbiased=False)


@wrong("ln-var-over-sequence", C_LN, "mean over dim=-1, but x.var(1, ...): the variance over the sequence",
       "the variance is taken over another axis than the mean")
class LNVarSeq(LB):
    def forward(self, x):
        return self.norm(x, x.mean(-1, keepdim=True), x.var(1, keepdim=True, unbiased=False))


@wrong("ln-mean-over-sequence", C_LN, "x.mean(1, ...) (over the sequence), the variance over dim=-1",
       "the mean is taken over another axis than the variance")
class LNMeanSeq(LB):
    def forward(self, x):
        return self.norm(x, x.mean(1, keepdim=True), x.var(-1, keepdim=True, unbiased=False))


@wrong("ln-var-mean-order", C_LN, "mean, var = torch.var_mean(...): it returns (var, mean)",
       "torch.var_mean returns (var, mean)")
class LNVarMeanOrder(LB):
    def forward(self, x):
        mean, var = torch.var_mean(x, -1, keepdim=True, correction=0)
        return self.norm(x, mean, var)


@wrong("ln-std-mean-order", C_LN, "mean, std = torch.std_mean(...): it returns (std, mean)",
       "torch.var_mean returns (var, mean)")
class LNStdMeanOrder(LB):
    def forward(self, x):
        mean, std = torch.std_mean(x, -1, keepdim=True, correction=0)
        return self.weight * (x - mean) / torch.sqrt(std ** 2 + self.eps) + self.bias


@wrong("ln-divide-by-rsqrt", C_LN, "(x - mean) / torch.rsqrt(var + eps): rsqrt is already 1 / sqrt",
       "multiplied by the standard deviation instead of divided by it")
class LNDivRsqrt(LB):
    def forward(self, x):
        m, v = _stats(x)
        return self.weight * (x - m) / torch.rsqrt(v + self.eps) + self.bias


@wrong("ln-sqrt-of-std", C_LN, "(x - mean) / torch.sqrt(x.std(-1, unbiased=False) + eps): the root taken twice",
       "it takes the square root of the standard deviation")
class LNSqrtStd(LB):
    def forward(self, x):
        m, s = x.mean(-1, keepdim=True), x.std(-1, keepdim=True, unbiased=False)
        return self.weight * (x - m) / torch.sqrt(s + self.eps) + self.bias


@wrong("ln-eps-twice", C_LN, "(x - mean) / (torch.sqrt(var + eps) + eps)", "eps is added twice")
class LNEpsTwice(LB):
    def forward(self, x):
        m, v = _stats(x)
        return self.weight * (x - m) / (torch.sqrt(v + self.eps) + self.eps) + self.bias


@wrong("ln-rsqrt-plus-eps", C_LN, "(x - mean) * torch.rsqrt(var) + eps: eps added to the normalised x",
       "eps is added to the normalised x")
class LNRsqrtPlusEps(LB):
    def forward(self, x):
        m, v = _stats(x)
        return self.weight * ((x - m) * torch.rsqrt(v) + self.eps) + self.bias


@wrong("ln-eps-in-numerator", C_LN, "(x - mean + eps) / torch.sqrt(var)", "eps is added to x - mean")
class LNEpsTop(LB):
    def forward(self, x):
        m, v = _stats(x)
        return self.weight * (x - m + self.eps) / torch.sqrt(v) + self.bias


@wrong("ln-x-hat-unused", C_LN, "x_hat computed, then self.weight * x + self.bias returned",
       "the output is not normalised at all")
class LNXhatUnused(LB):
    def forward(self, x):
        m, v = _stats(x)
        x_hat = (x - m) / torch.sqrt(v + self.eps)  # noqa: F841
        return self.weight * x + self.bias


@wrong("ln-var-brackets", C_LN, "((x - mean) ** 2).sum(-1) / x.shape[-1] - 1: brackets missing around d - 1",
       "the variance has lost its brackets")
class LNBrackets(LB):
    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        return self.norm(x, m, ((x - m) ** 2).sum(-1, keepdim=True) / x.shape[-1] - 1)


@wrong("ln-var-over-shape0", C_LN, "the variance's sum divided by x.shape[0], not x.shape[-1]",
       "divided by the size of another dimension")
class LNShape0(LB):
    def forward(self, x):
        m = x.sum(-1, keepdim=True) / x.shape[-1]
        return self.norm(x, m, ((x - m) ** 2).sum(-1, keepdim=True) / x.shape[0])


@wrong("ln-sums-over-shape1", C_LN, "mean and variance as sums divided by x.shape[1] (the sequence length)",
       "divided by the size of another dimension")
class LNShape1Count(LB):
    def forward(self, x):
        m = x.sum(-1, keepdim=True) / x.shape[1]
        return self.norm(x, m, ((x - m) ** 2).sum(-1, keepdim=True) / x.shape[1])


@wrong("ln-pow-in-place", C_LN, "c = x - mean; var = c.pow_(2).mean(-1): c itself squared, then divided",
       "the centred values are squared in place")
class LNPowInPlace(LB):
    def forward(self, x):
        c = x - x.mean(-1, keepdim=True)
        v = c.pow_(2).mean(-1, keepdim=True)
        return self.weight * c / torch.sqrt(v + self.eps) + self.bias


@wrong("ln-divide-by-norm", C_LN, "c / (c.norm(dim=-1, keepdim=True) + eps): the norm, not the standard deviation",
       "it divides by the norm of x - mean")
class LNByNorm(LB):
    def forward(self, x):
        c = x - x.mean(-1, keepdim=True)
        return self.weight * c / (c.norm(dim=-1, keepdim=True) + self.eps) + self.bias


@wrong("ln-probe-half-cast", C_LN, "h = x.half() for the statistics and the division, cast back at the end",
       "your output stays exactly the same when x is first rounded to")
class LNHalf(LB):
    def forward(self, x):
        h = x.half()
        m, v = h.mean(-1, keepdim=True), h.var(-1, keepdim=True, unbiased=False)
        return self.weight * ((h - m) / torch.sqrt(v + self.eps)).to(x.dtype) + self.bias


@wrong("ln-dropout-inside", C_LN, "F.dropout(y, 0.1, self.training) on the LayerNorm's output",
       "a LayerNorm has nothing random in it")
class LNDropout(LB):
    def forward(self, x):
        m, v = _stats(x)
        return F.dropout(self.norm(x, m, v), 0.1, self.training)


# Named right before this round: kept so they stay named.
@wrong("ln-nn-layernorm-in-forward", C_LN, "return nn.LayerNorm(d, eps=self.eps)(x): a fresh one, self's unused",
       "gamma and beta are missing")
class LNFresh(LB):
    def forward(self, x):
        return nn.LayerNorm(x.shape[-1], eps=self.eps)(x)


@wrong("ln-if-bias-tensor", C_LN, "`y + self.bias if self.bias else y`: the truth of a whole tensor",
       "to test whether a tensor was given")
class LNIfBias(LB):
    def forward(self, x):
        m, v = _stats(x)
        y = self.weight * (x - m) / torch.sqrt(v + self.eps)
        return y + self.bias if self.bias else y


@right("ln-log-exp", C_LN, "(x - mean) * exp(-0.5 * log(var + eps))")
class LNLogExp(LB):
    def forward(self, x):
        m = x.mean(-1, keepdim=True)
        v = (x - m).pow(2).mean(-1, keepdim=True)
        return self.weight * (x - m) * torch.exp(-0.5 * torch.log(v + self.eps)) + self.bias


@right("ln-transposed-dim-2", C_LN, "features moved to dim -2, normalised there, moved back")
class LNTransposed(LB):
    def forward(self, x):
        t = x.transpose(-1, -2)
        y = (t - t.mean(-2, keepdim=True)) / torch.sqrt(t.var(-2, keepdim=True, unbiased=False) + self.eps)
        return self.weight * y.transpose(-1, -2) + self.bias


@right("ln-loop-over-tokens", C_LN, "a Python loop over the tokens of x.reshape(-1, d), torch.stack")
class LNLoop(LB):
    def forward(self, x):
        out = []
        for r in x.reshape(-1, x.shape[-1]):
            m = r.sum() / r.numel()
            v = ((r - m) ** 2).sum() / r.numel()
            out.append((r - m) / (v + self.eps) ** 0.5)
        return torch.stack(out).reshape(x.shape) * self.weight + self.bias


@right("ln-einsum", C_LN, "mean, variance and gamma through einsum, rsqrt")
class LNEinsum(LB):
    def forward(self, x):
        d = x.shape[-1]
        m = torch.einsum("...d,d->...", x, torch.full((d,), 1.0 / d, dtype=x.dtype))[..., None]
        c = x - m
        v = torch.einsum("...d,...d->...", c, c)[..., None] / d
        return torch.einsum("...d,d->...d", c * torch.rsqrt(v + self.eps), self.weight) + self.bias


@right("ln-flatten-positive-dim", C_LN, "x.flatten(0, -2), statistics over dim 1 (positive), reshaped back")
class LNFlat(LB):
    def forward(self, x):
        flat = x.flatten(0, -2)
        m, v = flat.mean(dim=1, keepdim=True), flat.var(dim=1, keepdim=True, correction=0)
        return ((flat - m) / torch.sqrt(v + self.eps) * self.weight + self.bias).reshape(x.shape)


@right("ln-std-mean-right-order", C_LN, "std, mean = torch.std_mean(x, -1, unbiased=False), addcmul")
class LNStdMean(LB):
    def forward(self, x):
        std, mean = torch.std_mean(x, dim=-1, keepdim=True, unbiased=False)
        return torch.addcmul(self.bias, (x - mean) / torch.sqrt(std.square() + self.eps), self.weight)


@right("ln-contiguous-view", C_LN, "x.contiguous().view(-1, d), statistics over dim 1, .view back")
class LNContig(LB):
    def forward(self, x):
        flat = x.contiguous().view(-1, x.shape[-1])
        c = flat - flat.mean(1, keepdim=True)
        return (c / (c.pow(2).mean(1, keepdim=True) + self.eps).sqrt() * self.weight + self.bias).view(x.shape)


@right("ln-cumsum-method-chain", C_LN, "the mean as the last entry of cumsum / d, method chain .div().mul().add()")
class LNChain(LB):
    def forward(self, x):
        d = x.shape[-1]
        c = x - x.cumsum(-1)[..., -1:] / d
        v = c.mul(c).sum(-1, keepdim=True).div(d)
        return c.div(v.add(self.eps).sqrt()).mul(self.weight).add(self.bias)


@right("ln-bias-argument", C_LN, "__init__ with bias=True (None when False), `if self.bias is not None` in forward")
class LNBiasArg(nn.Module):
    def __init__(self, d_model, eps=1e-5, bias=True):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model)) if bias else None

    def forward(self, x):
        m, v = _stats(x)
        y = self.weight * (x - m) / torch.sqrt(v + self.eps)
        return y if self.bias is None else y + self.bias


@right("ln-float64-new-full", C_LN, "statistics in float64 with eps as h.new_full, cast back before gamma and beta")
class LNF64(LB):
    def forward(self, x):
        h = x.to(torch.float64)
        c = h - h.mean(-1, keepdim=True)
        eps = h.new_full((), self.eps)
        return (c / torch.sqrt((c * c).mean(-1, keepdim=True) + eps)).to(x.dtype) * self.weight + self.bias


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
