"""Labels people give an SAE's features, kept with the run: `labels.json` beside `sae.safetensors`.

    labels = read_labels("out/sae", features=4096)       # {3123: "the suffix -ness", ...}; {} when there is none
    write_labels("out/sae", labels | {812: "barking"}, features=4096)
    set_label("out/sae", 812, "barking", features=4096)    # one label changed, the others kept ("" removes it)
    parse_labels(uploaded_bytes, 4096, "my_labels.json")  # the same checks on a file from elsewhere

The file is one JSON object, feature number (as a string) -> label: `{"812": "barking", "3123": "the suffix
-ness"}`. A label is plain text of at most MAX_LABEL characters; whoever shows it as HTML escapes it. Anything else
is refused with a FeatureLabelsError that names the problem. The SAEs shipped inside the package are never
written to (their folder is part of the installed package): their labels live elsewhere, e.g. in a downloaded file.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from ...errors import CheckpointError, quoted
from .shipped import is_shipped

LABELS_FILE = "labels.json"
MAX_LABEL = 200  # characters per label
MAX_BYTES = 2_000_000  # a labels file larger than this is refused unread
MAX_FEATURE_DIGITS = 9  # digits of a feature number at most (an SAE has thousands of features, not billions)


class FeatureLabelsError(CheckpointError):
    """A labels file (an SAE folder's labels.json, or one uploaded) that cannot be used, or a label that cannot be
    written: not JSON, not an object of feature numbers to text, a feature outside the SAE, a label too long, or a
    folder that may not be written to."""


def parse_labels(data: str | bytes, features: int, name: str = LABELS_FILE) -> dict[int, str]:
    """{feature: label} from a labels file's contents; empty labels are dropped. FeatureLabelsError names `name`
    and what is wrong."""
    if len(data) > MAX_BYTES:
        raise FeatureLabelsError(f"{name} is {len(data):,} bytes; a labels file may have at most {MAX_BYTES:,}")
    try:
        raw = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise FeatureLabelsError(f"{name} is not JSON (UTF-8): {error}") from error
    except RecursionError:  # arrays or objects nested thousands deep
        raise FeatureLabelsError(f"{name} is nested too deeply; a labels file is one flat object") from None
    except ValueError:  # a number with more digits than Python converts (sys.get_int_max_str_digits)
        raise FeatureLabelsError(f"{name} holds a number too long to read; a labels file holds only text labels") from None
    if not isinstance(raw, dict):
        kind = {list: "an array", str: "a string", bool: "true or false", type(None): "null"}.get(type(raw), "a number")
        raise FeatureLabelsError(f"{name} must be a JSON object of feature number to label, like "
                                 f'{{"812": "barking"}}, not {kind}')
    return check_labels({_feature_number(key, name): value for key, value in raw.items()}, features, name)


def check_labels(labels: dict[int, str], features: int, name: str = LABELS_FILE) -> dict[int, str]:
    """The labels, checked (features in 0 .. features - 1, text of at most MAX_LABEL characters), blank ones
    dropped, in feature order."""
    kept = {}
    for feature, label in sorted(labels.items()):
        if not 0 <= feature < features:
            raise FeatureLabelsError(f"{name}: feature {feature} is outside this SAE's 0 .. {features - 1}")
        if not isinstance(label, str):
            raise FeatureLabelsError(f"{name}: the label of feature {feature} is {quoted(label)}, not text (a string)")
        if len(label) > MAX_LABEL:
            raise FeatureLabelsError(f"{name}: the label of feature {feature} is {len(label)} characters long; "
                                     f"at most {MAX_LABEL}")
        if label.strip():
            kept[feature] = label.strip()
    return kept


def read_labels(folder: str | Path, features: int) -> dict[int, str]:
    """The labels kept with the SAE in `folder` ({} when it has no labels.json)."""
    path = Path(folder) / LABELS_FILE
    if not path.is_file():
        return {}
    return parse_labels(path.read_bytes(), features, f"{LABELS_FILE} of {Path(folder).name}")


def labels_json(labels: dict[int, str]) -> str:
    """The labels file's text: feature numbers as keys, in order."""
    return json.dumps({str(feature): label for feature, label in sorted(labels.items())}, indent=1, ensure_ascii=False) + "\n"


def write_labels(folder: str | Path, labels: dict[int, str], features: int) -> Path:
    """Replace the SAE's labels.json with `labels` (checked; blank ones dropped). Refuses an SAE shipped inside
    the package. The file is written whole or not at all."""
    folder = Path(folder)
    if is_shipped(folder):
        raise FeatureLabelsError(f"{folder.name} is shipped inside the package and is not written to: keep its labels "
                                 "in a file of your own (the app's download button), or label a copy of its folder")
    text = labels_json(check_labels(labels, features))
    path = folder / LABELS_FILE
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return path


def set_label(folder: str | Path, feature: int, text: str, features: int) -> Path:
    """Keep `text` as the label of `feature` in the folder's labels.json (blank text removes it); the others stay."""
    labels = {number: label for number, label in read_labels(folder, features).items() if number != feature}
    return write_labels(folder, labels | {feature: text}, features)


def _feature_number(key: str, name: str) -> int:
    if not (isinstance(key, str) and key.isascii() and key.isdigit() and len(key) <= MAX_FEATURE_DIGITS):
        raise FeatureLabelsError(f"{name}: {quoted(key)} is not a feature number; the keys are whole numbers like \"812\"")
    return int(key)
