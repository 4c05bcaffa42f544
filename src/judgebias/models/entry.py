"""The parts of a panel entry (params.yaml ``panel.<key>``) declared once, as typed views
(judgebias.paramsblock): each is what :class:`judgebias.models.panel.PanelModel` holds and,
through judgebias.config.params_schema, the schema of its block (``pricing``,
``resources``). In a module of their own, below the panel model and the params checks
that both read them.
"""

from __future__ import annotations

from judgebias.paramsblock import key, view


@view
class Pricing:
    """USD per million tokens, for `judgebias plan` estimates; and the output tokens a
    call is expected to bill, until the journal measures them (judgebias.plan)."""

    input_per_mtok: float = key(ge=0)
    """USD per million input tokens."""
    output_per_mtok: float = key(ge=0)
    """USD per million output tokens (hidden reasoning and thinking tokens are billed as
    output)."""
    image_tokens: int = key(765, ge=0)
    """Input tokens an image is counted as in the estimate (text: about 4 characters a
    token)."""
    answer_tokens: int | None = key(absent=True, ge=0)
    """The answer's tokens one call is expected to bill (default: what the limit leaves,
    sampling.max_tokens less the hidden tokens: an upper bound)."""
    reasoning_tokens: int | None = key(absent=True, ge=0)
    """The hidden tokens (reasoning, thinking) one call is expected to bill as output,
    which count against sampling.max_tokens (default 0: within the max_tokens bound)."""
    cached_input_per_mtok: float | None = key(absent=True, ge=0)
    """USD per million input tokens read from the provider's prompt cache (default: the
    backend's share of input_per_mtok: OpenAI 0.5, Gemini 0.25, Anthropic 0.1; state your
    model's own, e.g. a tenth on the GPT-5 family)."""
    cache_write_per_mtok: float | None = key(absent=True, ge=0)
    """USD per million input tokens written to the cache where the provider bills writes
    apart (Anthropic: 1.25 x input_per_mtok for its 5-minute cache, the default)."""
    cache_min_tokens: int | None = key(absent=True, ge=0)
    """The shortest prompt prefix the provider caches for this model (default: the
    backend's: OpenAI 1024, Gemini 2048, Anthropic 1024)."""


@view
class Resources:
    """What each of the model's jobs asks Snakemake (and Slurm) for."""

    gpus: int = key(0, ge=0)
    """GPUs each job of the model takes (vllm only: the engine is split over them); a job
    of any other backend takes none."""
    mem_mb: int | None = key(absent=True, ge=1, run_setting=True)
    """Memory each job of the model asks for, in MB (4000 when absent)."""
