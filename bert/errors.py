"""Typed errors. Each message says what went wrong and what to do next."""


class BertError(Exception):
    """Base class for every error this package raises on purpose."""


class InvalidInputError(BertError, ValueError):
    """An argument that cannot be used: token ids, segment ids or a mask the model cannot take (wrong shape, dtype
    or range), an array of the wrong shape for an analysis, an option outside its choices."""


class InputTooLongError(InvalidInputError):
    """More tokens than the model has positions for."""

    def __init__(self, num_tokens: int, max_tokens: int):
        self.num_tokens, self.max_tokens = num_tokens, max_tokens
        super().__init__(
            f"the input is {num_tokens} tokens long but the model has only {max_tokens} positions; "
            f"shorten the text or pass truncate=True to cut it explicitly"
        )


class MissingHeadError(InvalidInputError):
    """An output head the model does not have: output="classifier" without a classifier, "nsp" without an NSP head..."""


class UnknownHookError(BertError, KeyError):
    """A hook name that the model does not have."""

    def __str__(self):  # KeyError would repr() the message
        return self.args[0]


class ConfigError(BertError, ValueError):
    """A model configuration that cannot be built or run (our BertConfig, or a Hugging Face config.json)."""


class DataFileError(BertError, ValueError):
    """A training or evaluation file that cannot be used: missing, empty, a bad row (named by file and line)."""


class CheckpointError(BertError):
    """A checkpoint that cannot be loaded: missing, unexpected, mis-shaped, corrupt or unsafe."""


class ModelNotFoundError(BertError, FileNotFoundError):
    """A model source that names nothing we can find offline."""


class DownloadError(ModelNotFoundError):
    """A hub model that could not be downloaded. `reason`: "offline", "unknown" (no such model on the hub),
    "not_bert" (the repository is not a BERT this project can load) or "failed" (anything else)."""

    def __init__(self, reason: str, message: str):
        self.reason = reason
        super().__init__(message)


class CorpusIndexError(BertError):
    """A saved corpus index that cannot be read: missing files, mismatched parts, an unknown format."""


class StaleIndexError(CorpusIndexError):
    """A saved corpus index built with another model (other config or weights) than the one given."""


class TreebankError(DataFileError):
    """A treebank or labelled-column file that cannot be used: not UTF-8, empty, too large, or no usable sentence.
    `line` is the 1-based line the problem is on (None for the whole file)."""

    def __init__(self, message: str, line: int | None = None):
        self.line = line
        super().__init__(message)


QUOTE_LIMIT = 60  # characters of a value a message quotes at most


def shortened(text: str, limit: int = QUOTE_LIMIT) -> str:
    """`text` cut to `limit` characters, with its full length said when it was longer."""
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def quoted(value, limit: int = QUOTE_LIMIT) -> str:
    """A value as an error message quotes it: its repr, shortened (a list or mapping by its kind only), so a
    message stays one short line whatever a file or a link held."""
    if isinstance(value, (list, dict, tuple, set)):
        return f"a {type(value).__name__}"
    return shortened(repr(value), limit)


class StoppedError(BertError):
    """A computation stopped before its end because whoever asked for it no longer needs it (bert/stopping.py)."""


class NoPositionTermsError(InvalidInputError):
    """An analysis of DeBERTa's content and position score terms (bert/analysis/attention/score_terms.py) asked of a
    model whose attention has no such terms: BERT adds absolute positions to its input, ModernBERT rotates q and k."""
