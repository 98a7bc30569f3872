"""A BERT-base-shaped checkpoint folder with random weights, for timing (speed does not depend on the values).

    python -m bench.make_random_bert out/random-bert-base      # config.json, model.safetensors, vocab.txt
    python -m bench.make_random_bert out/random-roberta-base --family roberta

transformers' BertForMaskedLM with its default config (12 layers, 768 hidden, 12 heads, 30,522 tokens), saved as
safetensors beside bert-base-uncased's vocabulary (the built-in model's vocab.txt is that vocabulary). No real
BERT-base is needed offline. With --family, the family's masked-LM class at its base size (BASE_CONFIGS: RoBERTa-
base, DistilBERT-base, ALBERT-base, ELECTRA-base's shape with the generator's masked-LM head, ModernBERT-base and deberta-v3-base); the vocab.txt
(RoBERTa: a small byte-level BPE with its special tokens) is only there for the loader (timing feeds ids). transformers is a benchmark-only dependency here.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from bert.pretrained import minilm_folder


# family -> (transformers' config class, its base-size fields; its defaults where none are given)
BASE_CONFIGS = {
    "bert": ("BertConfig", {}),
    "roberta": ("RobertaConfig", dict(vocab_size=50265, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5)),
    "distilbert": ("DistilBertConfig", {}),
    "albert": ("AlbertConfig", dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072, embedding_size=128)),
    "electra": ("ElectraConfig", dict(hidden_size=768, num_attention_heads=12, intermediate_size=3072, embedding_size=768)),
    # ModernBERT-base (Warner et al. 2024): 22 layers, a 128-token window, every third layer global from layer 0
    "modernbert": ("ModernBertConfig", dict(vocab_size=50368, hidden_size=768, num_hidden_layers=22, num_attention_heads=12,
                                            intermediate_size=1152, local_attention=128, global_attn_every_n_layers=3,
                                            max_position_embeddings=8192)),
    # deberta-v3-base (He et al. 2021, 2023): disentangled attention over 256 log-spaced position buckets
    "deberta-v2": ("DebertaV2Config", dict(vocab_size=128100, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                                           intermediate_size=3072, max_position_embeddings=512, relative_attention=True,
                                           position_buckets=256, max_relative_positions=-1, pos_att_type="p2c|c2p",
                                           share_att_key=True, norm_rel_ebd="layer_norm", position_biased_input=False,
                                           type_vocab_size=0, layer_norm_eps=1e-7, hidden_act="gelu")),
    # xlm-roberta-base (Conneau et al. 2020) and camembert-base (Martin et al. 2020): RoBERTa-base with their vocabularies
    "xlm-roberta": ("XLMRobertaConfig", dict(vocab_size=250002, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5)),
    "camembert": ("CamembertConfig", dict(vocab_size=32005, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5)),
    # esm2_t12_35M_UR50D (Lin et al. 2023): BERT-base's 12 layers at width 480, rotary, pre-norm, ESM-2's 33 tokens
    "esm": ("EsmConfig", dict(vocab_size=33, hidden_size=480, num_hidden_layers=12, num_attention_heads=20, intermediate_size=1920,
                              max_position_embeddings=1026, position_embedding_type="rotary", emb_layer_norm_before=False,
                              token_dropout=True, pad_token_id=1, mask_token_id=32, layer_norm_eps=1e-5)),
    # EuroBERT-210m (Boizard et al. 2025): transformers' EuroBertConfig defaults, with its released rotary base
    "eurobert": ("EuroBertConfig", dict(rope_parameters={"rope_type": "default", "rope_theta": 250000.0})),
    # gte-multilingual-base (Zhang et al. 2024): transformers' GteConfig defaults
    "gte": ("GteConfig", {}),
}
MASKED_LM = {"bert": "BertForMaskedLM", "roberta": "RobertaForMaskedLM", "distilbert": "DistilBertForMaskedLM",
             "albert": "AlbertForMaskedLM", "electra": "ElectraForMaskedLM",
             "modernbert": "ModernBertForMaskedLM", "deberta-v2": "DebertaV2ForMaskedLM",
             "xlm-roberta": "XLMRobertaForMaskedLM", "camembert": "CamembertForMaskedLM", "esm": "EsmForMaskedLM",
             "eurobert": "EuroBertForMaskedLM", "gte": "GteForMaskedLM"}
# ESM-2's vocabulary, in its order (facebook/esm2_t6_8M_UR50D's vocab.txt): one amino acid or special token a line
ESM_VOCAB = "<cls> <pad> <eos> <unk> L A G V S E R T I D P K Q N F Y M H W C X B U Z O . - <null_1> <mask>".split()


def tiny_fields(family: str) -> dict:
    """A few-layer, narrow model of the family (smoke tests of the benchmarks' code, not timing): three layers, so
    ModernBERT has a global and a local one; the vocabulary and the positions stay the family's."""
    if family == "distilbert":
        return dict(dim=64, n_heads=2, hidden_dim=128, n_layers=3)
    small = dict(hidden_size=64, num_attention_heads=2, intermediate_size=128, num_hidden_layers=3)
    return {**small, "embedding_size": 32} if family in ("albert", "electra") else small


def make_random_bert(folder: Path, seed: int = 0, family: str = "bert", tiny: bool = False):
    """Write the checkpoint into `folder` (created) and return transformers' model (eager attention); `tiny`: the
    family's settings at `tiny_fields`' sizes."""
    import torch
    import transformers

    torch.manual_seed(seed)
    config_class, fields = BASE_CONFIGS[family]
    fields = {**fields, **tiny_fields(family)} if tiny else fields
    config = getattr(transformers, config_class)(**fields, attn_implementation="eager")
    reference = getattr(transformers, MASKED_LM[family])(config).eval()
    folder.mkdir(parents=True, exist_ok=True)
    reference.save_pretrained(folder, safe_serialization=True)
    from bert.families.registry import family_of

    marker = family_of(config.model_type).piece_marker
    if family_of(config.model_type).characters:
        (folder / "vocab.txt").write_text("\n".join(ESM_VOCAB) + "\n", encoding="utf-8")
    elif marker == "##":
        shutil.copy(minilm_folder() / "vocab.txt", folder / "vocab.txt")
    else:  # a BPE with the family's special tokens (its own vocabulary kind does not change the timing)
        write_byte_level_bpe(folder, list(dict.fromkeys(family_of(config.model_type).special_tokens.values())))
    if family == "albert":  # its SentencePiece specials, beside [CLS], [SEP] and [MASK]
        with open(folder / "vocab.txt", "a", encoding="utf-8") as vocab:
            vocab.write("<pad>\n<unk>\n")
    return reference


def write_byte_level_bpe(folder: Path, special_tokens: list[str] | None = None) -> None:
    """vocab.json and merges.txt of a small byte-level BPE with RoBERTa's special tokens (or those given), trained
    here on the built-in sentences: the loader needs <s>, </s> and <mask>; the timing feeds ids."""
    from tokenizers.implementations import ByteLevelBPETokenizer

    from bert.data import builtin_sentences

    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator([s.text for s in builtin_sentences(200)], vocab_size=1000, min_frequency=1,
                                  special_tokens=special_tokens or ["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    tokenizer.save_model(str(folder))


def reference_for(config):
    """transformers' BertForMaskedLM (eager attention, random weights) shaped like our `config`: the
    speed reference the benchmarks time beside ours."""
    import transformers

    settings = {key: value for key, value in config.to_hf_dict().items() if key != "model_type"}
    return transformers.BertForMaskedLM(transformers.BertConfig(**settings, attn_implementation="eager")).eval()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--family", choices=list(BASE_CONFIGS), default="bert")
    args = parser.parse_args()
    make_random_bert(args.folder, family=args.family)
    print(f"wrote a random {args.family}-base checkpoint to {args.folder}")


if __name__ == "__main__":
    main()
