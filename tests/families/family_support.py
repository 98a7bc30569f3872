"""Tiny random checkpoints of BERT's family, built by `transformers`' own classes (the reference), and the
comparison of our model with theirs: logits, every hidden state, every attention pattern."""
from __future__ import annotations

import json

import torch

from bert_test_support import TINY_LAYOUT, TINY_VOCAB, pad_rows, random_rows, randomize_

TOLERANCE = dict(atol=1e-5, rtol=1e-5)
FAMILIES = ("roberta", "distilbert", "albert", "electra")
CLASS_PREFIX = {"roberta": "Roberta", "distilbert": "DistilBert", "albert": "Albert", "electra": "Electra"}
# The pre-training heads of each family, then the two classification heads every family has.
PRETRAINING = {
    "roberta": ["RobertaForMaskedLM"],
    "distilbert": ["DistilBertForMaskedLM"],
    "albert": ["AlbertForMaskedLM", "AlbertForPreTraining"],
    "electra": ["ElectraForPreTraining", "ElectraForMaskedLM"],
    "modernbert": ["ModernBertForMaskedLM"],  # its own tests: tests/families/test_modernbert.py
}
ARCHITECTURES = [
    (family, name)
    for family in FAMILIES
    for name in PRETRAINING[family] + [f"{CLASS_PREFIX[family]}ForSequenceClassification", f"{CLASS_PREFIX[family]}ForTokenClassification"]
]
# The pre-training architectures run in the fast run; the classification heads' repeats of a check are slow.
def fast_pretraining_only():
    """ARCHITECTURES as pytest params, the classification heads marked slow."""
    import pytest

    return [pytest.param(family, name, id=name, marks=() if name in PRETRAINING[family] else pytest.mark.slow)
            for family, name in ARCHITECTURES]


PAD_ID = {"roberta": 1}  # RoBERTa's <pad>; the others pad with 0
NO_TOKEN_TYPES = ("distilbert", "modernbert", "eurobert", "esm")  # their forward takes no token_type_ids
MODERNBERT = ["ModernBertForMaskedLM", "ModernBertForSequenceClassification", "ModernBertForTokenClassification"]
# rows longer than ModernBERT's tiny window (local_attention 8: each token sees ±4) and a padded batch
LONG_LAYOUT = [(22, 0), (9, 0), (10, 8)]


def write_tiny_tokenizer(folder, vocab_file) -> None:
    """The tiny vocabulary (vocab.txt) with BERT's special tokens named by role, for a folder of any family."""
    (folder / "vocab.txt").write_bytes(vocab_file.read_bytes())
    roles = {"cls_token": "[CLS]", "sep_token": "[SEP]", "mask_token": "[MASK]", "pad_token": "[PAD]", "unk_token": "[UNK]"}
    (folder / "special_tokens_map.json").write_text(json.dumps(roles))


def load_saved(theirs, folder, vocab_file):
    """transformers' model saved into `folder` with the tiny tokenizer, then loaded by bert.load_pretrained: ours."""
    import bert

    theirs.save_pretrained(folder)
    write_tiny_tokenizer(folder, vocab_file)
    return bert.load_pretrained(str(folder))[0]


def hf_family_config(family: str, **fields):
    """A tiny transformers config of the family, for the tiny vocabulary, eager attention (attentions returned).
    Each has something of its own: RoBERTa one segment and pad id 1, ALBERT E < H and three applications of its
    one layer, ELECTRA E < H, DistilBERT's own field names."""
    import transformers

    common = dict(vocab_size=len(TINY_VOCAB), attn_implementation="eager", num_labels=3)
    if family == "roberta":
        config = transformers.RobertaConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40,
                                            max_position_embeddings=66, type_vocab_size=1, pad_token_id=1, bos_token_id=2,
                                            eos_token_id=3, layer_norm_eps=1e-5, hidden_act="gelu_new", **common)
    elif family == "distilbert":
        config = transformers.DistilBertConfig(dim=32, n_layers=2, n_heads=2, hidden_dim=40, max_position_embeddings=64,
                                               activation="gelu", pad_token_id=0, **common)
    elif family == "albert":
        config = transformers.AlbertConfig(embedding_size=16, hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                                           intermediate_size=40, max_position_embeddings=64, hidden_act="gelu_new",
                                           pad_token_id=0, **common)
    elif family == "modernbert":  # 4 layers: global, local, local, global; biases as its released configs (none)
        ids = {f"{role}_token_id": TINY_VOCAB.index(token) for role, token in (("cls", "[CLS]"), ("sep", "[SEP]"), ("bos", "[CLS]"), ("eos", "[SEP]"))}
        config = transformers.ModernBertConfig(hidden_size=32, num_hidden_layers=4, num_attention_heads=2, intermediate_size=40,
                                               max_position_embeddings=64, local_attention=8, global_attn_every_n_layers=3,
                                               global_rope_theta=160000.0, local_rope_theta=10000.0, pad_token_id=0,
                                               **ids, **common)
    elif family == "eurobert":  # grouped: 4 query heads share 2 key-value heads; its released rotary base
        config = transformers.EuroBertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                             intermediate_size=40, max_position_embeddings=64, pad_token_id=0, bos_token_id=2,
                                             eos_token_id=3, mask_token_id=4, rope_parameters={"rope_type": "default", "rope_theta": 250000.0},
                                             **common)
    elif family == "gte":  # post-LN with rotary positions and a gated MLP (transformers' gte)
        config = transformers.GteConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                                        max_position_embeddings=64, pad_token_id=0, **common)
    elif family == "nomic_bert":  # post-LN with rotary positions, two segments, no biases, SwiGLU (transformers' nomic_bert)
        config = transformers.NomicBertConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=40,
                                              max_position_embeddings=64, pad_token_id=0, **common)
    elif family == "deberta-v2":  # deberta-v3-base's settings (tests/families/test_deberta.py), 8 buckets
        config = transformers.DebertaV2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40,
                                              max_position_embeddings=64, relative_attention=True, position_buckets=8,
                                              max_relative_positions=-1, pos_att_type="p2c|c2p", share_att_key=True,
                                              norm_rel_ebd="layer_norm", position_biased_input=False, type_vocab_size=0,
                                              layer_norm_eps=1e-7, hidden_act="gelu", pad_token_id=0, **common)
    elif family == "esm":  # ESM-2's settings (tests/families/test_esm.py): rotary, no embedding LayerNorm, token dropout
        config = transformers.EsmConfig(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40,
                                        max_position_embeddings=66, position_embedding_type="rotary", emb_layer_norm_before=False,
                                        token_dropout=True, mask_token_id=TINY_VOCAB.index("[MASK]"), pad_token_id=0,
                                        layer_norm_eps=1e-5, **common)
    else:
        config = transformers.ElectraConfig(embedding_size=16, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                                            intermediate_size=40, max_position_embeddings=64, hidden_act="gelu", **common)
    for key, value in fields.items():
        setattr(config, key, value)
    return config


def build_hf(family: str, architecture: str, seed: int = 3, **fields):
    """A transformers model of that class with random values in every parameter."""
    import transformers

    torch.manual_seed(0)
    return randomize_(getattr(transformers, architecture)(hf_family_config(family, **fields)), seed=seed)


def family_batch(family: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The tiny batch (padding, pairs) with the family's pad id; one segment (all 0) where it has no second.
    ModernBERT's rows are longer than its local window (LONG_LAYOUT)."""
    layout = LONG_LAYOUT if family == "modernbert" else TINY_LAYOUT
    input_ids, token_type_ids, attention_mask = pad_rows(random_rows(len(TINY_VOCAB), layout, seed=0), PAD_ID.get(family, 0))
    if family in ("roberta", "distilbert", "modernbert", "eurobert"):
        token_type_ids = torch.zeros_like(token_type_ids)
    return input_ids, token_type_ids, attention_mask


def run_transformers(theirs, family: str, batch):
    input_ids, token_type_ids, attention_mask = batch
    kwargs = dict(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, output_attentions=True)
    if family not in NO_TOKEN_TYPES and getattr(theirs.config, "type_vocab_size", 1):  # GTE's English model: no segments
        kwargs["token_type_ids"] = token_type_ids
    with torch.no_grad():
        return theirs(**kwargs)


def zero_head_patches(head: int, head_size: int, call: int | None = None):
    """Two ways of zeroing attention head `head`: a forward pre-hook for transformers' attention output projection
    (it zeroes the head's slice of the projection's input, at the projection's `call`-th call only, counted from
    0; None: at every call), an intervention on our `hook_z`, and the list of the pre-hook's calls."""
    calls = []

    def in_transformers(module, args):
        calls.append(1)
        if call is not None and len(calls) - 1 != call:
            return None
        x = args[0].clone()
        x[..., head * head_size:(head + 1) * head_size] = 0
        return (x,)

    def in_ours(z, name):
        z = z.clone()
        z[:, head] = 0
        return z

    return in_transformers, in_ours, calls


def assert_close_where(ours, theirs, keep, what):
    assert ours.shape == theirs.shape, f"{what}: shape {tuple(ours.shape)} vs transformers {tuple(theirs.shape)}"
    torch.testing.assert_close(ours[keep], theirs[keep], **TOLERANCE, msg=lambda m: f"{what}: {m}")


def compare(ours, theirs, family: str, architecture: str, batch) -> None:
    """Every hidden state and attention pattern, and the head's logits, at the real (unpadded) positions. In a
    pre-norm model (ModernBERT) transformers' last hidden state is the final LayerNorm's output."""
    input_ids, token_type_ids, attention_mask = batch
    keep = attention_mask.bool()
    reference = run_transformers(theirs, family, batch)
    output = ("classifier" if architecture.endswith("SequenceClassification") else "tagger" if architecture.endswith("TokenClassification")
              else "replaced" if architecture == "ElectraForPreTraining" else "mlm")
    with torch.no_grad():
        logits, cache = ours.run_with_cache(input_ids, token_type_ids, attention_mask, output=output)
    layers = ours.config.num_layers
    assert len(reference.hidden_states) == layers + 1 and len(reference.attentions) == layers
    assert_close_where(cache["embedding_out"], reference.hidden_states[0], keep, "embedding output")
    for layer in range(layers):
        last_normed = layer == layers - 1 and ours.final_norm is not None
        hidden = cache["final_norm"] if last_normed else cache["layer_out", layer]
        assert_close_where(hidden, reference.hidden_states[layer + 1], keep, f"layer {layer} output")
        real_query = keep[:, None, :].expand(cache["pattern", layer].shape[:3])
        assert_close_where(cache["pattern", layer], reference.attentions[layer], real_query, f"layer {layer} attention")
    their_logits = reference.prediction_logits if architecture == "AlbertForPreTraining" else reference.logits
    if output == "classifier":
        torch.testing.assert_close(logits, their_logits, **TOLERANCE)
    else:
        assert_close_where(logits, their_logits, keep, f"{architecture} logits")
    if architecture == "AlbertForPreTraining":
        torch.testing.assert_close(ours.nsp_logits(cache["layer_out", layers - 1]), reference.sop_logits, **TOLERANCE)


def compare_fused_and_counted(ours, theirs, family: str, batch) -> None:
    """The unrecorded (fused attention) pass gives transformers' logits at the real positions, and the parameter
    count (bert.count_parameters) equals both models' own."""
    from bert import count_parameters
    from bert.params import model_heads

    input_ids, token_type_ids, attention_mask = batch
    with torch.no_grad():
        fused = ours(input_ids, token_type_ids, attention_mask)
    expected = run_transformers(theirs, family, batch).logits
    keep = attention_mask.bool() if fused.dim() == 3 else slice(None)
    torch.testing.assert_close(fused[keep], expected[keep], **TOLERANCE)
    counts = count_parameters(ours.config, **model_heads(ours))
    assert counts["total"] == sum(p.numel() for p in theirs.parameters()) == sum(p.numel() for p in ours.parameters())


def deberta_pass(theirs, input_ids):
    """transformers' DeBERTa-v2 pass over input_ids [1, seq] (one segment), recording for each layer what its
    DisentangledSelfAttention reads (hidden states, relative positions, relative embeddings: a forward pre-hook) and
    the scores its softmax reads ([head, query, key]: torch's softmax wrapped for the call), layer by layer."""
    layers, scores = [], []
    softmax = torch.nn.functional.softmax

    def recording_softmax(values, *args, **kwargs):
        scores.append(values[0].clone())
        return softmax(values, *args, **kwargs)

    def reads(module, args, kwargs):
        layers.append(dict(x=args[0][0], relative=kwargs["relative_pos"], embeddings=kwargs["rel_embeddings"], module=module))

    handles = [layer.attention.self.register_forward_pre_hook(reads, with_kwargs=True) for layer in theirs.deberta.encoder.layer]
    try:
        torch.nn.functional.softmax = recording_softmax
        with torch.no_grad():
            theirs(input_ids=input_ids, token_type_ids=torch.zeros_like(input_ids))
    finally:
        torch.nn.functional.softmax = softmax
        for handle in handles:
            handle.remove()
    assert len(scores) == len(layers) == theirs.config.num_hidden_layers
    return layers, scores
