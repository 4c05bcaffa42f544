"""serve-sim's prompt cache: what each provider would have read from its cache, reported
in each API's own usage fields (issue 45), so the clients' reading of them, and the
difference the order of a job's requests makes, are tested over HTTP.

**Tokens.** The sim counts a prompt as its whitespace words plus 256 tokens an image
(``prompt_tokens``: judgebias.models.sim; the system prompt is not counted), so the cache
counts alike: a prompt is a chain of *units*, the system prompt first (0 tokens: it is
compared, not counted), then each word (1 token) and each image (:data:`IMAGE_TOKENS`, by
its bytes' digest) in the order the user message holds them; each unit is keyed by a hash
of the whole prefix that ends with it, so a prefix is "seen" exactly when every unit up to
it matches. A word is counted once, in the part where it begins, so the units add up to
``prompt_tokens``. Each part of the user message (a text part, an image) ends a *block*:
the positions Anthropic's breakpoints stand at.

**What each API reports** (their docs, checked in 2026; the clients' modules cite the same
pages):

* OpenAI (developers.openai.com/api/docs/guides/prompt-caching): automatic "for prompts
  that are 1024 tokens or longer", "exact prefix matches", hits "in increments of 128
  tokens". Reported: the longest prefix seen before, if at least :data:`OPENAI_MIN`
  tokens and the prompt too, rounded down to a multiple of :data:`OPENAI_STEP`, in
  ``usage.prompt_tokens_details.cached_tokens`` (always present, 0 without a hit, as
  OpenAI sends it). Every prompt of at least the minimum is remembered whole.
* Gemini (ai.google.dev/gemini-api/docs/caching): implicit caching of a repeated prefix of
  at least the model's minimum (1,024 to 4,096 tokens by model; the sim's models are none
  of Google's, so :data:`GEMINI_MIN` is the lowest it lists), reported as
  ``usageMetadata.cachedContentTokenCount``, left out when 0 (as the REST API leaves a
  zero count out).
* Anthropic (platform.claude.com/docs/en/build-with-claude/prompt-caching): only what a
  request marks with ``cache_control`` (on a system block, a content block, or top-level:
  the last block). A marked prefix of at least :data:`ANTHROPIC_MIN` tokens is written
  (``cache_creation_input_tokens``: from what was read up to the last marker); a later
  request reads the longest prefix written before that ends at one of its block
  boundaries, up to :data:`LOOKBACK` blocks before one of its markers
  (``cache_read_input_tokens``); ``input_tokens`` is the rest. An entry's time to live
  restarts with each use ("5 minutes from last use").

**Bounds** (``judgebias serve-sim --cache-ttl S --cache-tokens N``): per API and model,
entries unused for ``ttl_s`` seconds are gone, and the cache holds at most
``capacity_tokens`` tokens, the least recently used evicted first (the deepest units of a
prompt before its shallower ones, as vLLM evicts a prefix's last blocks first); 0 tokens
caches nothing. So a test shows the order mattering: requests sharing a prefix sent side
by side read it, the same requests shuffled among others find it evicted or expired.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Final

IMAGE_TOKENS: Final = 256  # as judgebias.models.sim counts an image's prompt tokens
OPENAI_MIN: Final = 1024
OPENAI_STEP: Final = 128
GEMINI_MIN: Final = 1024
ANTHROPIC_MIN: Final = 1024  # Claude Sonnet 4.5 and earlier Sonnets, Opus 4.1
LOOKBACK: Final = 20  # blocks a breakpoint looks back for an earlier entry
DEFAULT_TTL_S: Final = 300.0  # Anthropic's default (5 minutes); OpenAI's "5-10 minutes"
DEFAULT_CAPACITY: Final = 100_000  # tokens per API and model (~25 MB at most)
_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class Prompt:
    """A prompt as the cache sees it (module docstring): for each unit, the hash of the
    prefix ending with it and that prefix's tokens; the unit ending each block (the system
    prompt, then each user part)."""

    hashes: tuple[bytes, ...]
    ends: tuple[int, ...]
    blocks: tuple[int, ...]

    @property
    def tokens(self) -> int:
        return self.ends[-1]


def prompt_of(system: str, parts: Sequence[str | bytes]) -> Prompt:
    """The units of a request: its system prompt, then its user parts in order."""
    text = "".join(p for p in parts if isinstance(p, str))
    words = [(m.start(), m.group()) for m in _WORD.finditer(text)]
    keys: list[tuple[bytes, int]] = [(b"s" + system.encode(), 0)]
    blocks = [0]
    at = 0  # characters of text so far
    next_word = 0
    for part in parts:
        if isinstance(part, bytes):
            keys.append((b"i" + hashlib.sha256(part).digest(), IMAGE_TOKENS))
        else:
            at += len(part)
            while next_word < len(words) and words[next_word][0] < at:
                keys.append((b"w" + words[next_word][1].encode(), 1))
                next_word += 1
        blocks.append(len(keys) - 1)
    hashes: list[bytes] = []
    ends: list[int] = []
    previous, total = b"", 0
    for key, tokens in keys:
        previous = hashlib.blake2b(previous + key, digest_size=16).digest()
        total += tokens
        hashes.append(previous)
        ends.append(total)
    return Prompt(tuple(hashes), tuple(ends), tuple(blocks))


class PrefixCache:
    """The prompt prefixes each API has seen, per model (module docstring). Thread-safe:
    serve-sim answers each request in a thread of its own."""

    def __init__(self, ttl_s: float = DEFAULT_TTL_S, capacity_tokens: int = DEFAULT_CAPACITY,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if ttl_s < 0 or capacity_tokens < 0:
            raise ValueError("the cache's time to live and capacity must be >= 0")
        self.ttl_s, self.capacity, self.clock = float(ttl_s), int(capacity_tokens), clock
        self._lock = threading.Lock()
        # (api, model) -> prefix hash -> (tokens it holds, last used)
        self._entries: dict[tuple[str, str], OrderedDict[bytes, tuple[int, float]]] = {}
        self._held: dict[tuple[str, str], int] = {}

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._held.clear()

    # -- the three APIs --------------------------------------------------------------

    def openai(self, model: str, prompt: Prompt) -> int:
        """``prompt_tokens_details.cached_tokens`` of `prompt` (module docstring)."""
        if prompt.tokens < OPENAI_MIN:
            return 0
        with self._lock:
            seen = self._automatic(("openai", model), prompt)
        return seen // OPENAI_STEP * OPENAI_STEP if seen >= OPENAI_MIN else 0

    def gemini(self, model: str, prompt: Prompt) -> int:
        """``cachedContentTokenCount`` of `prompt` (module docstring)."""
        if prompt.tokens < GEMINI_MIN:
            return 0
        with self._lock:
            seen = self._automatic(("gemini", model), prompt)
        return seen if seen >= GEMINI_MIN else 0

    def anthropic(self, model: str, prompt: Prompt, marks: Sequence[int]) -> tuple[int, int]:
        """(``cache_read_input_tokens``, ``cache_creation_input_tokens``) of `prompt`
        whose blocks `marks` (indices into ``prompt.blocks``) carry ``cache_control``."""
        if not marks or self.capacity == 0:
            return 0, 0
        space, now = ("anthropic", model), self.clock()
        ends = [prompt.blocks[m] for m in sorted(set(marks))]
        with self._lock:
            entries = self._entries.setdefault(space, OrderedDict())
            read = 0
            for mark in sorted(set(marks)):
                for block in range(mark, max(mark - LOOKBACK, 0) - 1, -1):
                    unit = prompt.blocks[block]
                    if prompt.ends[unit] >= ANTHROPIC_MIN and \
                            self._fresh(entries, prompt.hashes[unit], now):
                        read = max(read, prompt.ends[unit])
                        break
            last = prompt.ends[ends[-1]]
            write = last - read if last >= ANTHROPIC_MIN and last > read else 0
            for unit in ends:
                if prompt.ends[unit] >= ANTHROPIC_MIN and (
                        write or self._fresh(entries, prompt.hashes[unit], now)):
                    self._put(space, prompt.hashes[unit], prompt.ends[unit], now)
        return read, write

    # -- the store -------------------------------------------------------------------

    def _fresh(self, entries: OrderedDict[bytes, tuple[int, float]], key: bytes,
               now: float) -> bool:
        found = entries.get(key)
        return found is not None and now - found[1] <= self.ttl_s

    def _automatic(self, space: tuple[str, str], prompt: Prompt) -> int:
        """The tokens of the longest prefix of `prompt` seen before (every unit up to it
        cached and fresh); then the whole prompt is remembered."""
        if self.capacity == 0:
            return 0
        now = self.clock()
        entries = self._entries.setdefault(space, OrderedDict())
        seen = 0
        for key, end in zip(prompt.hashes, prompt.ends, strict=True):
            if not self._fresh(entries, key, now):
                break
            seen = end
        for i in range(len(prompt.hashes) - 1, -1, -1):  # the shallowest most recent
            weight = prompt.ends[i] - (prompt.ends[i - 1] if i else 0)
            self._put(space, prompt.hashes[i], max(weight, 1), now)
        return seen

    def _put(self, space: tuple[str, str], key: bytes, tokens: int, now: float) -> None:
        """Remember (or refresh) an entry holding `tokens`; evict the least recently used
        beyond the capacity."""
        entries = self._entries.setdefault(space, OrderedDict())
        old = entries.pop(key, None)
        held = self._held.get(space, 0) - (old[0] if old else 0) + tokens
        entries[key] = (tokens, now)
        while held > self.capacity and entries:
            _, (dropped, _) = entries.popitem(last=False)
            held -= dropped
        self._held[space] = held
