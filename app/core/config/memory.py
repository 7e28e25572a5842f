"""Long-term memory's search by meaning: what embeds the memories and how
alike a memory must be to be found."""

import re
from pathlib import Path
from typing import Literal, Self

from pydantic import Field, SecretStr, field_validator, model_validator

from .group import SettingGroup

# Search by meaning (app.memory.embedding): OpenAI's largest model has 3,072 dimensions.
MAX_EMBEDDING_DIMENSIONS = 8192
# A memory found by meaning alone needs both: a cosine of at least
# DEFAULT_MIN_SIMILARITY (a floor whatever the script), and a relevance
# (app.memory.relevance: the cosine less how near either text sits to
# unrelated text) of at least DEFAULT_RELEVANCE_MARGIN: wordllama scores
# unrelated texts of one script above many a paraphrase, and the relevance
# tells them apart (docs/memory.md, "Relevance").
DEFAULT_MIN_SIMILARITY = 0.2
DEFAULT_RELEVANCE_MARGIN = 0.0


class MemorySettings(SettingGroup):
    """The embedder (a local model, an OpenAI-compatible API or none) and the
    similarity a memory found by meaning needs."""

    title = "Memory"

    memory_embedder: Literal["wordllama", "openai", "none"] = Field(
        default="wordllama",
        description="What embeds memories for search by meaning: wordllama (a local model "
        "installed with the server), openai (an OpenAI-compatible POST {url}/embeddings) or "
        "none (keyword search only).",
    )
    memory_embedder_url: str | None = Field(
        default=None,
        description="openai: the API's base URL, such as https://api.openai.com/v1 or "
        "http://localhost:11434/v1 (Ollama).",
    )
    memory_embedder_model: str = Field(
        default="text-embedding-3-small",
        min_length=1,
        max_length=200,
        description="openai: the model asked for.",
    )
    memory_embedder_api_key: SecretStr | None = Field(
        default=None, description="openai: the API key (sent as a bearer token)."
    )
    memory_embedder_api_key_file: Path | None = Field(
        default=None, description="openai: a file holding the API key (read at start-up)."
    )
    memory_embedder_dimensions: int | None = Field(
        default=None,
        ge=1,
        le=MAX_EMBEDDING_DIMENSIONS,
        description="openai: the vector length asked for and required of answers (unset: the "
        "model's own).",
    )
    memory_embedder_batch_size: int = Field(
        default=64, ge=1, le=2048, description="openai: texts sent in one request."
    )
    memory_embedder_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        le=300,
        description="openai: how long a call may take (a search waits at most 2 s of it, then "
        "ranks by keywords alone).",
    )
    memory_min_similarity: float = Field(
        default=DEFAULT_MIN_SIMILARITY,
        ge=-1,
        le=1,
        description="The cosine similarity a memory needs to be found by meaning alone.",
    )
    memory_relevance_margin: float = Field(
        default=DEFAULT_RELEVANCE_MARGIN,
        ge=-1,
        le=1,
        description="How much nearer a memory found by meaning alone must be to the question "
        "than either of them is to unrelated text (higher: fewer, surer answers).",
    )

    @field_validator("memory_embedder_url")
    @classmethod
    def _refuse_what_is_no_base_url(cls, url: str | None) -> str | None:
        if url is not None and not url.startswith(("http://", "https://")):
            raise ValueError(
                "write the API's base URL with its scheme, such as https://api.openai.com/v1"
            )
        return url

    @field_validator("memory_embedder_api_key")
    @classmethod
    def _refuse_a_key_no_header_can_carry(cls, key: SecretStr | None) -> SecretStr | None:
        # The refusal names the rule, never the key.
        if key is not None and not re.fullmatch(r"[\x21-\x7e]+", key.get_secret_value()):
            raise ValueError(
                "must be printable ASCII without spaces (it is sent as a bearer token)"
            )
        return key

    @model_validator(mode="after")
    def _remote_embedder_needs_a_url(self) -> Self:
        if self.memory_embedder == "openai":
            url = self.memory_embedder_url or ""
            if not url.startswith(("http://", "https://")):
                raise ValueError(
                    "SESSION_STATE_MEMORY_EMBEDDER=openai needs SESSION_STATE_MEMORY_EMBEDDER_URL, "
                    "an http:// or https:// base URL such as https://api.openai.com/v1"
                )
        if self.memory_embedder_api_key_file is not None:
            try:
                self.memory_embedder_api_key_file.read_text()
            except (OSError, UnicodeDecodeError) as error:
                raise ValueError(
                    "SESSION_STATE_MEMORY_EMBEDDER_API_KEY_FILE cannot be read "
                    f"({type(error).__name__})"
                ) from None
        return self

    def memory_embedder_api_key_value(self) -> str | None:
        """The key from its file, else from its setting."""
        if self.memory_embedder_api_key_file is not None:
            return self.memory_embedder_api_key_file.read_text().strip() or None
        if self.memory_embedder_api_key is not None:
            return self.memory_embedder_api_key.get_secret_value() or None
        return None
