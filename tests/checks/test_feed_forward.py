"""The checker of ``FeedForward`` (notebook 06): every wrong answer named, every right one passing."""

from __future__ import annotations

import inspect
import math

import torch
import torch.nn.functional as F
from torch import nn

import encoder_course as ec
from encoder_course import checks

from .catalogue import FB, Catalogue, FFErf, FFGetattr, from_cell

C_FF = checks.check_feed_forward

CATALOGUE = Catalogue(C_FF)
WRONG, RIGHT = CATALOGUE.wrong, CATALOGUE.right
wrong, right = CATALOGUE.add_wrong, CATALOGUE.add_right


def make_ff(act, *, residual=False):
    class FF(FB):
        def forward(self, x):
            y = self.w2(act(self.w1(x)))
            return x + y if residual else y

    return FF


# ----------------------------------------------------------------------------------------------
# Wrong answers, each to be named


wrong("ff-relu", C_FF, "ReLU where GELU is the default", "should use GELU")(make_ff(F.relu))
wrong("ff-tanh", C_FF, "the tanh approximation of GELU",
      'an approximation of GELU')(make_ff(lambda h: F.gelu(h, approximate="tanh")))
wrong("ff-none", C_FF, "no activation between w1 and w2", "no non-linearity between w1 and w2")(make_ff(lambda h: h))
wrong("ff-residual", C_FF, "x + w2(gelu(w1(x)))", "it adds the input back")(make_ff(F.gelu, residual=True))


@wrong("ff-act-after-w2", C_FF, "act(w2(act(w1 x)))",
       'also applied after w2')
class FFActOut(FB):
    def forward(self, x):
        return self.act(self.w2(self.act(self.w1(x))))


@wrong("ff-no-bias", C_FF, "F.linear without biases",
       'biases of w1 and w2 are missing')
class FFNoBias(FB):
    def forward(self, x):
        return F.linear(self.act(F.linear(x, self.w1.weight)), self.w2.weight)


@wrong("ff-ignores-activation", C_FF, "always GELU even when activation='relu'",
       'should use ReLU')
class FFAlwaysGelu(FB):
    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


@wrong("ff-dropout-eval", C_FF, "F.dropout(h, 0.1) active in eval",
       'dropout is active in eval mode')
class FFDrop(FB):
    def forward(self, x):
        return self.w2(F.dropout(self.act(self.w1(x)), 0.1))


@wrong("ff-erf-no-sqrt2", C_FF, "0.5*h*(1+erf(h/2)) (forgot sqrt)",
       'erf(h / sqrt(2))')
class FFErfBad(FB):
    def forward(self, x):
        h = self.w1(x)
        h = F.relu(h) if self.activation == "relu" else 0.5 * h * (1 + torch.erf(h / 2))
        return self.w2(h)


@wrong("ff-w-swapped", C_FF, "w1(act(w2(x))): linears swapped -> shape error",
       'apply w1 first')
class FFSwap(FB):
    def forward(self, x):
        return self.w1(self.act(self.w2(x)))


@wrong("ff-activation-module-str", C_FF, "self.activation is the string 'gelu' and is called: self.activation(h)",
       "self.activation holds the activation's name")
class FFCallStr(FB):
    def forward(self, x):
        return self.w2(self.activation(self.w1(x)))


@wrong("ff-matmul-no-T", C_FF, "x @ self.w1.weight + self.w1.bias (nn.Linear's weight is (out, in))",
       '(out_features, in_features)')
class FFNoT(FB):
    def forward(self, x):
        h = self.act(x @ self.w1.weight + self.w1.bias)
        return h @ self.w2.weight + self.w2.bias


@wrong("ff-hardcoded-shape", C_FF, "x.view(10, -1) ... .view(2, 5, -1): sizes of the example input",
       "never from the example's numbers")
class FFFixed(FB):
    def forward(self, x):
        return self.w2(self.act(self.w1(x.view(10, -1)))).view(2, 5, -1)


@wrong("ff-dropout-module-0.1", C_FF, "adds self.drop = nn.Dropout(0.1) after the activation (contract default 0)",
       'built without dropout')
class FFDropMod(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.w2(self.drop(self.act(self.w1(x))))


@wrong("ff-dropout-after-w2-eval", C_FF, "F.dropout(self.w2(h), 0.1): after w2 and active in eval",
       'dropout is active in eval mode')
class FFDropOut(FB):
    def forward(self, x):
        return F.dropout(self.w2(self.act(self.w1(x))), 0.1)


@wrong("ff-w1-twice", C_FF, "self.w2(act(self.w1(self.w1(x)))): w1 applied twice",
       "apply w1 first")
class FFW1Twice(FB):
    def forward(self, x):
        return self.w2(self.act(self.w1(self.w1(x))))


@wrong("ff-tanh-when-gelu-explicit", C_FF, "own __init__ activation=None: None -> exact GELU, 'gelu' -> tanh GELU",
       'an approximation of GELU')
class FFExplicit(nn.Module):
    def __init__(self, d_model, d_ff, activation=None):
        super().__init__()
        self.activation = activation
        self.w1 = nn.Linear(d_model, d_ff)
        self.w2 = nn.Linear(d_ff, d_model)

    def forward(self, x):
        h = self.w1(x)
        if self.activation is None:
            h = F.gelu(h)
        elif self.activation == "gelu":
            h = F.gelu(h, approximate="tanh")
        else:
            h = F.relu(h)
        return self.w2(h)


@wrong("ff-activation-inverted", C_FF, "F.gelu if self.activation == 'relu' else F.relu (branches swapped)",
       "should use GELU")
class FFInv(FB):
    def forward(self, x):
        h = self.w1(x)
        h = F.gelu(h) if self.activation == "relu" else F.relu(h)
        return self.w2(h)


@wrong("ff-glu-with-w1", C_FF, "w2(act(w1(x)) * w1(x)) (a GLU without its own gate weights)",
       'a gated unit whose gate reuses w1')
class FFGlu(FB):
    def forward(self, x):
        h = self.w1(x)
        return self.w2(self.act(h) * h)


@wrong("ff-act-on-input", C_FF, "w2(w1(act(x))): the activation before w1",
       'applied to x before w1')
class FFActIn(FB):
    def forward(self, x):
        return self.w2(self.w1(self.act(x)))


@wrong("ff-tied-w1T", C_FF, "second layer uses self.w1.weight.T (tied) with self.w2.bias",
       "uses w1's weight (transposed)")
class FFTied(FB):
    def forward(self, x):
        return F.linear(self.act(self.w1(x)), self.w1.weight.T, self.w2.bias)


@wrong("ff-math-erf", C_FF, "GELU with math.erf on a tensor (math works on single numbers)",
       "torch.erf")
class FFMathErf(FB):
    def forward(self, x):
        h = self.w1(x)
        if self.activation == "relu":
            return self.w2(F.relu(h))
        return self.w2(0.5 * h * (1 + math.erf(h / math.sqrt(2))))


@wrong("ff-no-grad-inside", C_FF, "forward under `with torch.no_grad():` : right numbers, no gradients",
       'cuts the gradient')
class FFNoGrad(FB):
    def forward(self, x):
        with torch.no_grad():
            return self.w2(self.act(self.w1(x)))


wrong("ff-missing-import-math", C_FF, "GELU with math.sqrt(2) in notebook 06, whose import cell lacks `import math`",
      "add `import math`")(from_cell("""
class FeedForward(FB):
    def forward(self, x):
        h = self.w1(x)
        h = 0.5 * h * (1 + torch.erf(h / math.sqrt(2))) if self.activation == "gelu" else torch.relu(h)
        return self.w2(h)
""", FB=FB, torch=torch))


# Mistakes unlike the listed slips: the probe (one layer or bias set at a time, then the activation
# alone) must name them.
@wrong("ff-probe-softplus", C_FF, "softplus as the activation (a smooth ReLU)", "it is softplus")
class FFSoftplus(FB):
    def forward(self, x):
        return self.w2(F.softplus(self.w1(x)))


@wrong("ff-probe-bias-twice", C_FF, "w2's bias added again after self.w2(h)", "how w2's bias is used")
class FFBiasTwice(FB):
    def forward(self, x):
        return self.w2(self.act(self.w1(x))) + self.w2.bias


@wrong("ff-probe-half-input", C_FF, "the activation of h / 2, times 2 (for GELU: erf(h / (2 * sqrt(2))))",
       "The constant inside the erf is")
class FFHalf(FB):
    def forward(self, x):
        return self.w2(2 * self.act(self.w1(x) / 2))


@wrong("ff-probe-clamped", C_FF, "the activation clamped at 2 'for stability'", "f(3) = 2 (not 2.996)")
class FFClamped(FB):
    def forward(self, x):
        return self.w2(self.act(self.w1(x)).clamp(max=2.0))


@wrong("ff-probe-eval-scaled", C_FF, "output times (1 - 0.1) in eval() 'to make up for dropout'",
       "something scales the output")
class FFEvalScaled(FB):
    def forward(self, x):
        y = self.w2(self.act(self.w1(x)))
        return y if self.training else y * (1 - 0.1)


@wrong("ff-layer-in-forward", C_FF, "nn.Linear(...) built inside forward: new random weights at every call",
       "a layer is built inside forward")
class FFLayerInForward(FB):
    def forward(self, x):
        return self.w2(self.act(nn.Linear(x.shape[-1], self.w1.out_features)(x)))


@wrong("ff-probe-relu6", C_FF, "torch.clamp(h, 0, 6) (ReLU6) for activation='relu': right until h passes 6",
       "f(100) = 6 (not 100)")
class FFRelu6(FB):
    def forward(self, x):
        h = self.w1(x)
        return self.w2(torch.clamp(h, 0, 6) if self.activation == "relu" else F.gelu(h))


@wrong("ff-probe-norm-after", C_FF, "F.layer_norm on the output (as in the block)", "depends on the others")
class FFNormAfter(FB):
    def forward(self, x):
        y = self.w2(self.act(self.w1(x)))
        return F.layer_norm(y, y.shape[-1:])


@wrong("ff-probe-w1-bias-subtracted", C_FF, "x @ W1^T - b1: w1's bias subtracted", "how w1's bias is used")
class FFMinusB1(FB):
    def forward(self, x):
        return self.w2(self.act(x @ self.w1.weight.T - self.w1.bias))


# ----------------------------------------------------------------------------------------------
# Right answers, in many styles, each to pass


wrong("ff-package", C_FF, "the package's own class, passed as the answer", "calls the course's own")(ec.FeedForward)
right("ff-erf", C_FF, "GELU written out with erf; follows self.activation")(FFErf)


@right("ff-module", C_FF, "nn.GELU and no activation argument at all")
class FFModule(nn.Module):
    def __init__(self, d_model, d_ff):
        super().__init__()
        self.w1, self.act, self.w2 = nn.Linear(d_model, d_ff), nn.GELU(), nn.Linear(d_ff, d_model)

    def forward(self, x):
        return self.w2(self.act(self.w1(x)))


@right("ff-sequential-shared", C_FF, "nn.Sequential(self.w1, act, self.w2) sharing the same Linear modules")
class FFR1(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.net = nn.Sequential(self.w1, nn.ReLU() if activation == "relu" else nn.GELU(), self.w2)

    def forward(self, x):
        return self.net(x)


@right("ff-normal-cdf", C_FF, "GELU as h * Normal(0,1).cdf(h)")
class FFR2(FB):
    def forward(self, x):
        h = self.w1(x)
        if self.activation == "relu":
            h = h.clamp(min=0)
        else:
            h = h * torch.distributions.Normal(0.0, 1.0).cdf(h)
        return self.w2(h)


right("ff-getattr", C_FF, "getattr(F, self.activation) + F.gelu(approximate='none')")(FFGetattr)


@right("ff-inplace-relu-gelu-module", C_FF, "nn.GELU(approximate='none') / F.relu(inplace=True) on the hidden tensor")
class FFR4(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.gelu = nn.GELU(approximate="none")

    def forward(self, x):
        h = self.w1(x)
        h = F.relu(h, inplace=True) if self.activation == "relu" else self.gelu(h)
        return self.w2(h)


@right("ff-conv1d", C_FF, "1x1 convolutions: F.conv1d with w1/w2 weights unsqueezed")
class FFConv(FB):
    def forward(self, x):
        h = F.conv1d(x.transpose(1, 2), self.w1.weight.unsqueeze(-1), self.w1.bias)
        h = self.act(h)
        return F.conv1d(h, self.w2.weight.unsqueeze(-1), self.w2.bias).transpose(1, 2)


@right("ff-ndtr", C_FF, "GELU as h * torch.special.ndtr(h); ReLU as torch.maximum(h, 0)")
class FFNdtr(FB):
    def forward(self, x):
        h = self.w1(x)
        h = torch.maximum(h, torch.zeros(())) if self.activation == "relu" else h * torch.special.ndtr(h)
        return self.w2(h)


@right("ff-erfc-addmm", C_FF, "GELU as 0.5*h*erfc(-h/sqrt2); torch.addmm on the flattened tokens")
class FFErfc(FB):
    def forward(self, x):
        B, L, D = x.shape
        h = torch.addmm(self.w1.bias, x.reshape(B * L, D), self.w1.weight.T)
        h = F.relu(h) if self.activation == "relu" else 0.5 * h * torch.erfc(-h / math.sqrt(2))
        return torch.addmm(self.w2.bias, h, self.w2.weight.T).reshape(B, L, D)


@right("ff-moduledict-einsum", C_FF, "nn.ModuleDict of activations; einsum('...d,fd->...f') for both layers")
class FFDict(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.acts = nn.ModuleDict({"gelu": nn.GELU(), "relu": nn.ReLU()})

    def forward(self, x):
        h = torch.einsum("...d,fd->...f", x, self.w1.weight) + self.w1.bias
        h = self.acts[self.activation](h)
        return torch.einsum("...f,df->...d", h, self.w2.weight) + self.w2.bias


# What the learner's side reports is checked against the contract, never taken on trust (grading round 6).


@wrong("ff-signature-hides-activation", C_FF, "takes activation but reports a signature without it, always GELU",
       "should use ReLU")
class FFHiddenActivation(FB):
    __signature__ = inspect.Signature([inspect.Parameter("d_model", inspect.Parameter.POSITIONAL_OR_KEYWORD),
                                       inspect.Parameter("d_ff", inspect.Parameter.POSITIONAL_OR_KEYWORD)])

    def forward(self, x):
        return self.w2(F.gelu(self.w1(x)))


@wrong("ff-float64-weights", C_FF, "weights made float64 in __init__", "are float32")
class FFDouble(FB):
    def __init__(self, d_model, d_ff, activation="gelu"):
        super().__init__(d_model, d_ff, activation)
        self.double()

    def forward(self, x):
        return self.w2(self.act(self.w1(x.double()))).float()



# Activations written out by hand, each slightly off: the activation alone (w1 and w2 identity matrices) names it.


def make_acts(gelu, relu=F.relu):
    class FF(FB):
        def forward(self, x):
            h = self.w1(x)
            return self.w2(relu(h) if self.activation == "relu" else gelu(h))

    return FF


wrong("ff-probe-relu-abs", C_FF, "ReLU as h.abs(): |h| instead of max(0, h)",
      "negative values come out positive")(make_acts(F.gelu, relu=lambda h: h.abs()))
wrong("ff-probe-erf-1-4", C_FF, "0.5 * h * (1 + erf(h / 1.4)): 1.4 for sqrt(2)", "The constant inside the erf is")(
    make_acts(lambda h: 0.5 * h * (1 + torch.erf(h / 1.4))))
wrong("ff-probe-erf-1-414", C_FF, "0.5 * h * (1 + erf(h / 1.414)): near enough for the other probes to miss",
      "The constant inside the erf is")(make_acts(lambda h: 0.5 * h * (1 + torch.erf(h / 1.414))))
wrong("ff-probe-erf-times-sqrt2", C_FF, "0.5 * h * (1 + erf(h * sqrt(2))): multiplied where it divides",
      "The constant inside the erf is")(make_acts(lambda h: 0.5 * h * (1 + torch.erf(h * math.sqrt(2)))))
wrong("ff-probe-gelu-no-half", C_FF, "h * (1 + erf(h / sqrt(2))): GELU without its 0.5",
      "its 0.5 is missing")(make_acts(lambda h: h * (1 + torch.erf(h / math.sqrt(2)))))
wrong("ff-probe-gelu-no-one-plus", C_FF, "0.5 * h * erf(h / sqrt(2)): GELU without the 1 +",
      "GELU without the 1 + inside the bracket")(make_acts(lambda h: 0.5 * h * torch.erf(h / math.sqrt(2))))
wrong("ff-probe-gelu-no-x", C_FF, "0.5 * (1 + erf(h / sqrt(2))): the normal CDF, without the factor h",
      "the normal CDF without GELU's factor x")(make_acts(lambda h: 0.5 * (1 + torch.erf(h / math.sqrt(2)))))
wrong("ff-probe-tanh-for-erf", C_FF, "0.5 * h * (1 + tanh(h / sqrt(2))): tanh where the exact GELU has erf",
      "tanh where the exact GELU has erf")(make_acts(lambda h: 0.5 * h * (1 + torch.tanh(h / math.sqrt(2)))))
wrong("ff-probe-tanh-coefficient-typo", C_FF, "the tanh approximation with 0.44715 for 0.044715",
      "it is none of the usual ones")(make_acts(
        lambda h: 0.5 * h * (1 + torch.tanh(math.sqrt(2 / math.pi) * (h + 0.44715 * h ** 3)))))
wrong("ff-probe-relu-min", C_FF, "ReLU as h.clamp(max=0): min(0, h), the negative part",
      "keeps the negative values and makes the positive ones 0")(make_acts(F.gelu, relu=lambda h: h.clamp(max=0)))
wrong("ff-probe-hidden-scaled", C_FF, "w2(0.9 * act(w1(x))): the hidden layer scaled 'for dropout'",
      "something scales the hidden layer after it")(make_ff(lambda h: 0.9 * F.gelu(h)))
wrong("ff-relu-squared", C_FF, "relu(h) ** 2 for ReLU (squared ReLU): relu(h) * h",
      "a gated unit whose gate reuses w1")(make_acts(F.gelu, relu=lambda h: F.relu(h) ** 2))

right("ff-relu-abs-half", C_FF, "ReLU as (h + h.abs()) / 2; GELU as h * erfc(-h * 0.70710678) / 2")(make_acts(
    lambda h: h * torch.erfc(-h * 0.7071067811865476) / 2, relu=lambda h: (h + h.abs()) / 2))
right("ff-where-float64", C_FF, "ReLU as torch.where(h > 0, h, 0); GELU in float64 and back")(make_acts(
    lambda h: F.gelu(h.double()).to(h.dtype), relu=lambda h: torch.where(h > 0, h, torch.zeros_like(h))))


test_catalogue_cases, test_wrong_answer_is_named, test_right_answer_passes = CATALOGUE.tests()
