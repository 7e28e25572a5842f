"""Session labels and the list filters that read them: the one rule, read by
the request bodies, the query parameters, the import and the OpenAPI document.

Labels follow Google Cloud's label rules, so that they copy to and from
Vertex AI Agent Engine sessions unchanged: at most 64 of them, keys of 1 to
63 characters (lowercase letter first, then lowercase letters, digits, `_`
and `-`), values of 0 to 63 of those characters. (GCP also allows
international lowercase letters; here only ASCII ones, which every store
and every index compares byte for byte.)
"""

import re
from dataclasses import dataclass, field
from typing import Any

from ..core.errors import FieldError

Labels = dict[str, str]

MAX_LABELS = 64
# Label filters one list request may give (label=... repeated).
MAX_LABEL_FILTERS = 16
LABEL_KEY_PATTERN = "^[a-z][a-z0-9_-]{0,62}$"
LABEL_VALUE_PATTERN = "^[a-z0-9_-]{0,63}$"
LABEL_SYNTAX = (
    "keys: 1 to 63 characters, a lowercase letter then lowercase letters, digits, '_' "
    "or '-'; values: 0 to 63 of those characters"
)
LABEL_RULE = f"at most {MAX_LABELS} labels; {LABEL_SYNTAX}"

# fullmatch, not match: `$` also matches before a final newline.
_KEY = re.compile(LABEL_KEY_PATTERN)
_VALUE = re.compile(LABEL_VALUE_PATTERN)


def _shown(text: str) -> str:
    # A hostile key may be megabytes long: name it, but not all of it.
    return repr(text if len(text) <= 80 else text[:77] + "...")


def labels_problem(labels: Any) -> FieldError | None:
    """Why `labels` is not a label map, located at the bad label; None when
    it is one."""
    if not isinstance(labels, dict):
        return FieldError([], "labels must be an object of strings")
    if len(labels) > MAX_LABELS:
        return FieldError([], f"{len(labels)} labels; at most {MAX_LABELS}")
    for key, value in labels.items():
        if not _KEY.fullmatch(key):
            return FieldError(
                [key],
                f"label key {_shown(key)} must be 1 to 63 characters: a lowercase letter, "
                "then lowercase letters, digits, '_' or '-'",
            )
        if not isinstance(value, str) or not _VALUE.fullmatch(value):
            return FieldError(
                [key],
                f"label {_shown(key)}: its value must be a string of 0 to 63 lowercase "
                "letters, digits, '_' or '-'",
            )
    return None


@dataclass(frozen=True)
class LabelFilter:
    """The label filters of a list: sessions holding every pair of `equal`
    and every key of `present`."""

    equal: Labels = field(default_factory=dict)
    present: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not self.equal and not self.present


def parse_label_filters(items: list[str]) -> LabelFilter | FieldError:
    """`label=key:value` (has the label with that value) and `label=key` (has
    the key), each repeatable: all must match. A FieldError names the bad one."""
    if len(items) > MAX_LABEL_FILTERS:
        return FieldError(
            ["query", "label"], f"{len(items)} label filters; at most {MAX_LABEL_FILTERS}"
        )
    equal: Labels = {}
    present: set[str] = set()
    for item in items:
        key, colon, value = item.partition(":")
        if not _KEY.fullmatch(key) or (colon and not _VALUE.fullmatch(value)):
            return FieldError(
                ["query", "label"],
                f"label filter {_shown(item)} is not key or key:value ({LABEL_SYNTAX})",
            )
        if colon:
            if equal.get(key, value) != value:
                # Two values for one key: nothing can match; say so rather
                # than answer an empty list.
                return FieldError(
                    ["query", "label"], f"label {_shown(key)} is given two different values"
                )
            equal[key] = value
        else:
            present.add(key)
    return LabelFilter(equal, tuple(sorted(present - equal.keys())))
