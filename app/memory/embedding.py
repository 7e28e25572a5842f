"""Embedders: what turns memory text into vectors for search by meaning.

`wordllama` (the default) is a static word-embedding model that installs
with the server (its 16 MB weights and tokenizer are inside the PyPI
wheel): nothing is downloaded, it is loaded once per process on first use,
and it is cheap enough to embed inline (docs/performance.md, "Smaller
memory figures behind the code"). `openai` calls an
OpenAI-compatible `POST {url}/embeddings` (OpenAI, Ollama, vLLM, TEI,
LiteLLM). `none` turns search by meaning off.

Every vector is stored with its embedder's model id, and a ranking only
ever compares vectors of the current id. Answers that are not a vector per
text, of the expected length, of finite numbers, are refused
(`EmbedderFailed`) and logged without the text.
"""

import asyncio
import itertools
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import httpx
import numpy as np
import numpy.typing as npt

from ..core.config import MAX_EMBEDDING_DIMENSIONS

if TYPE_CHECKING:
    from ..core.config import Settings

logger = logging.getLogger("session_state")

Vectors = npt.NDArray[np.float32]

# A memory's text is embedded from its first characters (a 4 MiB text would
# cost seconds and say little more than its opening); a question is bounded
# by the route (2,000 characters).
MAX_EMBEDDED_CHARACTERS = 8_000
MAX_EMBEDDED_TOKENS = 2_048
# More texts than this are embedded off the event loop (up to this many
# short texts take only milliseconds).
INLINE_TEXTS = 64


class EmbedderFailed(Exception):
    """The embedder could not answer, or answered what cannot be used. The
    message never holds the texts. `refused`: it answered, and what it
    answered may be because of one of the texts (a 4xx other than auth,
    not found and rate limits, or an unusable answer), not because it is
    down: the backlog then looks for the text (app.memory.embedding_backlog)."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        super().__init__(message)
        self.refused = refused


# Answers that say the embedder is unusable now, whatever the texts.
_NOT_ABOUT_THE_TEXTS = frozenset({401, 403, 404, 408, 429})


class Embedder(Protocol):
    # Stored with every vector: vectors of another id are never compared.
    model_id: str
    # Cheap enough to run inside a request (a write embeds before storing,
    # with `embed_inline` once `prepare` has run).
    inline: bool

    async def prepare(self) -> None:
        """Loads what the embedder needs (once per process)."""
        ...

    def embed_inline(self, texts: Sequence[str]) -> Vectors:
        """`embed`, synchronously: for an inline embedder only."""
        ...

    async def embed(self, texts: Sequence[str]) -> Vectors:
        """One unit-length float32 vector per text, in order."""
        ...

    async def close(self) -> None: ...


def checked_vectors(vectors: object, count: int, dimensions: int | None, *, source: str) -> Vectors:
    """`vectors` as a (count, dimensions) float32 array of unit rows, or
    EmbedderFailed naming what is wrong (never the texts). A zero vector
    (a text of no known token) stays zero: it is similar to nothing."""
    try:
        array = np.asarray(vectors, dtype=np.float64)
    except (TypeError, ValueError):
        raise EmbedderFailed(
            f"{source} answered something that is not a list of vectors", refused=True
        ) from None
    if array.ndim != 2 or array.shape[0] != count:
        got = array.shape[0] if array.ndim >= 1 else 0
        raise EmbedderFailed(f"{source} answered {got} vectors for {count} texts", refused=True)
    if array.shape[1] == 0 or array.shape[1] > MAX_EMBEDDING_DIMENSIONS:
        raise EmbedderFailed(
            f"{source} answered vectors of {array.shape[1]} dimensions", refused=True
        )
    if dimensions is not None and array.shape[1] != dimensions:
        raise EmbedderFailed(
            f"{source} answered vectors of {array.shape[1]} dimensions, not {dimensions}",
            refused=True,
        )
    if not np.isfinite(array).all():
        raise EmbedderFailed(f"{source} answered a vector holding NaN or infinity", refused=True)
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    unit: Vectors = np.divide(array, norms, out=np.zeros_like(array), where=norms > 0).astype(
        np.float32
    )
    return unit


def embedded_text(text: str) -> str:
    return text[:MAX_EMBEDDED_CHARACTERS]


# -- the local model ---------------------------------------------------------

WORDLLAMA_MODEL = "l2_supercat_256"
_wordllama_lock = threading.Lock()
_wordllama: "_WordLlamaModel | None" = None


@dataclass(frozen=True)
class _WordLlamaModel:
    table: Vectors  # one row per token
    tokenizer: Any  # tokenizers.Tokenizer
    tokens: "_TokenCache"


# The model's tokenizer (Llama's) has no pre-tokenizer: it writes a space as
# "▁", puts one before the text, and runs BPE over the whole text as one
# word, so its cache of words never hits and every text is tokenized in
# full, which costs more than storing it (docs/performance.md, "Smaller
# memory figures behind the code"). No token of its vocabulary holds "▁"
# after another character, so no merge crosses the start of a word: the ids
# of a text are the ids of its pieces (a run of "▁" and the characters up to
# the next "▁"), each tokenized once and remembered. tests/test_memory_semantic.py checks the
# ids are the tokenizer's own.
_PIECE = re.compile("\u2581+[^\u2581]*")
_CACHED_PIECES = 50_000
_CACHED_PIECE_CHARACTERS = 64


class _TokenCache:
    def __init__(self, tokenizer: Any) -> None:
        from tokenizers import Tokenizer

        # The same model without the text-level steps: the normalizer is
        # applied here, truncation after joining the pieces.
        self.pieces = Tokenizer.from_str(tokenizer.to_str())
        self.pieces.normalizer = None
        self.pieces.no_truncation()
        self.pieces.no_padding()
        self.known: dict[str, list[int]] = {}

    def ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, as the tokenizer's encode gives them
        (no special tokens, at most MAX_EMBEDDED_TOKENS)."""
        split = [
            _PIECE.findall("\u2581" + text.replace(" ", "\u2581")) if text else [] for text in texts
        ]
        # A lookup table of this call's own: another thread may clear the cache.
        found: dict[str, list[int]] = {}
        missing: list[str] = []
        for pieces in split:
            for piece in pieces:
                if piece not in found:
                    ids = self.known.get(piece)
                    if ids is None:
                        missing.append(piece)
                        found[piece] = []
                    else:
                        found[piece] = ids
        if missing:
            encode = getattr(self.pieces, "encode_batch_fast", self.pieces.encode_batch)
            for piece, encoding in zip(
                missing, encode(missing, add_special_tokens=False), strict=True
            ):
                found[piece] = encoding.ids
                if len(piece) <= _CACHED_PIECE_CHARACTERS:
                    if len(self.known) >= _CACHED_PIECES:
                        self.known.clear()
                    self.known[piece] = encoding.ids
        return [
            list(
                itertools.islice(
                    itertools.chain.from_iterable(found[piece] for piece in pieces),
                    MAX_EMBEDDED_TOKENS,
                )
            )
            for pieces in split
        ]


def _load_wordllama() -> _WordLlamaModel:
    """The model of the installed `wordllama` package, loaded once per
    process. Its loader looks for the bundled tokenizer beside its cache
    folder and would then download it: pointed at the package's own folder,
    with downloads off, it finds both files offline."""
    global _wordllama
    with _wordllama_lock:
        if _wordllama is None:
            root = logging.getLogger()
            handlers, level = list(root.handlers), root.level
            # Imported on first use (slow, and large); it ships no type hints.
            import wordllama  # type: ignore[import-untyped]

            # wordllama calls logging.basicConfig at import; the service owns logging.
            root.handlers[:] = handlers
            root.setLevel(level)
            folder = Path(wordllama.__file__).parent
            model = wordllama.WordLlama.load(cache_dir=folder, disable_download=True)
            tokenizer = model.tokenizer
            tokenizer.no_padding()
            tokenizer.enable_truncation(max_length=MAX_EMBEDDED_TOKENS)
            _wordllama = _WordLlamaModel(
                np.ascontiguousarray(model.embedding), tokenizer, _TokenCache(tokenizer)
            )
        return _wordllama


def wordllama_vectors(texts: Sequence[str]) -> Vectors:
    """Mean of the texts' token vectors (as WordLlama's `embed`), without
    padding every text of a batch to the longest one."""
    model = _load_wordllama()
    if not texts:
        return np.zeros((0, model.table.shape[1]), dtype=np.float32)
    token_ids = model.tokens.ids([embedded_text(text) for text in texts])
    lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
    ids = np.fromiter(
        itertools.chain.from_iterable(token_ids), dtype=np.int64, count=int(lengths.sum())
    )
    np.clip(ids, 0, model.table.shape[0] - 1, out=ids)
    sums = np.zeros((len(texts), model.table.shape[1]), dtype=np.float32)
    held = lengths > 0
    if held.any():
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
        sums[held] = np.add.reduceat(model.table[ids], starts[held], axis=0)
    return checked_vectors(sums, len(texts), None, source="wordllama")


class WordLlamaEmbedder:
    model_id = f"wordllama/{WORDLLAMA_MODEL}"
    inline = True

    async def prepare(self) -> None:
        if _wordllama is None:
            # The first load reads files for half a second: not on the loop.
            await asyncio.to_thread(_load_wordllama)

    def embed_inline(self, texts: Sequence[str]) -> Vectors:
        return wordllama_vectors(texts)

    async def embed(self, texts: Sequence[str]) -> Vectors:
        await self.prepare()
        if len(texts) > INLINE_TEXTS:
            return await asyncio.to_thread(wordllama_vectors, texts)
        return wordllama_vectors(texts)

    async def close(self) -> None:
        return None


# -- an OpenAI-compatible endpoint -------------------------------------------


class RemoteEmbedder:
    """`POST {url}/embeddings` with `{"model", "input": [...], "dimensions"}`,
    batches of `batch_size` texts, a timeout per call. Never called inside a
    write: memories wait in the backlog (app.memory.embedding_backlog)."""

    inline = False

    def __init__(
        self,
        url: str,
        model: str,
        *,
        api_key: str | None,
        dimensions: int | None,
        batch_size: int,
        timeout_seconds: float,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/") + "/embeddings"
        self.model = model
        self.dimensions = dimensions
        self.batch_size = batch_size
        self.model_id = f"openai/{model}" + (f"@{dimensions}" if dimensions else "")
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.http = httpx.AsyncClient(headers=headers, timeout=timeout_seconds, transport=transport)

    async def prepare(self) -> None:
        return None

    def embed_inline(self, texts: Sequence[str]) -> Vectors:
        raise EmbedderFailed("a remote embedder is not called inside a request")

    async def embed(self, texts: Sequence[str]) -> Vectors:
        parts = [
            await self._embed_batch(texts[start : start + self.batch_size])
            for start in range(0, len(texts), self.batch_size)
        ]
        if not parts:
            return np.zeros((0, self.dimensions or 1), dtype=np.float32)
        if len({part.shape[1] for part in parts}) > 1:
            raise EmbedderFailed("the embedder answered vectors of different lengths")
        return np.concatenate(parts)

    async def _embed_batch(self, texts: Sequence[str]) -> Vectors:
        body: dict[str, Any] = {
            "model": self.model,
            "input": [embedded_text(text) for text in texts],
            "encoding_format": "float",
        }
        if self.dimensions:
            body["dimensions"] = self.dimensions
        try:
            response = await self.http.post(self.url, json=body)
        except httpx.TimeoutException:
            raise EmbedderFailed("the embedder did not answer in time") from None
        except httpx.HTTPError as error:
            raise EmbedderFailed(f"the embedder is unreachable ({type(error).__name__})") from None
        if response.status_code != 200:
            refused = 400 <= response.status_code < 500
            raise EmbedderFailed(
                f"the embedder answered HTTP {response.status_code}",
                refused=refused and response.status_code not in _NOT_ABOUT_THE_TEXTS,
            )
        try:
            data = response.json()["data"]
            ordered = sorted(data, key=lambda item: item["index"])
            vectors = [item["embedding"] for item in ordered]
        except (ValueError, KeyError, TypeError):
            raise EmbedderFailed(
                "the embedder's answer is not an embeddings list", refused=True
            ) from None
        if len(vectors) != len(texts):
            raise EmbedderFailed(
                f"the embedder answered {len(vectors)} vectors for {len(texts)}", refused=True
            )
        return checked_vectors(vectors, len(texts), self.dimensions, source="the embedder")

    async def close(self) -> None:
        await self.http.aclose()


def open_embedder(settings: "Settings") -> Embedder | None:
    """The configured embedder; None for `none`."""
    if settings.memory_embedder == "none":
        return None
    if settings.memory_embedder == "wordllama":
        return WordLlamaEmbedder()
    assert settings.memory_embedder_url is not None  # checked by Settings
    return RemoteEmbedder(
        settings.memory_embedder_url,
        settings.memory_embedder_model,
        api_key=settings.memory_embedder_api_key_value(),
        dimensions=settings.memory_embedder_dimensions,
        batch_size=settings.memory_embedder_batch_size,
        timeout_seconds=settings.memory_embedder_timeout_seconds,
    )


# -- stored form and ranking --------------------------------------------------


@dataclass(frozen=True)
class StoredVector:
    """A vector as stored: int8 components (the unit vector scaled so its
    largest component is 127: cosine does not depend on scale) and its sign
    bits, packed (the first pass compares them by Hamming distance)."""

    components: bytes
    bits: bytes


def stored_vector(vector: npt.NDArray[np.float32]) -> StoredVector:
    peak = float(np.abs(vector).max()) if vector.size else 0.0
    scale = 127.0 / peak if peak > 0 else 0.0
    components = np.round(vector * scale).astype(np.int8)
    return StoredVector(components.tobytes(), np.packbits(vector > 0).tobytes())


def stored_vectors(vectors: Vectors) -> list[StoredVector]:
    """stored_vector of each row, computed for all rows at once."""
    if len(vectors) == 0:
        return []
    peaks = np.abs(vectors).max(axis=1, keepdims=True)
    scales = np.divide(127.0, peaks, out=np.zeros_like(peaks), where=peaks > 0)
    components = np.round(vectors * scales).astype(np.int8)
    bits = np.packbits(vectors > 0, axis=1)
    return [
        StoredVector(row.tobytes(), row_bits.tobytes())
        for row, row_bits in zip(components, bits, strict=True)
    ]


def components_of(stored: Sequence[bytes]) -> Vectors:
    """Unit float32 rows of stored int8 components (all of one length)."""
    array = np.frombuffer(b"".join(stored), dtype=np.int8).reshape(len(stored), -1)
    as_float = array.astype(np.float32)
    norms = np.linalg.norm(as_float, axis=1, keepdims=True)
    unit: Vectors = np.divide(as_float, norms, out=np.zeros_like(as_float), where=norms > 0)
    return unit


def _distances(rows: npt.NDArray[np.uint8], bits: bytes) -> npt.NDArray[np.int64]:
    question = np.frombuffer(bits, dtype=np.uint8)
    if len(bits) % 8 == 0:
        # Eight bytes at a time: a quarter of the XORs and counts.
        rows, question = rows.view(np.uint64), question.view(np.uint64)
    differing = np.bitwise_xor(rows, question)
    distances: npt.NDArray[np.int64] = np.bitwise_count(differing).sum(axis=1, dtype=np.int64)
    return distances


def nearest_rows(
    ids: npt.NDArray[np.int64], rows: npt.NDArray[np.uint8], bits: bytes, keep: int
) -> list[int]:
    """The `keep` ids of `ids` (one per row of `rows`, each the sign bits of
    bits' length, packed) nearest `bits`: by Hamming distance, ties by id,
    nearest first."""
    if len(ids) == 0:
        return []
    distances = _distances(np.ascontiguousarray(rows), bits)
    if len(distances) > keep:
        # Only rows at most as far as the keep-th nearest can be kept.
        farthest = np.partition(distances, keep - 1)[keep - 1]
        near = np.flatnonzero(distances <= farthest)
        ids, distances = ids[near], distances[near]
    chosen: list[int] = ids[np.lexsort((ids, distances))[:keep]].tolist()
    return chosen
