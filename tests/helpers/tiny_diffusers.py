"""A tiny random-weight text-to-image pipeline, built locally, for FRAME's diffusers backend.

Why a tiny random pipeline: the check is that judgebias drives diffusers correctly (a
local folder loaded with no model hub, the device setting, seeded generation, PNG bytes
through the never-pay-twice cache and on through FRAME's pipeline), not what the picture
shows, and it must run on a CPU in well under a second per image.
:func:`build_tiny_text_to_image` builds a Stable Diffusion pipeline (UNet, VAE, CLIP text
encoder and tokenizer, DDIM scheduler) from configs with tiny sizes and seeded random
weights and saves it like a hub checkpoint; :func:`use_tiny_diffusers` points a params
dict's FRAME block at it, with human scores written for every item.

Shared by tests/frame/test_frame_diffusers.py (locally, on the CPU) and the Slurm test (a
GPU job): it imports neither pytest nor anything of the test suite. Building the pipeline
needs only torch, diffusers and transformers; pointing params at it also judgebias.
"""

from __future__ import annotations

import json
from pathlib import Path

# The VAE's three blocks scale by 4, so SAMPLE_SIZE latents decode to IMAGE_SIZE px: 128 px
# is the offline renderer's smallest size, the scale FRAME's manipulations (overlay fonts,
# padding, box lines) are known to work at.
SAMPLE_SIZE = 32
IMAGE_SIZE = 128
# Room for a whole FRAME prompt at one token per character (the tokenizer has no merges):
# a prompt cut at CLIP's usual 77 tokens would make two items that differ late the same.
MAX_TOKENS = 256
BOS, EOS = "<|startoftext|>", "<|endoftext|>"


def _byte_alphabet() -> list[str]:
    """The 256 characters byte-level BPE writes bytes as (GPT-2's ``bytes_to_unicode``):
    printable bytes stand for themselves, the rest are shifted past 255."""
    printable = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1),
                 *range(ord("®"), ord("ÿ") + 1)]
    chars, shift = [], 0
    for byte in range(256):
        if byte in printable:
            chars.append(chr(byte))
        else:
            chars.append(chr(256 + shift))
            shift += 1
    return chars


def _write_tokenizer_files(folder: Path) -> Path:
    """CLIP's tokenizer files, written here: every byte alone and at a word's end
    (``</w>``), the two special tokens, no merges; any text encodes, one token a byte."""
    folder.mkdir(parents=True, exist_ok=True)
    alphabet = _byte_alphabet()
    tokens = [*alphabet, *(f"{c}</w>" for c in alphabet), BOS, EOS]
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    (folder / "tokenizer_config.json").write_text(json.dumps(
        {"model_max_length": MAX_TOKENS, "bos_token": BOS, "eos_token": EOS,
         "unk_token": EOS, "pad_token": EOS}))
    return folder


def build_tiny_text_to_image(path: Path, seed: int = 0) -> Path:
    """Save a tiny random Stable Diffusion pipeline to ``path``; no download.

    UNet: two blocks of 8 and 16 channels, one layer each, cross-attention width 32, on
    32x32 latents. VAE: three blocks of 8 channels (128x128 px images). Text encoder:
    CLIP, hidden 32, 2 layers, 256 positions. Scheduler: DDIM. No safety checker. Weights
    in float32 (the CPU's), seeded with `seed`; a few inference steps take well under a
    second per image on a CPU.
    """
    import torch
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTokenizer

    path = Path(path)
    tokenizer = CLIPTokenizer.from_pretrained(_write_tokenizer_files(path / "tokenizer"),
                                              local_files_only=True)
    torch.manual_seed(seed)
    unet = UNet2DConditionModel(
        sample_size=SAMPLE_SIZE, in_channels=4, out_channels=4, layers_per_block=1,
        block_out_channels=(8, 16), norm_num_groups=4, cross_attention_dim=32,
        attention_head_dim=4,
        down_block_types=("DownBlock2D", "CrossAttnDownBlock2D"),
        up_block_types=("CrossAttnUpBlock2D", "UpBlock2D"))
    vae = AutoencoderKL(
        in_channels=3, out_channels=3, latent_channels=4, layers_per_block=1,
        block_out_channels=(8, 8, 8), norm_num_groups=4,
        down_block_types=("DownEncoderBlock2D",) * 3,
        up_block_types=("UpDecoderBlock2D",) * 3, sample_size=IMAGE_SIZE)
    text_encoder = CLIPTextModel(CLIPTextConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64,
        num_hidden_layers=2, num_attention_heads=4, max_position_embeddings=MAX_TOKENS,
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id, projection_dim=32))
    scheduler = DDIMScheduler(beta_start=0.00085, beta_end=0.012,
                              beta_schedule="scaled_linear", clip_sample=False,
                              set_alpha_to_one=False, steps_offset=1)
    pipeline = StableDiffusionPipeline(
        vae=vae.eval(), text_encoder=text_encoder.eval(), tokenizer=tokenizer,
        unet=unet.eval(), scheduler=scheduler, safety_checker=None, feature_extractor=None,
        requires_safety_checker=False)
    pipeline.save_pretrained(path)
    return path


def use_tiny_diffusers(params: dict, model_dir: Path, scores_dir: Path) -> dict:
    """Make `params` (a whole params dict with a ``frame`` block) build FRAME's synthetic
    benchmark with the tiny pipeline at `model_dir` and imported human scores; returns
    `params`, changed in place.

    The pipeline is built at `model_dir` unless a pipeline is there already (its
    ``model_index.json``). Images: the diffusers backend, 2 inference steps, the device
    left at ``auto``; ``images.gpus`` is kept as the caller set it (0 by default; a Slurm
    test sets 1 after this call or before it), and so are the block's other keys such as
    ``cache_dir``. Both paths are made absolute, so a job running in another folder or on
    another node of a shared filesystem finds them.

    Human scores: a pipeline that is not the offline renderer does not know what it drew,
    so the simulated annotators cannot score its images (data.attach_humans); the item
    table needs scores imported by item id. They are written to
    ``scores_dir/human_scores.csv`` for exactly the items the pipeline will build: the ids
    and concepts are drawn as the concepts step draws them (data.draw_concepts with the
    block's ``n_per_domain``, ``k_weights``, ``seed`` and ``domains``, schema defaults
    filled in), so any size works. They are stand-ins, not anybody's judgement: a random
    pipeline draws nothing of its prompt, and each score follows how many concepts the
    prompt perturbed, as a careful annotator's would for a faithful model (5 less one per
    concept, at least 1; the second annotator half a point lower on odd items).

    Constraints: ``writer`` must be null (the offline template). A writer model may leave
    items out, and a scores file naming an item missing from the benchmark is an error.
    The ``bounding_box`` manipulation needs box annotations, which only the offline
    renderer records: with this pipeline every bounding-box render is "unavailable".
    """
    from judgebias.config import validate_params
    from judgebias.studies.frame.data import draw_concepts

    model_dir, scores_dir = Path(model_dir).resolve(), Path(scores_dir).resolve()
    if not (model_dir / "model_index.json").is_file():
        build_tiny_text_to_image(model_dir)
    synthetic = params["frame"]["dataset"].setdefault("synthetic", {})
    params["frame"]["dataset"]["name"] = "synthetic"
    synthetic.setdefault("images", {}).update(
        backend="diffusers", options={"model": str(model_dir), "steps": 2})
    scores = scores_dir / "human_scores.csv"
    synthetic.setdefault("annotators", {})["scores"] = str(scores)
    block = validate_params(params, data=False)["frame"]["dataset"]["synthetic"]
    if block["writer"] is not None:
        raise ValueError("use_tiny_diffusers: frame.dataset.synthetic.writer must be null "
                         "(a writer model may leave items out of the benchmark, and their "
                         "imported scores would then name items it lacks)")
    drawn = draw_concepts(block["n_per_domain"], block["k_weights"], seed=block["seed"],
                          domains=block["domains"])
    lines = ["item_id,annotator_1,annotator_2"]
    for i, (item_id, k) in enumerate(zip(drawn["item_id"], drawn["n_perturbed"],
                                         strict=True)):
        first = max(1.0, 5.0 - int(k))
        lines.append(f"{item_id},{first},{max(1.0, first - 0.5 * (i % 2))}")
    scores_dir.mkdir(parents=True, exist_ok=True)
    scores.write_text("\n".join(lines) + "\n")
    return params
