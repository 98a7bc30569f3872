"""TopK sparse autoencoders on one layer's residual stream (Gao et al. 2024, "Scaling and evaluating sparse
autoencoders").

With x one token's vector at `hidden_states[layer]` (0 = the embeddings, i = the output of layer i) and s the
`input_scale`:

    pre = (s x - b_dec) W_enc + b_enc                  # [feature]
    z   = ReLU(keep the k largest entries of pre, zero the rest)
    x^  = (z W_dec + b_dec) / s                        # the rows of W_dec (decoder directions) have unit norm

    sae = load_sae("out/sae", model)                   # refuses a file for another model or layer
    features = encode_tokens(sae, model, encoding)     # [seq, feature]: which features fire on each token
    logits, _ = model.run_with_cache(ids, types, interventions={sae.hook: splice(sae)})          # x -> x^
    logits, _ = model.run_with_cache(ids, types, interventions={sae.hook: steer(sae, 812, 0.0)})  # feature 812 off

Files: `sae.safetensors` (W_enc [hidden, F], b_enc [F], W_dec [F, hidden], b_dec [hidden]) and `config.json`
(SaeConfig); `labels.json` when people have labelled features (feature_labels.py). Nothing in them can run code.
"""
from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from ...devices import model_device
from ...errors import CheckpointError, InvalidInputError
from ...hooks import Intervention, hook_name
from ...model import Bert
from ...tokenizer import Encoding
from ..corpus.model_fingerprint import model_fingerprint
from .feature_labels import read_labels

FORMAT = "bert-inside topk sae"
WEIGHTS_FILE, CONFIG_FILE = "sae.safetensors", "config.json"


class SaeFileError(CheckpointError):
    """A sparse-autoencoder folder that cannot be used: missing, truncated or mis-shaped tensors, a config.json
    that does not parse, or one made for another model or layer; a training checkpoint from another run (other
    weights, layer, size or k)."""


@dataclass(frozen=True)
class SaeConfig:
    model: str  # the model it was trained on, as loaded ("minilm", a folder, a hub id)
    fingerprint: str  # model_fingerprint of that model: a file for other weights is refused
    layer: int  # the hidden_states index it reads (config.json's "layer"): 0 = the embeddings, i = after layer i-1
    hidden: int  # the model's hidden size
    features: int  # F, the dictionary's size
    k: int  # features kept per token
    special_tokens: bool  # whether [CLS] and [SEP] were trained on (when not, splicing leaves them as they are)
    input_scale: float = 1.0  # x is multiplied by it before encoding and x^ divided by it after
    data: str = ""  # what it was trained on
    steps: int = 0  # optimizer steps
    tokens: int = 0  # training vectors drawn (each distinct token `settings["repeats"]` times)
    settings: dict = field(default_factory=dict)  # batch size, learning rate, auxiliary loss, ...
    held_out: dict = field(default_factory=dict)  # figures measured on text it never saw (sae_measures)
    format: str = FORMAT

    @property
    def hook(self) -> str:
        """The hook whose output is hidden_states[layer]."""
        return hook_name("embedding_out") if self.layer == 0 else hook_name("layer_out", self.layer - 1)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=1) + "\n"


class TopKSae(nn.Module):
    def __init__(self, config: SaeConfig):
        super().__init__()
        if not 1 <= config.k <= config.features:
            raise InvalidInputError(f"k must lie in 1 .. features ({config.features}), not {config.k}")
        self.config = config
        hidden, features = config.hidden, config.features
        self.W_enc = nn.Parameter(torch.zeros(hidden, features))  # [hidden, feature]
        self.b_enc = nn.Parameter(torch.zeros(features))  # [feature]
        self.W_dec = nn.Parameter(torch.zeros(features, hidden))  # [feature, hidden], unit rows
        self.b_dec = nn.Parameter(torch.zeros(hidden))  # [hidden]
        self.labels: dict[int, str] = {}  # feature -> the label people gave it (labels.json beside the weights)

    @property
    def hook(self) -> str:
        return self.config.hook

    def pre_activations(self, x: torch.Tensor) -> torch.Tensor:
        """[*, hidden] -> [*, feature]: (s x - b_dec) W_enc + b_enc."""
        return (x * self.config.input_scale - self.b_dec) @ self.W_enc + self.b_enc

    def encode_sparse(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(values [*, k] >= 0, feature indices [*, k]): the k largest pre-activations, through ReLU."""
        values, indices = self.pre_activations(x).topk(self.config.k, dim=-1)
        return values.relu(), indices

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """[*, hidden] -> z [*, feature], zero outside each token's k kept features."""
        values, indices = self.encode_sparse(x)
        return torch.zeros(*x.shape[:-1], self.config.features, dtype=values.dtype, device=values.device).scatter(-1, indices, values)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """z [*, feature] -> x^ [*, hidden]."""
        return (z @ self.W_dec + self.b_dec) / self.config.input_scale

    def decode_sparse(self, values: torch.Tensor, indices: torch.Tensor) -> torch.Tensor:
        """The same as decode, reading only the k rows of W_dec each token uses."""
        k, lead = indices.shape[-1], indices.shape[:-1]
        summed = F.embedding_bag(indices.reshape(-1, k), self.W_dec, per_sample_weights=values.reshape(-1, k), mode="sum")
        return (summed.reshape(*lead, -1) + self.b_dec) / self.config.input_scale

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.decode_sparse(*self.encode_sparse(x))

    @torch.no_grad()
    def normalize_decoder(self) -> None:
        self.W_dec.div_(self.W_dec.norm(dim=1, keepdim=True).clamp_min(1e-8))

    def save(self, folder: str | Path, config: SaeConfig | None = None, dtype: torch.dtype = torch.float32) -> Path:
        """Write sae.safetensors (in `dtype`) and config.json (this SAE's, or `config` with its figures)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        tensors = {name: getattr(self, name).detach().to("cpu", dtype).contiguous() for name in ("W_enc", "b_enc", "W_dec", "b_dec")}
        save_file(tensors, folder / WEIGHTS_FILE)
        (folder / CONFIG_FILE).write_text((config or self.config).to_json(), encoding="utf-8")
        return folder


def shapes(config: SaeConfig) -> dict[str, tuple[int, ...]]:
    return {"W_enc": (config.hidden, config.features), "b_enc": (config.features,),
            "W_dec": (config.features, config.hidden), "b_dec": (config.hidden,)}


def read_config(folder: str | Path) -> SaeConfig:
    path = Path(folder) / CONFIG_FILE
    if not path.is_file():
        raise SaeFileError(f"{Path(folder).name} has no {CONFIG_FILE}: give a folder written by `python -m bert sae train`")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        known = {f.name for f in fields(SaeConfig)}
        config = SaeConfig(**{key: value for key, value in raw.items() if key in known})
    except (ValueError, TypeError) as error:
        raise SaeFileError(f"{CONFIG_FILE} of {Path(folder).name} is not a sparse-autoencoder config: {error}") from error
    if config.format != FORMAT:
        raise SaeFileError(f"{CONFIG_FILE} of {Path(folder).name} is a {config.format!r}, not a {FORMAT!r}")
    ints = ("layer", "hidden", "features", "k")
    if not all(isinstance(getattr(config, name), int) for name in ints) or not math.isfinite(config.input_scale) or config.input_scale <= 0:
        raise SaeFileError(f"{CONFIG_FILE} of {Path(folder).name}: {', '.join(ints)} must be whole numbers and input_scale positive")
    return config


def load_sae(folder: str | Path, model: Bert | None = None, layer: int | None = None, labels: bool = True) -> TopKSae:
    """A saved SAE, in eval mode, on `model`'s device. With `model` (and `layer`): SaeFileError unless it was
    trained on these very weights (and at that layer). labels: read the folder's labels.json into `sae.labels`
    (FeatureLabelsError when it cannot be used; feature_labels.py)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    config = read_config(folder)
    if layer is not None and layer != config.layer:
        raise SaeFileError(f"this SAE reads hidden_states[{config.layer}], not [{layer}]: train one for hidden_states[{layer}]")
    if model is not None:
        check_model(config, model)
    path = folder / WEIGHTS_FILE
    if not path.is_file():
        raise SaeFileError(f"{folder.name} has no {WEIGHTS_FILE}")
    try:
        tensors = load_file(path)
    except (SafetensorError, OSError, ValueError) as error:
        raise SaeFileError(f"{WEIGHTS_FILE} in {folder.name} cannot be read (truncated or not safetensors): {error}") from error
    expected = shapes(config)
    if set(tensors) != set(expected):
        raise SaeFileError(f"{WEIGHTS_FILE} in {folder.name} holds {sorted(tensors)}, not {sorted(expected)}")
    for name, shape in expected.items():
        if tuple(tensors[name].shape) != shape:
            raise SaeFileError(f"{WEIGHTS_FILE} in {folder.name}: {name} is {tuple(tensors[name].shape)}, "
                               f"config.json says {shape} (hidden {config.hidden}, features {config.features})")
    sae = TopKSae(config)
    sae.load_state_dict({name: tensor.float() for name, tensor in tensors.items()})
    if labels:
        sae.labels = read_labels(folder, config.features)
    device = model_device(model) if model is not None else "cpu"
    return sae.to(device).eval()


def check_model(config: SaeConfig, model: Bert) -> None:
    if config.hidden != model.config.hidden_size or config.layer > model.config.num_layers:
        raise SaeFileError(f"this SAE is for a model of hidden size {config.hidden} (hidden_states[{config.layer}]); this one has "
                           f"hidden size {model.config.hidden_size} and {model.config.num_layers} layers")
    if config.fingerprint != model_fingerprint(model):
        raise SaeFileError(f"this SAE was trained on other weights ({config.model}, fingerprint {config.fingerprint}); "
                           f"train one for this model: python -m bert sae train --model ... --hidden-states-index {config.layer}")


def splice(sae: TopKSae, keep: torch.Tensor | None = None) -> Intervention:
    """x -> x^ at the SAE's hook (for run_with_cache's interventions). keep: bool [batch, seq], True where x stays
    (e.g. [CLS]/[SEP] for an SAE trained without them)."""

    def replace(x: torch.Tensor, name: str) -> torch.Tensor:
        out = sae(x.float()).to(x.dtype)
        return out if keep is None else torch.where(keep.to(x.device)[..., None], x, out)

    return replace


def steer(sae: TopKSae, feature: int, factor: float, keep: torch.Tensor | None = None) -> Intervention:
    """Multiply one feature's activation by `factor` (0: switch it off) and add the change through its decoder
    direction: x + (factor - 1) z_f W_dec[f] / s. The SAE's reconstruction error stays in x, so only that
    feature's contribution changes."""
    if not 0 <= feature < sae.config.features:
        raise InvalidInputError(f"feature must lie in 0 .. {sae.config.features - 1}, not {feature}")

    def change(x: torch.Tensor, name: str) -> torch.Tensor:
        z = sae.encode(x.float())[..., feature]  # [batch, seq]
        delta = (factor - 1.0) * z[..., None] * sae.W_dec[feature] / sae.config.input_scale
        if keep is not None:
            delta = delta.masked_fill(keep.to(x.device)[..., None], 0.0)
        return x + delta.to(x.dtype)

    return change


@torch.no_grad()
def encode_tokens(sae: TopKSae, model: Bert, encoding: Encoding) -> torch.Tensor:
    """z [seq, feature] for one encoding, from one forward pass as far as the SAE's layer."""
    from .residuals import residual_at

    input_ids, token_type_ids = encoding.tensors(model_device(model))
    return sae.encode(residual_at(model, sae.config.layer, input_ids, token_type_ids)[0].float()).cpu()


@torch.no_grad()
def promoted_tokens(sae: TopKSae, model: Bert, feature: int, strength: float | None = None) -> torch.Tensor:
    """[vocab]: how much each token's masked-LM logit rises when the feature's decoder direction is added to the
    SAE's bias vector (the logit lens: the layer's vector read directly by the MLM head, nostalgebraist 2020).
    strength: the feature activation to add (default 1, in the SAE's scaled units)."""
    if not model.has_mlm_head:
        raise InvalidInputError("promoted tokens need a masked-LM head; this model has none")
    base = sae.b_dec / sae.config.input_scale
    direction = sae.W_dec[feature] * (1.0 if strength is None else strength) / sae.config.input_scale
    logits = model.lm_head(model.final_hidden(torch.stack([base, base + direction]).to(model_device(model))))
    return (logits[1] - logits[0]).float().cpu()
