"""Tokenizers of each BERT family built offline for the tests: a vocabulary trained with the `tokenizers` library on
a small varied corpus, handed to transformers' class of the family (`RobertaTokenizer(vocab, merges)`,
`AlbertTokenizer(vocab)`...), which builds the family's whole pipeline (normaliser, pre-tokenizer, special tokens,
pair template) and saves it with `save_pretrained`, as the hub's folders are made."""
from __future__ import annotations

import json
from pathlib import Path

from bert_test_support import PAIRS, SENTENCES

MORE_SENTENCES = [
    "Zoë's résumé mentions Ångström, Dvořák and São Paulo.",
    "Über-cool façades in Kraków and Reykjavík!",
    "東京は日本の首都です。",
    "北京欢迎你 and 서울 too.",
    "Emoji time: 😀😃 🎉🎉 👍🏽 ❤️.",
    "Antidisestablishmentarianism and pneumonoultramicroscopicsilicovolcanoconiosis are long words.",
    "Call 555-0199 or +44 20 7946 0958 before 3:45pm on 2024-03-01.",
    "π ≈ 3.14159, e ≈ 2.71828 and 1/3 = 0.333…",
    "\"Quoted,\" she said -- (parenthetically) [bracketed] {braced}.",
    "Wait... what?! No way!!!",
    "   leading and trailing spaces   ",
    "tabs\tand\nnew lines",
    "UPPER CASE and MiXeD cAsE words.",
    "e-mail: someone@example.com, web: https://example.org/path?q=1",
    "C'est la vie, n'est-ce pas?",
    "The price rose 12.5% to €1,234.56 (about $1,300).",
    "naïve coöperate rôle",
    "Ελληνικά και русский язык.",
    "مرحبا بالعالم",
    "हिन्दी भाषा",
    "It's the dogs' bone, not the dog's.",
    "x",
    "unbelievably unforgettable uncharacteristically",
    "##hash and Ġ and ▁ typed by hand",
    "Tokenization tokenizes tokens; tokenizers tokenize.",
    "A sentence with a typed <mask> token.",
    "Numbers: 1 22 333 4444 55555 666666 7777777.",
    "ﬁne ligatures and full-width ＡＢＣ",
]
MORE_PAIRS = [
    ("Der Bär läuft.", "Le café est fermé."),
    ("東京に行きました。", "It was fun 🎉."),
    ("Short.", "A much longer second sentence that goes on and on with many words in it."),
    ("What is 2+2?", "It's 4."),
    ("", "Only the second sentence."),
]
INPUTS = [(s, None) for s in SENTENCES + MORE_SENTENCES] + PAIRS + MORE_PAIRS
CORPUS = [s for s, _ in INPUTS] + [p for _, p in INPUTS if p] + [
    "the of and to in is was for that on with as by at from his her they this which",
    "Paris capital city France country river Seine tower museum painting",
]
FAMILIES = ("bert", "distilbert", "electra", "roberta", "albert", "modernbert", "deberta-v2", "xlm-roberta")
# what each family's config.json says about its input (base-size models' numbers)
CONFIGS = {
    "bert": {"model_type": "bert", "max_position_embeddings": 512, "type_vocab_size": 2},
    "distilbert": {"model_type": "distilbert", "max_position_embeddings": 512},
    "electra": {"model_type": "electra", "max_position_embeddings": 512, "type_vocab_size": 2},
    "roberta": {"model_type": "roberta", "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1},
    "albert": {"model_type": "albert", "max_position_embeddings": 512, "type_vocab_size": 2},
    "modernbert": {"model_type": "modernbert", "max_position_embeddings": 8192},
    "deberta-v2": {"model_type": "deberta-v2", "max_position_embeddings": 512, "type_vocab_size": 0},
    "xlm-roberta": {"model_type": "xlm-roberta", "max_position_embeddings": 514, "type_vocab_size": 1, "pad_token_id": 1},
    "esm": {"model_type": "esm", "max_position_embeddings": 1026, "position_embedding_type": "rotary"},
}
# ESM-2's vocabulary of amino acids, in its order (facebook/esm2_t6_8M_UR50D's vocab.txt)
ESM_VOCAB = "<cls> <pad> <eos> <unk> L A G V S E R T I D P K Q N F Y M H W C X B U Z O . - <null_1> <mask>".split()


def wordpiece_vocab() -> dict[str, int]:
    from tokenizers.implementations import BertWordPieceTokenizer

    trainer = BertWordPieceTokenizer(lowercase=True)
    trainer.train_from_iterator(CORPUS, vocab_size=400, min_frequency=1)
    return trainer.get_vocab()


def build_tokenizer(family: str, folder: Path):
    """transformers' tokenizer of `family`, built from a vocabulary trained here, saved into `folder`."""
    import transformers
    from tokenizers import AddedToken
    from tokenizers.implementations import ByteLevelBPETokenizer, SentencePieceUnigramTokenizer

    if family in ("bert", "distilbert", "electra"):
        cls = {"bert": transformers.BertTokenizer, "distilbert": transformers.DistilBertTokenizer,
               "electra": transformers.ElectraTokenizer}[family]
        reference = cls(vocab=wordpiece_vocab())
    elif family == "roberta":
        trainer = ByteLevelBPETokenizer()
        trainer.train_from_iterator(CORPUS, vocab_size=500, min_frequency=1,
                                    special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
        model = json.loads(trainer._tokenizer.to_str())["model"]
        reference = transformers.RobertaTokenizer(  # roberta-base's <mask> takes the space before it
            vocab=model["vocab"], merges=[tuple(m) for m in model["merges"]], mask_token=AddedToken("<mask>", lstrip=True))
        trainer.save_model(str(folder))  # vocab.json and merges.txt, as roberta-base's folder also has them
    elif family == "modernbert":
        reference = _modernbert_tokenizer(transformers, AddedToken, ByteLevelBPETokenizer)
    elif family == "deberta-v2":  # DeBERTa-v3's SentencePiece (He et al. 2023), its special tokens BERT's
        trainer = SentencePieceUnigramTokenizer()
        trainer.train_from_iterator(CORPUS, vocab_size=300, unk_token="[UNK]",
                                    special_tokens=["[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"])
        vocab = [tuple(v) for v in json.loads(trainer._tokenizer.to_str())["model"]["vocab"]]
        reference = transformers.DebertaV2Tokenizer(vocab=vocab)
    elif family == "xlm-roberta":  # Conneau et al. 2020: a SentencePiece unigram model, RoBERTa's special tokens
        trainer = SentencePieceUnigramTokenizer()
        trainer.train_from_iterator(CORPUS, vocab_size=300, unk_token="<unk>", special_tokens=["<s>", "<pad>", "</s>", "<unk>"])
        reference = transformers.XLMRobertaTokenizer(vocab=[tuple(v) for v in json.loads(trainer._tokenizer.to_str())["model"]["vocab"]])
    elif family == "esm":  # ESM-2 (Lin et al. 2023): one amino acid per line of vocab.txt
        (folder / "vocab.txt").write_text("\n".join(ESM_VOCAB) + "\n", encoding="utf-8")
        reference = transformers.EsmTokenizer(str(folder / "vocab.txt"))
    else:
        trainer = SentencePieceUnigramTokenizer()
        trainer.train_from_iterator(CORPUS, vocab_size=300, unk_token="<unk>",
                                    special_tokens=["<pad>", "<unk>", "[CLS]", "[SEP]", "[MASK]"])
        reference = transformers.AlbertTokenizer(vocab=[tuple(v) for v in json.loads(trainer._tokenizer.to_str())["model"]["vocab"]])
    reference.save_pretrained(folder)
    (folder / "config.json").write_text(json.dumps(CONFIGS[family]))
    return reference


# A tiny transformers model of each family, for `family_folder`: BERT's class and each family's own
# (tests/families/family_support.py); the pre-training heads with a masked-LM head where the family has one.
MODEL_CLASSES = {"bert": "BertForMaskedLM", "roberta": "RobertaForMaskedLM", "distilbert": "DistilBertForMaskedLM",
                 "albert": "AlbertForMaskedLM", "electra": "ElectraForMaskedLM"}


def family_folder(family: str, folder: Path, seed: int = 3, **fields) -> Path:
    """A saved folder of a tiny random model of `family` with the family's own tokenizer (`build_tokenizer`):
    WordPiece for BERT, DistilBERT and ELECTRA, byte-level BPE for RoBERTa, SentencePiece for ALBERT, each
    trained here on CORPUS. The model is built by transformers' class and its config.json replaces the
    tokenizer's. fields: config fields (num_hidden_layers=3, ...)."""
    from families.family_support import build_hf

    folder.mkdir(parents=True, exist_ok=True)
    reference = build_tokenizer(family, folder)
    if family == "bert":
        import transformers

        from bert_test_support import hf_config, randomize_

        settings = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=40) | fields
        model = transformers.BertForMaskedLM(hf_config(vocab_size=len(reference), **settings))
        randomize_(model, seed).save_pretrained(folder)
    else:
        build_hf(family, MODEL_CLASSES[family], seed=seed, vocab_size=len(reference), **fields).save_pretrained(folder)
    return folder


def _modernbert_tokenizer(transformers, AddedToken, ByteLevelBPETokenizer):
    """ModernBERT's layout (Warner et al. 2024): one tokenizer.json holding a byte-level BPE and BERT's special
    tokens in a [CLS] A [SEP] (B [SEP]) template, its [MASK] taking the space before it, read by transformers'
    generic fast tokenizer (ModernBERT has no tokenizer class of its own)."""
    from tokenizers.processors import TemplateProcessing

    specials = ["[UNK]", "[CLS]", "[SEP]", "[PAD]", "[MASK]"]
    trainer = ByteLevelBPETokenizer()
    trainer.train_from_iterator(CORPUS, vocab_size=500, min_frequency=1, special_tokens=specials)
    tokenizer = trainer._tokenizer
    tokenizer.add_special_tokens([AddedToken("[MASK]", lstrip=True, special=True)])  # as ModernBERT's tokenizer.json
    cls, sep = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    tokenizer.post_processor = TemplateProcessing(single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
                                                  special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, cls_token="[CLS]", sep_token="[SEP]", pad_token="[PAD]", unk_token="[UNK]",
        mask_token=AddedToken("[MASK]", lstrip=True))
