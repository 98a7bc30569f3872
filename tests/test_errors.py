"""Every error the package raises on purpose is a BertError, and also the builtin type callers used to catch."""
from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

import bert
from bert import errors
from bert.config import BertConfig

PACKAGE = Path(bert.__file__).parent
BUILTINS = {name for name, value in vars(builtins).items() if isinstance(value, type) and issubclass(value, BaseException)}
# raised on purpose but never seen by callers: argparse turns this one into a usage message
ALLOWED = {"ArgumentTypeError"}


def raised_names(path: Path) -> list[tuple[int, str]]:
    """(line, class name) of every `raise X(...)` / `raise X` in a file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            name = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
            if name is not None:
                found.append((node.lineno, name))
    return found


def test_no_builtin_exception_is_raised_bare_in_the_package():
    bare = [
        f"{path.relative_to(PACKAGE.parent)}:{line} raises {name}"
        for path in sorted(PACKAGE.rglob("*.py"))
        for line, name in raised_names(path)
        if name in BUILTINS and name not in ALLOWED
    ]
    assert bare == []


def test_every_error_class_of_the_package_is_a_bert_error():
    classes = [value for value in vars(errors).values() if isinstance(value, type) and issubclass(value, Exception)]
    assert len(classes) > 10 and all(issubclass(c, errors.BertError) for c in classes)


@pytest.mark.parametrize("fields", [dict(hidden_size=10, num_heads=3), dict(activation="tanh"), dict(family="gpt2")])
def test_a_bad_config_is_a_config_error_and_still_a_value_error(fields):
    with pytest.raises(errors.ConfigError) as raised:
        BertConfig(**fields)
    assert isinstance(raised.value, ValueError) and isinstance(raised.value, errors.BertError)


def test_a_hugging_face_config_we_cannot_run_names_what():
    with pytest.raises(errors.ConfigError, match="position_embedding_type 'relative_key'"):
        BertConfig.from_hf_dict({"model_type": "bert", "position_embedding_type": "relative_key"})
