"""Requests that share a prefix: found, and sent side by side (issue 45).

Providers reuse the work on a prompt prefix they have just seen: OpenAI, Gemini
(implicit caching) and vLLM's automatic prefix caching do it by themselves, Anthropic where
a request marks the prefix with ``cache_control``. Each only helps when the shared part
comes first in the message (a study's ``layout``) *and* the requests sharing it arrive
together, before the cache entry is evicted (OpenAI keeps one for minutes, Anthropic 5
minutes by default, vLLM until its KV blocks are needed).

So the runner sends each job's new requests through :func:`grouped`: sorted so that
requests sharing a prefix sit side by side, each marked with how many leading parts it
shares (``ChatRequest.shared_parts``, a hint outside the journal key). The online path
starts them in that order (``concurrency`` at a time: the first few of a group may still
start before the first has been cached), a provider batch file lists them in it, and
vLLM receives them as one list in it. vLLM's automatic prefix caching needs no setting:
it is on by default in the V1 engine (``CacheConfig.enable_prefix_caching = True`` in
vllm/config/cache.py; the V1 engine is vLLM's default since 0.8, and this project is
checked against 0.32), which hashes each KV block with the tokens before it and the
hashes of the images in it (docs.vllm.ai, "Automatic Prefix Caching"), so a shared image
is reused too; ``engine: {enable_prefix_caching: false}`` in a panel model turns it off
(the engine block goes to ``vllm.LLM`` unchanged).

A request's prefix is read in *parts*: the system prompt, then the user message's text and
image parts in order (:meth:`judgebias.models.base.ChatRequest.parts`). Parts are compared
whole -- a provider caches by tokens, so a text part that only begins alike also shares
some tokens; that finer count is the provider's (its usage reports it, journaled as
``cached_tokens``), what is computed here only orders and marks.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from itertools import pairwise
from typing import TypeVar

from judgebias.models.base import ChatRequest

K = TypeVar("K")


def part_ids(request: ChatRequest) -> tuple[str, ...]:
    """The request as a sequence of part identities: the system prompt, then each user part
    (text by its sha256, an image by its digest)."""
    ids = ["s" + hashlib.sha256(request.system.encode()).hexdigest()]
    digests = iter(request.image_hashes())
    for part in request.parts():
        ids.append("i" + next(digests) if isinstance(part, bytes)
                   else "t" + hashlib.sha256(part.encode()).hexdigest())
    return tuple(ids)


def _common(a: tuple[str, ...], b: tuple[str, ...]) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def grouped_order(requests: Sequence[ChatRequest]) -> list[int]:
    """Indices of `requests` in the order to send them: requests that share a prefix side
    by side (ordered by their part identities, so a group is contiguous; ties keep their
    order). Answers do not depend on the order a job sends its requests in (each is keyed
    and seeded on its own), only the cache does."""
    return _order([part_ids(r) for r in requests])


def shared_parts(requests: Sequence[ChatRequest]) -> list[int]:
    """For each request, how many leading user-message parts it shares with another request
    of `requests`, with the same system prompt (0: none, or a different system prompt).

    The longest prefix a sequence shares with any other is the longer of those it shares
    with its neighbours in sorted order, so this is one sort and a pass."""
    ids = [part_ids(r) for r in requests]
    return _shared(ids, _order(ids))


def grouped(pending: Mapping[K, ChatRequest]) -> dict[K, ChatRequest]:
    """`pending` (a job's requests to send, by journal key) in the order to send them
    (:func:`grouped_order`), each with its ``shared_parts`` (:func:`shared_parts`) set.

    What the runner hands every backend (judgebias.models.runner.run_requests): the
    online path starts them in this order, a batch file lists them in it, vLLM gets them
    as one list in it. Only the requests actually sent are grouped (journaled ones are
    not asked again), and ``shared_parts`` is a hint outside the journal key, so no key,
    and no answer, changes."""
    keys, requests = list(pending), list(pending.values())
    ids = [part_ids(r) for r in requests]
    order = _order(ids)
    shared = _shared(ids, order)
    return {keys[i]: (requests[i] if requests[i].shared_parts == shared[i]
                      else replace(requests[i], shared_parts=shared[i]))
            for i in order}


def _order(ids: Sequence[tuple[str, ...]]) -> list[int]:
    return sorted(range(len(ids)), key=lambda i: ids[i])


def _shared(ids: Sequence[tuple[str, ...]], order: Sequence[int]) -> list[int]:
    shared = [0] * len(ids)
    for a, b in pairwise(order):
        common = _common(ids[a], ids[b])
        shared[a] = max(shared[a], common)
        shared[b] = max(shared[b], common)
    # the system prompt is part 0 of the identities, never of the user message
    return [max(n - 1, 0) for n in shared]
