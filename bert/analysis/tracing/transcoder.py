"""TopK transcoders, one per layer: each reads what its layer's MLP reads and predicts what that MLP writes
(Dunefsky et al. 2024, "Transcoders find interpretable LLM feature circuits"; TopK as Gao et al. 2024).

With x the MLP's input at one token of layer l (post-LN: the stream after the attention sub-layer's LayerNorm,
`attention_out`; pre-norm: the LayerNorm'd input `mlp_in`), y what the MLP adds to the residual stream
(`mlp_result`, its output bias included), and s_in, s_out the layer's input and output scales:

    pre = (s_in x) W_enc[l] + b_enc[l]                 # [feature]
    z   = ReLU(keep the k largest entries of pre, zero the rest)
    y^  = (z W_dec[l] + b_dec[l]) / s_out              # the rows of W_dec[l] (decoder directions) have unit norm

    transcoders = load_transcoders("out/transcoders", model)          # refuses a file for other weights
    logits, _ = model.run_with_cache(ids, types, interventions=splice_all(transcoders, model))   # every MLP -> y^

Files: `transcoders.safetensors` (W_enc [layer, hidden, F], b_enc [layer, F], W_dec [layer, F, hidden],
b_dec [layer, hidden]) and `config.json` (TranscoderConfig: the recipe, the scales and the held-out figures, which
make the model card). Nothing in them can run code.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ...devices import model_device
from ...errors import CheckpointError, InvalidInputError
from ...hooks import Intervention, hook_name
from ...model import Bert
from ..corpus.model_fingerprint import model_fingerprint

FORMAT = "bert-inside topk transcoders"
WEIGHTS_FILE, CONFIG_FILE = "transcoders.safetensors", "config.json"


class TranscoderFileError(CheckpointError):
    """A transcoders folder that cannot be used: missing or mis-shaped tensors, a config.json that does not parse,
    or one made for other weights; a training checkpoint of another run."""


def mlp_input_kind(model: Bert) -> str:
    """The hook kind whose output each MLP reads: post-LN, the attention sub-layer's output (after its LayerNorm);
    pre-norm (ModernBERT), the MLP's own LayerNorm'd input."""
    return "mlp_in" if model.config.pre_norm else "attention_out"


@dataclass(frozen=True)
class TranscoderConfig:
    model: str  # the model it was trained on, as loaded ("minilm", a folder, a hub id)
    fingerprint: str  # model_fingerprint of that model: a file for other weights is refused
    layers: int  # one transcoder per transformer layer, 0 .. layers - 1
    hidden: int  # the model's hidden size
    features: int  # F, features per layer
    k: int  # features kept per token
    input_kind: str  # the hook kind each transcoder reads ("attention_out" post-LN, "mlp_in" pre-norm); writes "mlp_result"
    input_scales: list = field(default_factory=list)  # s_in per layer
    output_scales: list = field(default_factory=list)  # s_out per layer
    data: str = ""  # what it was trained on
    steps: int = 0  # optimizer steps
    tokens: int = 0  # training tokens drawn (each token gives every layer's pair)
    settings: dict = field(default_factory=dict)  # batch size, learning rate, ...
    held_out: dict = field(default_factory=dict)  # figures measured on text it never saw (transcoder_measures)
    format: str = FORMAT

    def input_hook(self, layer: int) -> str:
        return hook_name(self.input_kind, layer)

    @staticmethod
    def output_hook(layer: int) -> str:
        return hook_name("mlp_result", layer)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


class Transcoders(nn.Module):
    """Every layer's transcoder, stacked: parameters carry a leading [layer] axis."""

    def __init__(self, config: TranscoderConfig):
        super().__init__()
        if not 1 <= config.k <= config.features:
            raise InvalidInputError(f"k must lie in 1 .. features ({config.features}), not {config.k}")
        self.config = config
        layers, hidden, features = config.layers, config.hidden, config.features
        self.W_enc = nn.Parameter(torch.zeros(layers, hidden, features))  # [layer, hidden, feature]
        self.b_enc = nn.Parameter(torch.zeros(layers, features))  # [layer, feature]
        self.W_dec = nn.Parameter(torch.zeros(layers, features, hidden))  # [layer, feature, hidden], unit rows
        self.b_dec = nn.Parameter(torch.zeros(layers, hidden))  # [layer, hidden]
        scales = lambda values: torch.tensor(values or [1.0] * layers, dtype=torch.float32)  # noqa: E731
        self.register_buffer("input_scale", scales(config.input_scales), persistent=False)  # [layer]
        self.register_buffer("output_scale", scales(config.output_scales), persistent=False)  # [layer]

    def set_scales(self, input_scales: list[float], output_scales: list[float]) -> None:
        """s_in and s_out per layer, in the config (which the files keep) and in the buffers the maths reads."""
        self.config = replace(self.config, input_scales=list(map(float, input_scales)), output_scales=list(map(float, output_scales)))
        self.input_scale.copy_(torch.tensor(self.config.input_scales))
        self.output_scale.copy_(torch.tensor(self.config.output_scales))

    def pre_activations(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """[*, hidden] -> [*, feature]: (s_in x) W_enc + b_enc."""
        return (x * self.input_scale[layer]) @ self.W_enc[layer] + self.b_enc[layer]

    def encode_sparse(self, x: torch.Tensor, layer: int) -> tuple[torch.Tensor, torch.Tensor]:
        """(values [*, k] >= 0, feature indices [*, k]): the k largest pre-activations, through ReLU."""
        values, indices = self.pre_activations(x, layer).topk(self.config.k, dim=-1)
        return values.relu(), indices

    def encode(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        """[*, hidden] -> z [*, feature], zero outside each token's k kept features."""
        values, indices = self.encode_sparse(x, layer)
        return torch.zeros(*x.shape[:-1], self.config.features, dtype=values.dtype, device=values.device).scatter(-1, indices, values)

    def decode(self, z: torch.Tensor, layer: int) -> torch.Tensor:
        """z [*, feature] -> y^ [*, hidden]."""
        return (z @ self.W_dec[layer] + self.b_dec[layer]) / self.output_scale[layer]

    def decode_sparse(self, values: torch.Tensor, indices: torch.Tensor, layer: int) -> torch.Tensor:
        """The same as decode, reading only the k rows of W_dec each token uses."""
        k, lead = indices.shape[-1], indices.shape[:-1]
        summed = F.embedding_bag(indices.reshape(-1, k), self.W_dec[layer], per_sample_weights=values.reshape(-1, k), mode="sum")
        return (summed.reshape(*lead, -1) + self.b_dec[layer]) / self.output_scale[layer]

    def forward(self, x: torch.Tensor, layer: int) -> torch.Tensor:
        return self.decode_sparse(*self.encode_sparse(x, layer), layer)

    def feature_direction(self, layer: int, feature: int) -> torch.Tensor:
        """[hidden]: what one unit of the feature's activation adds to the MLP's output, W_dec[l, f] / s_out."""
        return self.W_dec[layer, feature] / self.output_scale[layer]

    def encoder_direction(self, layer: int, feature: int) -> torch.Tensor:
        """[hidden]: the feature's pre-activation is this dot the MLP's input, plus b_enc[l, f]."""
        return self.W_enc[layer, :, feature] * self.input_scale[layer]

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        self.W_dec.div_(self.W_dec.norm(dim=-1, keepdim=True).clamp_min(1e-8))

    def save(self, folder: str | Path, config: TranscoderConfig | None = None, dtype: torch.dtype = torch.float32) -> Path:
        """Write transcoders.safetensors (in `dtype`) and config.json (this one's, or `config` with its figures)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {name: getattr(self, name).detach().to("cpu", dtype).contiguous() for name in shapes(self.config)}
        save_file(tensors, folder / WEIGHTS_FILE)
        (folder / CONFIG_FILE).write_text((config or self.config).to_json(), encoding="utf-8")
        return folder


def shapes(config: TranscoderConfig) -> dict[str, tuple[int, ...]]:
    layers, hidden, features = config.layers, config.hidden, config.features
    return {"W_enc": (layers, hidden, features), "b_enc": (layers, features), "W_dec": (layers, features, hidden),
            "b_dec": (layers, hidden)}


def read_config(folder: str | Path) -> TranscoderConfig:
    path, name = Path(folder) / CONFIG_FILE, Path(folder).name
    if not path.is_file():
        raise TranscoderFileError(f"{name} has no {CONFIG_FILE}: give a folder written by `python -m bert transcoders train`")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        known = {f.name for f in fields(TranscoderConfig)}
        config = TranscoderConfig(**{key: value for key, value in raw.items() if key in known})
    except (ValueError, TypeError) as error:
        raise TranscoderFileError(f"{CONFIG_FILE} of {name} is not a transcoders config: {error}") from error
    if config.format != FORMAT:
        raise TranscoderFileError(f"{CONFIG_FILE} of {name} is a {config.format!r}, not a {FORMAT!r}")
    scales = config.input_scales + config.output_scales
    if len(scales) != 2 * config.layers or not all(isinstance(s, (int, float)) and s > 0 for s in scales):
        raise TranscoderFileError(f"{CONFIG_FILE} of {name}: give one positive input and output scale per layer")
    return config


def load_transcoders(folder: str | Path, model: Bert | None = None) -> Transcoders:
    """Saved transcoders, in eval mode, on `model`'s device. With `model`: TranscoderFileError unless they were
    trained on these very weights."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    config = read_config(folder)
    if model is not None:
        check_model(config, model)
    path = folder / WEIGHTS_FILE
    if not path.is_file():
        raise TranscoderFileError(f"{folder.name} has no {WEIGHTS_FILE}")
    try:
        tensors = load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise TranscoderFileError(f"{WEIGHTS_FILE} in {folder.name} cannot be read (truncated or not safetensors): {error}") from error
    expected = shapes(config)
    if set(tensors) != set(expected) or any(tuple(tensors[n].shape) != s for n, s in expected.items()):
        found = {name: tuple(tensor.shape) for name, tensor in tensors.items()}
        raise TranscoderFileError(f"{WEIGHTS_FILE} in {folder.name} holds {found}, config.json says {expected}")
    transcoders = Transcoders(config)
    transcoders.load_state_dict({name: tensor.float() for name, tensor in tensors.items()})
    device = model_device(model) if model is not None else "cpu"
    return transcoders.to(device).eval()


def check_model(config: TranscoderConfig, model: Bert) -> None:
    if config.hidden != model.config.hidden_size or config.layers != model.config.num_layers:
        raise TranscoderFileError(f"these transcoders are for a model of hidden size {config.hidden} with {config.layers} layers; "
                                  f"this one has {model.config.hidden_size} and {model.config.num_layers}")
    if config.fingerprint != model_fingerprint(model):
        raise TranscoderFileError(f"these transcoders were trained on other weights ({config.model}, fingerprint "
                                  f"{config.fingerprint}); train some for this model: python -m bert transcoders train --model ...")


def splice_all(transcoders: Transcoders, layers: list[int] | None = None) -> dict[str, Intervention]:
    """Interventions (for run_with_cache) that replace each MLP's output by its transcoder's y^, read from the MLP's
    input in the same pass (the replacement model without error terms). layers: which MLPs (default every one)."""
    config = transcoders.config
    read: dict[int, torch.Tensor] = {}
    interventions: dict[str, Intervention] = {}
    for layer in range(config.layers) if layers is None else layers:
        def keep_input(x: torch.Tensor, name: str, layer=layer) -> torch.Tensor:
            read[layer] = x
            return x

        def replace_output(y: torch.Tensor, name: str, layer=layer) -> torch.Tensor:
            return transcoders(read.pop(layer).float(), layer).to(y.dtype)

        interventions[config.input_hook(layer)] = keep_input
        interventions[config.output_hook(layer)] = replace_output
    return interventions
