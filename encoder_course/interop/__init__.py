"""The course's model and the outside world: PyTorch's own layers, Hugging Face checkpoints, a pretrained model.

``bridges.py`` converts the mask (the one converter to torch's convention), builds ``nn.MultiheadAttention``,
``nn.TransformerEncoderLayer`` and ``nn.TransformerEncoder`` holding our weights, and maps checkpoint names
(``rename_key``); its names are here too (``interop.to_torch_layer``). ``pretrained.py`` loads
all-MiniLM-L6-v2 from a local folder (``from encoder_course.interop import pretrained``).
"""

from .bridges import (
    EMBEDDING_NAMES,
    IGNORED_KEYS,
    LAYER_NAMES,
    checkpoint_state_dict,
    copy_attention,
    copy_layer,
    name_map,
    rename_key,
    to_torch_attention,
    to_torch_encoder,
    to_torch_layer,
    to_torch_padding_mask,
)

__all__ = [
    "checkpoint_state_dict", "copy_attention", "copy_layer", "EMBEDDING_NAMES", "IGNORED_KEYS", "LAYER_NAMES",
    "name_map", "rename_key", "to_torch_attention", "to_torch_encoder", "to_torch_layer", "to_torch_padding_mask",
]
