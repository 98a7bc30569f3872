"""One family, one file: everything that is a family's (its model_type, its checkpoints' tensor names, its
config.json's own field names) is written in its module in bert/families/ and nowhere else in the code of the
library and the app, so that a family cannot grow back into the core. BERT's names are the core's own (the tree
is BERT's), so the families checked are all the others. Prose (docstrings, comments) may name a family; code
may not. And the model file reads top to bottom: about 500 lines, attention on two paths."""
from __future__ import annotations

import ast
import dataclasses
import inspect
from pathlib import Path

import pytest

from bert.config import BertConfig
from bert.families.family import Heads
from bert.families.registry import FAMILIES

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("bert", "viz_app", "pages")
ALLOWED = {
    # BertConfig's named constructors (roberta_base, ...): each passes its family's model_type and its sizes
    "bert/config.py": {"roberta", "distilbert", "albert", "electra", "modernbert", "deberta-v2"},
    # pre-training objectives named after the papers that introduced them, not families
    "bert/pretraining/successors.py": {"albert", "electra"},
}
OTHERS = [name for name in FAMILIES if name != "bert"]
SHARED_HELPERS = ("hf_fields.py", "tables.py")  # what several families use (transformers' common names): no family's own


def _tiny(family) -> BertConfig:
    sizes = dict(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=40, vocab_size=100, max_position_embeddings=64)
    return BertConfig.of_family(family.model_type, **sizes, **({"embedding_size": 16} if family.model_type == "electra" else {}))


def _keys(family) -> tuple[set[str], set[str]]:
    """(checkpoint keys, our keys) of the family's table with every head it can have."""
    config = _tiny(family)
    theirs, ours = set(family.head_keys.values()) | set(family.derived), set()
    for heads in (Heads(mlm_head=True, pooler=config.pooler, nsp_head=config.pooler, discriminator=family.discriminator),
                  Heads(classifier=True, pooler=config.pooler), Heads(tagger=True)):
        table = family.table(config, heads)
        theirs |= set(table.values())
        ours |= set(table)
    return theirs, ours


def _segments(key: str) -> set[str]:
    """The parts of a tensor name that are names (with "_", a digit or a capital: "q_lin", "Wqkv"; not plain words
    such as "head" or "layers", which every family's prose and code may use)."""
    parts = {part.split("[")[0] for part in key.split(".")}
    return {part for part in parts if not part.isdigit() and not (part.isalpha() and part.islower())}


def _own_names() -> dict[str, set[str]]:
    """family -> the names only it has: its model_type, the parts of its tensor names no other family's (and none of
    ours) use, and its config.json fields that neither BERT's config.json nor BertConfig nor another family's has (nor
the shared helpers name: transformers' names common to several families, such as rope_parameters)."""
    keys = {name: _keys(family) for name, family in FAMILIES.items()}
    ours = set().union(*(_segments(key) for _, mine in keys.values() for key in mine))
    fields = {field.name for field in dataclasses.fields(BertConfig)}
    bert_fields = set(FAMILIES["bert"].write_config(_tiny(FAMILIES["bert"])))
    shared = set().union(*(_code_strings(ROOT / "bert" / "families" / helper) for helper in SHARED_HELPERS))
    written = {name: set(FAMILIES[name].write_config(_tiny(FAMILIES[name]))) - bert_fields - fields - shared for name in OTHERS}
    own = {}
    for name in OTHERS:
        mine = set().union(*(_segments(key) for key in keys[name][0]))
        others = set().union(*(_segments(key) for other, (theirs, _) in keys.items() if other != name for key in theirs))
        others_written = set().union(*(fields for other, fields in written.items() if other != name))
        own[name] = {name} | (mine - others - ours) | (written[name] - others_written)
    return own


def _code_strings(path: Path) -> set[str]:
    """Every string constant of the file's code (docstrings left out), and each of its dotted parts."""
    tree = ast.parse(path.read_text())
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    strings = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            strings |= {node.value} | set(node.value.split("."))
    return strings


def test_each_non_bert_family_has_names_of_its_own_to_look_for():
    own = _own_names()
    assert {"q_lin", "pre_classifier", "seq_classif_dropout"} <= own["distilbert"]
    assert {"albert_layer_groups", "embedding_hidden_mapping_in", "num_hidden_groups"} <= own["albert"]
    assert {"generator_predictions", "discriminator_predictions", "embeddings_project"} <= own["electra"]
    assert {"Wi", "tok_embeddings", "norm_eps", "classifier_activation"} <= own["modernbert"]  # Wqkv: NomicBERT's too
    assert {"rel_embeddings", "query_proj", "pos_att_type", "cls_dropout"} <= own["deberta-v2"]
    assert {"q_proj", "gate_proj", "input_layernorm", "embed_tokens", "num_key_value_heads", "rms_norm_eps"} <= own["eurobert"]
    assert {"emb_ln", "fc11", "fc12", "norm1", "norm2"} <= own["nomic_bert"]
    assert {"qkv_proj", "up_gate_proj", "attn_ln", "mlp_ln"} <= own["gte"]
    assert own["roberta"] == {"roberta"}  # its tensors and config.json fields are BERT's names
    assert own["xlm-roberta"] == {"xlm-roberta"} and own["camembert"] == {"camembert"}  # RoBERTa's names
    assert {"esm", "emb_layer_norm_after", "emb_layer_norm_before"} <= own["esm"]


def test_no_family_is_named_outside_its_module_and_the_registry():
    own = _own_names()
    found = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*.py")):
            relative = path.relative_to(ROOT).as_posix()
            if relative.startswith("bert/families/"):
                continue
            strings = _code_strings(path) - ALLOWED.get(relative, set())
            found += [(relative, name, sorted(strings & names)) for name, names in own.items() if strings & names]
    assert not found, "\n".join(f"{path}: {family}'s {names}" for path, family, names in found)


def test_the_family_modules_name_only_themselves():
    """A family's module holds no other non-BERT family's own names (the shared helpers, none at all)."""
    own = _own_names()
    folder = ROOT / "bert" / "families"
    modules = {inspect.getmodule(family.table).__file__: name for name, family in FAMILIES.items()}
    for path in sorted(folder.glob("*.py")):
        mine = modules.get(str(path))
        strings = _code_strings(path)
        if path.name == "registry.py":
            continue
        for name, names in own.items():
            if name != mine:
                assert not strings & names, f"{path.name} holds {name}'s {sorted(strings & names)}"


def test_the_model_file_reads_top_to_bottom_and_attention_has_two_paths():
    import bert.model as model

    lines = inspect.getsource(model).count("\n")
    assert lines <= 530, f"bert/model.py has {lines} lines"
    forward = inspect.getsource(model.PureSelfAttentionLayer.forward)
    assert forward.count("attn.fused_attention(") == 1 and forward.count("attn.weighted_values(") == 1
    branches = [line.strip() for line in forward.splitlines() if line.strip().startswith(("if ", "elif ", "else"))]
    assert branches == ["if self.rope_theta is not None:  # turn q and k by their positions (Su et al. 2021)",
                        "if self._watched():  # recorded: the scores and the pattern as tensors a hook can see",
                        "else:  # fused: nobody looks at the scores or the pattern, the same z from one kernel (the terms as a bias)"]
    for layer, allowed in ((model.SelfAttentionLayer, []), (model.BertLayer, []), (model.NormedResidualLayer, ["if self.gate is not None:"])):
        branches = [line.strip() for line in inspect.getsource(layer.forward).splitlines() if line.strip().startswith(("if ", "else"))]
        assert branches == allowed, f"{layer.__name__}.forward: {branches}"  # pre-norm or post-LN: one forward
    parameters = [list(inspect.signature(cls.forward).parameters) for cls in (model.BertLayer, model.SelfAttentionLayer)]
    assert parameters[0] == parameters[1] == ["self", "x", "attention_mask", "relative"]


@pytest.mark.parametrize("name", list(FAMILIES))
def test_a_family_is_its_module_and_one_registry_line(name):
    family = FAMILIES[name]
    module = inspect.getmodule(family.table)
    assert module.FAMILY is family and module.__name__.startswith("bert.families.")
    registry = (ROOT / "bert" / "families" / "registry.py").read_text()
    assert registry.count(f"    {module.__name__.rsplit('.', 1)[1]}.FAMILY,\n") == 1
    assert family.paper and family.special_tokens.keys() == {"cls", "sep", "mask", "pad", "unk"}
    assert (family.piece_marker in ("##", "Ġ", "▁")) != family.characters  # a vocabulary of characters has no marker
