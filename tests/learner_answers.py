"""A learner's answers to the exercises of notebooks 01-08 and 13, defined as notebook cells define them, for the tests
of the workspace (tests/test_workspace.py) and of the learner's encoder (tests/test_yours.py)."""

from __future__ import annotations

import importlib.util
import textwrap
from pathlib import Path

from encoder_course import checks, yours

# A learner's answers, as they would write them in the exercise cells (solutions of notebooks 01-08 and 13).
ANSWERS = {
    "sinusoidal_positions": '''
        def sinusoidal_positions(seq_len, d_model):
            pos = torch.arange(seq_len, dtype=torch.float32)[:, None]
            freq = 10000 ** (torch.arange(0, d_model, 2, dtype=torch.float32) / d_model)
            pe = torch.zeros(seq_len, d_model)
            pe[:, 0::2], pe[:, 1::2] = torch.sin(pos / freq), torch.cos(pos / freq)
            return pe
    ''',
    "scaled_dot_product_attention": '''
        def scaled_dot_product_attention(q, k, v, mask=None):
            scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            weights = torch.softmax(scores, dim=-1)
            return weights @ v, weights
    ''',
    "multi_head_attention": '''
        class MultiHeadAttention(nn.Module):
            def __init__(self, d_model, n_heads):
                super().__init__()
                self.d_model, self.n_heads, self.d_head = d_model, n_heads, d_model // n_heads
                self.w_q, self.w_k = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)
                self.w_v, self.w_o = nn.Linear(d_model, d_model), nn.Linear(d_model, d_model)

            def forward(self, x, mask=None):
                b, length, _ = x.shape
                split = lambda t: t.view(b, length, self.n_heads, self.d_head).transpose(1, 2)
                heads, _ = scaled_dot_product_attention(split(self.w_q(x)), split(self.w_k(x)),
                                                        split(self.w_v(x)), mask)
                return self.w_o(heads.transpose(1, 2).reshape(b, length, self.d_model))
    ''',
    "layer_norm": '''
        class LayerNorm(nn.Module):
            def __init__(self, d_model, eps=1e-5):
                super().__init__()
                self.eps = eps
                self.weight = nn.Parameter(torch.ones(d_model))
                self.bias = nn.Parameter(torch.zeros(d_model))

            def forward(self, x):
                mean = x.mean(dim=-1, keepdim=True)
                var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
                return self.weight * (x - mean) / torch.sqrt(var + self.eps) + self.bias
    ''',
    "feed_forward": '''
        class FeedForward(nn.Module):
            def __init__(self, d_model, d_ff, activation="gelu"):
                super().__init__()
                self.activation = activation
                self.w1, self.w2 = nn.Linear(d_model, d_ff), nn.Linear(d_ff, d_model)

            def forward(self, x):
                h = self.w1(x)
                return self.w2(F.gelu(h) if self.activation == "gelu" else F.relu(h))
    ''',
    "encoder_block": '''
        class EncoderBlock(nn.Module):
            def __init__(self, d_model, n_heads, d_ff, dropout=0.1, norm_first=False, activation="gelu", eps=1e-5):
                super().__init__()
                self.norm_first = norm_first
                self.attn = MultiHeadAttention(d_model, n_heads)
                self.ffn = FeedForward(d_model, d_ff, activation=activation)
                self.norm1, self.norm2 = LayerNorm(d_model, eps=eps), LayerNorm(d_model, eps=eps)
                self.dropout1, self.dropout2 = nn.Dropout(dropout), nn.Dropout(dropout)

            def forward(self, x, mask=None):
                if self.norm_first:
                    x = x + self.dropout1(self.attn(self.norm1(x), mask))
                    return x + self.dropout2(self.ffn(self.norm2(x)))
                x = self.norm1(x + self.dropout1(self.attn(x, mask)))
                return self.norm2(x + self.dropout2(self.ffn(x)))
    ''',
    "embeddings": '''
        class Embeddings(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.config = config
                self.token = nn.Embedding(config.vocab_size, config.d_model)
                if config.positions == "learned":
                    self.position = nn.Embedding(config.max_len, config.d_model)
                else:
                    self.register_buffer("sinusoids", sinusoidal_positions(config.max_len, config.d_model),
                                         persistent=False)
                types = config.type_vocab_size
                self.token_type = nn.Embedding(types, config.d_model) if types else None
                self.norm = LayerNorm(config.d_model, eps=config.eps) if config.embedding_norm else None
                self.dropout = nn.Dropout(config.dropout)

            def forward(self, token_ids, token_type_ids=None):
                length = token_ids.shape[1]
                x = self.token(token_ids)
                if self.config.scale_embeddings:
                    x = x * math.sqrt(self.config.d_model)
                x = x + (self.position.weight if self.config.positions == "learned" else self.sinusoids)[:length]
                if self.token_type is not None:
                    x = x + self.token_type(torch.zeros_like(token_ids) if token_type_ids is None else token_type_ids)
                return self.dropout(x if self.norm is None else self.norm(x))
    ''',
    "encoder_stack": '''
        class Encoder(nn.Module):
            def __init__(self, config):
                super().__init__()
                self.embeddings = Embeddings(config)
                self.layers = nn.ModuleList(
                    EncoderBlock(config.d_model, config.n_heads, config.d_ff, dropout=config.dropout,
                                 norm_first=config.norm_first, activation=config.activation, eps=config.eps)
                    for _ in range(config.n_layers))
                self.final_norm = LayerNorm(config.d_model, eps=config.eps) if config.norm_first else None

            def forward(self, token_ids, mask=None, token_type_ids=None):
                x = self.embeddings(token_ids, token_type_ids)
                if mask is not None and mask.dim() == 2:
                    mask = mask[:, None, None, :]
                for layer in self.layers:
                    x = layer(x, mask)
                return x if self.final_norm is None else self.final_norm(x)
    ''',
    "apply_rotary": '''
        def apply_rotary(x, positions=None, base=10000.0):
            length, d = x.shape[-2], x.shape[-1]
            if positions is None:
                positions = torch.arange(length)
            freq = base ** (-torch.arange(0, d, 2, dtype=torch.float32) / d)
            angle = positions.float()[:, None] * freq
            cos, sin = angle.cos().to(x.dtype), angle.sin().to(x.dtype)
            out = x.clone()
            out[..., 0::2] = x[..., 0::2] * cos - x[..., 1::2] * sin
            out[..., 1::2] = x[..., 0::2] * sin + x[..., 1::2] * cos
            return out
    ''',
    "sliding_window_mask": '''
        def sliding_window_mask(length, window, device=None):
            i = torch.arange(length, device=device)
            return (i[:, None] - i[None, :]).abs() <= window // 2
    ''',
}
PREAMBLE = "import math\nimport torch\nimport torch.nn.functional as F\nfrom torch import nn\n"


def learner_cell(tmp_path: Path, key: str, source: str, names: dict | None = None):
    """Define an answer from a file of its own (as a notebook cell is), with earlier parts in scope."""
    path = tmp_path / f"cell_{key}_{abs(hash(source))}.py"
    path.write_text(PREAMBLE + textwrap.dedent(source))
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    module.__dict__.update(names or {})
    spec.loader.exec_module(module)
    return getattr(module, checks.EXERCISES[key].name)


def pass_all(tmp_path, capsys, keys=tuple(ANSWERS)):
    """Pass the exercises in course order, each cell seeing the learner's earlier parts via yours.use."""
    for key in keys:
        uses = checks.EXERCISES[key].uses
        scope = dict(zip([checks.EXERCISES[u].name for u in uses], [yours.use(u) for u in uses])) if uses else {}
        getattr(checks, f"check_{key}")(learner_cell(tmp_path, key, ANSWERS[key], scope))
    return capsys.readouterr().out
