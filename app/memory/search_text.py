"""The searchable form of memory text and of a question, the same for both
backends: the database only stems words and looks tokens up.

Text is normalised (NFKC and case folding), so composed and decomposed
accents, full-width letters and letter case all meet. Scripts written with
spaces (Latin, Cyrillic, Greek, ...) are kept as whole words, stemmed by the
database: a part of a word never matches (thon does not find Python). Scripts
written without spaces (Han, Kana, Thai, ...) and Hangul, whose words carry
their particles (김민수는), are turned into overlapping pairs of characters,
so any run of two or more characters matches inside a longer one (太郎 in
私の名前は太郎です). A run's last character is kept alone as well: with a
prefix match on the pairs, a one-character question (猫) finds every run that
holds it. A character here is a letter with its combining marks (Thai vowel
and tone marks stay on their consonant).

Migration 0006 holds a frozen copy of `search_text` for its backfill: a
change to the indexed form needs a migration that rebuilds the index.
"""

import functools
import itertools
import re
import unicodedata
from dataclasses import dataclass

from ..sessions.domain import MemoryRecord

# Distinct terms a question is searched with, in the order written; the rest
# are ignored. A 2,000-character question in Chinese would make ~2,000 pairs,
# each a lookup; 64 pairs cover a 65-character CJK question.
MAX_QUERY_TERMS = 64

# Distinct pairs indexed per memory. PostgreSQL refuses a tsvector whose
# distinct lexemes take more than 1 MiB; 50,000 pairs of at most 8 bytes stay
# far below it (a 4 MiB CJK text has some 200,000).
MAX_INDEXED_GRAMS = 50_000

# Blocks of the scripts written without spaces, and Hangul (see above).
_UNSPACED_BLOCKS = (
    "\u0e00-\u0eff"  # Thai, Lao
    "\u1000-\u109f"  # Myanmar
    "\u1100-\u11ff"  # Hangul Jamo
    "\u1780-\u17ff"  # Khmer
    "\u2e80-\u2fdf"  # CJK and Kangxi radicals
    "\u3005-\u3007\u3021-\u3029\u3038-\u303c"  # iteration mark, closing mark, ideographic numbers
    "\u3040-\u30ff"  # Hiragana, Katakana (with ー)
    "\u3100-\u312f\u3130-\u318f"  # Bopomofo, Hangul compatibility Jamo
    "\u31a0-\u31bf\u31f0-\u31ff"  # Bopomofo extended, Katakana extension
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK ideographs, extension A
    "\ua960-\ua97f\uac00-\ud7ff"  # Hangul Jamo extended, syllables
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\uff66-\uff9f"  # half-width Katakana (NFKC makes them full-width)
    "\U00020000-\U0003134f"  # CJK ideographs, extensions B to G
)


def _ranges(codepoints: list[int]) -> str:
    """A regular-expression class body for the code points, as ranges."""
    parts: list[str] = []
    start = previous = codepoints[0]
    for codepoint in [*codepoints[1:], -1]:
        if codepoint != previous + 1:
            parts.append(f"{chr(start)}-{chr(previous)}" if previous > start else chr(start))
            start = codepoint
        previous = codepoint
    return "".join(parts)


@functools.cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The token and character patterns, built at first use: their classes
    come from a pass over every code point (a fraction of a second to a
    second of CPU, which every process start paid at import)."""
    # Combining marks (category M), which Python's \w does not include. Every
    # mark is below U+20000 but the variation selectors supplement.
    marks = _ranges(
        [c for c in range(0x20000) if unicodedata.category(chr(c)).startswith("M")]
        + list(range(0xE0100, 0xE01F0))
    )
    # The letters, marks and digits of those blocks (not their punctuation: ・ ။ ๚).
    unspaced = _ranges(
        [
            c
            for first, last in re.findall("(.)-(.)", _UNSPACED_BLOCKS)
            for c in range(ord(first), ord(last) + 1)
            if unicodedata.category(chr(c))[0] in "LMN"
        ]
    )
    # A run of an unspaced script, or a word: letters and digits (not "_", which
    # FTS5 would split on) with their marks.
    token = re.compile(f"(?P<run>[{unspaced}]+)|(?:[^\\W_{unspaced}]|[{marks}])+")
    character = re.compile(f"[{marks}]*[^{marks}][{marks}]*")
    return token, character


# PostgreSQL's English stop words (tsearch_data/english.stop): they are not
# searched for on either backend, so that SQLite, which indexes them, ranks
# like PostgreSQL, which drops them.
_STOP_WORDS_TEXT = (
    "i me my myself we our ours ourselves you your yours yourself yourselves he him his "
    "himself she her hers herself it its itself they them their theirs themselves what "
    "which who whom this that these those am is are was were be been being have has had "
    "having do does did doing a an the and but if or because as until while of at by for "
    "with about against between into through during before after above below to from up "
    "down in out on off over under again further then once here there when where why how "
    "all any both each few more most other some such no nor not only own same so than too "
    "very s t can will just don should now"
)
STOP_WORDS = frozenset(_STOP_WORDS_TEXT.split())


def normalize(text: str) -> str:
    """NFKC with case folding (folding can undo NFKC, hence twice)."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", text).casefold())


@dataclass(frozen=True)
class SearchText:
    """What a memory is indexed by: `words` (stemmed by the database) and
    `grams` (character pairs, looked up as they are), each space-separated."""

    words: str
    grams: str


@dataclass(frozen=True)
class QueryTerms:
    """A question's terms: words to stem, pairs to find as they are, and
    single characters to find as the start of a pair."""

    words: tuple[str, ...]
    grams: tuple[str, ...]
    prefixes: tuple[str, ...]

    def __bool__(self) -> bool:
        return bool(self.words or self.grams or self.prefixes)


def _pairs(characters: list[str]) -> list[str]:
    return [first + second for first, second in itertools.pairwise(characters)]


# An ASCII text's tokens: it has no marks and no unspaced script, its
# letters and digits make its words, and its normal form is its lower case.
_ASCII_WORD = re.compile("[a-z0-9]+")


def search_text(text: str) -> SearchText:
    """The indexed form of a memory's text."""
    if text.isascii():
        # The same words as below, much faster (the token pattern's classes
        # are long): most memories are ASCII (docs/performance.md, "SQLite
        # ingest, fourth round").
        return SearchText(words=" ".join(_ASCII_WORD.findall(text.lower())), grams="")
    words: list[str] = []
    grams: list[str] = []
    distinct: set[str] = set()
    for match in _patterns()[0].finditer(normalize(text)):
        run = match.group("run")
        if run is None:
            words.append(match.group())
            continue
        characters = _patterns()[1].findall(run)
        if not characters:
            continue
        for gram in [*_pairs(characters), characters[-1]]:
            if gram not in distinct:
                if len(distinct) == MAX_INDEXED_GRAMS:
                    continue
                distinct.add(gram)
            grams.append(gram)
    return SearchText(words=" ".join(words), grams=" ".join(grams))


def query_terms(question: str) -> QueryTerms:
    """The terms of a question, distinct, in the order written, at most
    MAX_QUERY_TERMS; English stop words are left out."""
    terms: dict[tuple[str, str], None] = {}
    for match in _patterns()[0].finditer(normalize(question)):
        run = match.group("run")
        if run is None:
            if match.group() not in STOP_WORDS:
                terms[("word", match.group())] = None
            continue
        characters = _patterns()[1].findall(run)
        if len(characters) == 1:
            terms[("prefix", characters[0])] = None
        terms.update(dict.fromkeys(("gram", pair) for pair in _pairs(characters)))
    kept = list(terms)[:MAX_QUERY_TERMS]
    return QueryTerms(
        words=tuple(term for kind, term in kept if kind == "word"),
        grams=tuple(term for kind, term in kept if kind == "gram"),
        prefixes=tuple(term for kind, term in kept if kind == "prefix"),
    )


def indexed_text_of(record: MemoryRecord) -> str:
    """The text a memory's keyword index is built from (its own, unless
    encryption at rest gave another: app.sessions.domain.MemoryRecord)."""
    return record.text if record.indexed_text is None else record.indexed_text
