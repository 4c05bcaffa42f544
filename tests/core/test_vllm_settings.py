"""The vllm backend's settings beyond ``engine``, without vLLM (issue 41 item 5): LoRA
adapters per modality, a chat template override, the per-prompt image limit derived from
the studies (judgebias.models.vllm_settings); their config errors; the journal version
with and without them; and what the backend hands vLLM, through a stand-in ``vllm``
module shaped like vLLM 0.32's (``LLM``, ``SamplingParams``, ``EngineArgs``,
``vllm.lora.request.LoRARequest``, ``vllm.config.lora.MaxLoRARanks``). The real engine
runs them in tests/core/test_vllm_cpu.py."""

from __future__ import annotations

import copy
import importlib.metadata
import sys
import types
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from helpers.project import REPO, study_params
from helpers.tiny_lora import write_adapter_config

from judgebias.config import ConfigError, DataNotDownloaded, fingerprint, validate_params
from judgebias.models import vllm_settings
from judgebias.models.base import ChatRequest, Sampling
from judgebias.models.context import RunContext
from judgebias.models.panel import PanelModel
from judgebias.models.registry import backend_version, build_backend

KEY = "corvid-pro"  # in the default params: philautia, pomms, birch, and MMB's judge and
# FRAME's analysis judge, which send two images in one request
ONE_IMAGE = "lumen-base"  # philautia and pomms only: one image


def vllm_entry(params: dict, key: str = KEY, **fields: Any) -> dict:
    """`params` with panel model `key` served by vllm from a local folder."""
    params = copy.deepcopy(params)
    entry = params["panel"][key]
    entry.pop("sim")
    entry.update(backend="vllm", model_id="org/some-vlm", revision="", **fields)
    return params


def refusal(params: dict) -> str:
    with pytest.raises(ConfigError) as info:
        validate_params(params)
    return str(info.value)


def installed_vllm() -> str:
    for distribution in ("vllm", "vllm-cpu"):
        try:
            return importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            continue
    return "not-installed"


# --- the image limit ---------------------------------------------------------------------

def test_the_image_limit_is_the_largest_request_of_the_models_studies(default_params):
    config = validate_params(vllm_entry(vllm_entry(default_params), ONE_IMAGE))
    assert vllm_settings.images_needed(config, KEY) == 2  # MMB, FRAME's analysis judge
    assert vllm_settings.images_needed(config, ONE_IMAGE) == 1
    only_philautia = validate_params(study_params(vllm_entry(default_params), "philautia"))
    assert vllm_settings.images_needed(only_philautia, KEY) == 1
    # BIRCH's labeller and lengthener get text only; a model no study uses sends none,
    # and its engine still takes one image
    text_only = validate_params(vllm_entry(study_params(default_params, "birch")))
    text_only["birch"]["models"] = ["lumen-large"]
    assert vllm_settings.images_needed(text_only, KEY) == 0
    assert vllm_settings.images_per_prompt(text_only, KEY) == 1


def test_the_engine_gets_the_derived_limit_unless_a_larger_one_is_given():
    assert vllm_settings.with_image_limit({"dtype": "half"}, 2) == {
        "dtype": "half", "limit_mm_per_prompt": {"image": 2}}
    assert vllm_settings.with_image_limit({"limit_mm_per_prompt": {"video": 0}}, 2) == {
        "limit_mm_per_prompt": {"video": 0, "image": 2}}
    for explicit in ({"image": 4}, {"image": {"count": 4, "width": 512}}):
        engine = {"limit_mm_per_prompt": explicit}
        assert vllm_settings.with_image_limit(engine, 2) == engine


def test_a_smaller_explicit_limit_is_an_error_naming_the_key(default_params):
    params = vllm_entry(default_params, engine={"limit_mm_per_prompt": {"image": 1}})
    message = refusal(params)
    assert (f"panel.{KEY}.engine.limit_mm_per_prompt.image: 1, but mmb (judge) sends 2 "
            "images in one request to it") in message
    for fine in (2, 3, {"count": 2}):
        params["panel"][KEY]["engine"] = {"limit_mm_per_prompt": {"image": fine}}
        validate_params(params)
    # one image is enough where only philautia runs
    validate_params(study_params(vllm_entry(default_params, engine={
        "limit_mm_per_prompt": {"image": 1}}), "philautia"))
    params["panel"][KEY]["engine"] = {"limit_mm_per_prompt": {"image": "two"}}
    assert f"panel.{KEY}.engine.limit_mm_per_prompt: image: must be a count" in \
        refusal(params)


def test_an_unsound_study_is_left_to_its_own_check(default_params):
    """The registry's checks run before the studies': Pomms without philautia (whose
    needs read philautia's block) is reported as such, not as a crash."""
    params = vllm_entry(default_params, engine={"limit_mm_per_prompt": {"image": 1}})
    del params["philautia"]
    assert "pomms: needs the philautia study" in refusal(params)


# --- LoRA adapters and the chat template: config errors ----------------------------------

def test_lora_and_chat_template_are_vllm_fields(default_params):
    params = copy.deepcopy(default_params)
    params["panel"]["lumen-base"]["lora"] = {"image": "vision-lora"}
    params["panel"]["lumen-base"]["chat_template"] = "{{ messages }}"
    message = refusal(params)
    assert "panel.lumen-base.lora: only for the vllm backend (backend is 'sim')" in message
    assert "panel.lumen-base.chat_template: only for the vllm backend" in message
    assert "lora" in refusal(vllm_entry(default_params, lora={"audio": "speech-lora"}))
    assert "lora" in refusal(vllm_entry(default_params, lora={}))


def test_a_missing_local_adapter_or_template_file_is_data_not_there(default_params,
                                                                    tmp_path):
    params = vllm_entry(default_params, lora={"image": str(tmp_path / "nowhere")},
                        chat_template=str(tmp_path / "template.jinja"))
    with pytest.raises(DataNotDownloaded) as info:
        validate_params(params)
    message = str(info.value)
    assert f"panel.{KEY}.lora.image: file {tmp_path / 'nowhere' / 'adapter_config.json'} " \
        "does not exist -- a LoRA adapter folder in PEFT's format" in message
    assert f"panel.{KEY}.chat_template: file {tmp_path / 'template.jinja'}" in message
    validate_params(params, data=False)  # `validate --no-data`, `plan`
    write_adapter_config(tmp_path / "nowhere")
    (tmp_path / "template.jinja").write_text("{{ messages }}")
    validate_params(params)


def test_an_adapter_inside_a_local_model_is_looked_for_there(default_params, tmp_path):
    params = vllm_entry(default_params, lora={"image": "vision-lora"})
    params["panel"][KEY]["model_id"] = str(tmp_path)
    assert f"{tmp_path / 'vision-lora' / 'adapter_config.json'} does not exist" in \
        refusal(params)
    write_adapter_config(tmp_path / "vision-lora")
    validate_params(params)
    # a hub repository's folder is not looked for before the job downloads it
    validate_params(vllm_entry(default_params, lora={"image": "vision-lora"}))


@pytest.mark.parametrize("engine, ref, expected", [
    ({"enable_lora": False}, "{adapter}", "engine.enable_lora: false, but panel"),
    ({"max_lora_rank": 8}, "{adapter}", "engine.max_lora_rank: 8 is below the rank 16 of "
                                        "the image adapter"),
    ({}, "../elsewhere", None),  # a path on this machine: checked as a file
    ({}, "sub/../../up", "names no adapter folder"),
])
def test_lora_settings_that_cannot_work_are_refused(default_params, tmp_path, engine, ref,
                                                    expected):
    adapter = write_adapter_config(tmp_path / "adapter", rank=16)
    params = vllm_entry(default_params, engine=engine,
                        lora={"image": ref.format(adapter=adapter)})
    if expected is None:
        with pytest.raises(DataNotDownloaded):
            validate_params(params)
        return
    assert f"panel.{KEY}." in refusal(params) and expected in refusal(params)


# --- the journal version ------------------------------------------------------------------

def model_of(params: dict, key: str = KEY) -> PanelModel:
    return PanelModel.from_params(validate_params(params, data=False), key)


def test_a_model_without_adapters_or_template_keeps_its_version(default_params):
    engine = {"dtype": "half", "max_model_len": 4096}
    version = backend_version(model_of(vllm_entry(default_params, engine=engine)))
    assert version == f"vllm-{installed_vllm()}-chat-2-{fingerprint(engine)}"


def test_the_adapters_content_and_the_template_are_in_the_version(default_params,
                                                                  tmp_path):
    adapter = write_adapter_config(tmp_path / "adapter")
    (adapter / "adapter_model.safetensors").write_bytes(b"weights one")
    plain = vllm_entry(default_params, engine={"dtype": "half"})
    base = backend_version(model_of(plain))
    with_lora = vllm_entry(default_params, engine={"dtype": "half"},
                           lora={"image": str(adapter)})
    first = backend_version(model_of(with_lora))
    assert first.startswith(base + "+lora-") and first != base
    assert backend_version(model_of(with_lora)) == first  # stable
    # other weights at the same path: another version (never the old answers)
    (adapter / "adapter_model.safetensors").write_bytes(b"weights two")
    second = backend_version(model_of(with_lora))
    assert second != first and second.startswith(base + "+lora-")
    # the same adapter for text-only requests too: another version
    both = copy.deepcopy(with_lora)
    both["panel"][KEY]["lora"]["text"] = str(adapter)
    assert backend_version(model_of(both)) not in (first, second)
    # a template, inline or from a file with the same text: the same version
    template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    (tmp_path / "chat.jinja").write_text(template)
    inline = backend_version(model_of(vllm_entry(default_params, engine={"dtype": "half"},
                                                 chat_template=template)))
    from_file = backend_version(model_of(vllm_entry(
        default_params, engine={"dtype": "half"}, chat_template=str(tmp_path / "chat.jinja"))))
    assert inline == from_file and inline.startswith(base + "+template-")
    (tmp_path / "chat.jinja").write_text(template + " ")
    assert backend_version(model_of(vllm_entry(
        default_params, engine={"dtype": "half"},
        chat_template=str(tmp_path / "chat.jinja")))) != inline


def test_a_hub_adapter_is_keyed_by_its_folder_and_an_absent_one_by_its_absence(
        default_params, tmp_path):
    hub = backend_version(model_of(vllm_entry(default_params, lora={"image": "vision-lora"})))
    other = backend_version(model_of(vllm_entry(default_params, lora={"image": "speech-lora"})))
    assert hub != other and "+lora-" in hub
    assert vllm_settings.adapter_identity(
        vllm_settings.adapter("org/some-vlm", "image", "vision-lora")) == "hub:vision-lora"
    absent = vllm_settings.adapter("org/some-vlm", "image", str(tmp_path / "gone"))
    assert vllm_settings.adapter_identity(absent).startswith("absent:")


def test_lora_ranks_round_up_to_what_vllm_takes(tmp_path):
    assert [vllm_settings.lora_rank_option(r) for r in (1, 8, 9, 200, 256, 320, 600)] == \
        [1, 8, 16, 256, 256, 320, 600]
    folder = write_adapter_config(tmp_path / "a", rank=8, rank_pattern={"o_proj": 64})
    assert vllm_settings.adapter_rank(folder) == 64


# --- what the backend hands vLLM (a stand-in vllm module) ---------------------------------

@dataclass(frozen=True)
class FakeLoRARequest:
    lora_name: str
    lora_int_id: int
    lora_path: str = ""


class FakeLLM:
    def __init__(self, model: str, revision: str | None = None, **options: Any) -> None:
        self.model, self.options = model, options
        self.calls: list[dict[str, Any]] = []

    def chat(self, conversations: list, sampling_params: list, use_tqdm: bool = True,
             **kwargs: Any) -> list[Any]:
        self.calls.append({"conversations": conversations, **kwargs})
        completion = types.SimpleNamespace(text="a red circle", token_ids=[1, 2],
                                           logprobs=None, finish_reason="stop")
        return [types.SimpleNamespace(outputs=[completion], prompt_token_ids=[5] * 20)
                for _ in conversations]


@pytest.fixture
def fake_vllm(monkeypatch):
    """A ``vllm`` package with the names the backend uses (vLLM 0.32's signatures)."""
    vllm = types.ModuleType("vllm")
    vllm.LLM = FakeLLM  # type: ignore[attr-defined]
    vllm.SamplingParams = lambda **kwargs: kwargs  # type: ignore[attr-defined]
    vllm.EngineArgs = type("EngineArgs", (), {"interleave_mm_strings": False})  # type: ignore[attr-defined]
    vllm.__version__ = "0.32.0"  # type: ignore[attr-defined]
    lora_request = types.ModuleType("vllm.lora.request")
    lora_request.LoRARequest = FakeLoRARequest  # type: ignore[attr-defined]
    config_lora = types.ModuleType("vllm.config.lora")
    config_lora.MaxLoRARanks = Literal[1, 8, 16, 32, 64, 128, 256, 320, 512]  # type: ignore[attr-defined]
    for name, module in {"vllm": vllm, "vllm.lora": types.ModuleType("vllm.lora"),
                         "vllm.lora.request": lora_request,
                         "vllm.config": types.ModuleType("vllm.config"),
                         "vllm.config.lora": config_lora}.items():
        monkeypatch.setitem(sys.modules, name, module)
    return vllm


def _requests(model_id: str) -> list[ChatRequest]:
    sampling = Sampling(temperature=0.0, max_tokens=8, top_logprobs=0, seed=0)
    return [ChatRequest(model=model_id, prompt="Caption it.", images=(_PNG,), sampling=sampling),
            ChatRequest(model=model_id, prompt="Rephrase: hello.", sampling=sampling),
            ChatRequest(model=model_id, prompt="Compare.", images=(_PNG, _PNG),
                        sampling=sampling)]


def _png() -> bytes:
    import io

    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (4, 4), "red").save(out, format="PNG")
    return out.getvalue()


_PNG = _png()


def test_the_backend_attaches_the_adapter_per_request_and_sizes_the_engine(
        fake_vllm, default_params, tmp_path):
    model_dir = tmp_path / "model"
    vision = write_adapter_config(model_dir / "vision-lora", rank=200)
    text = write_adapter_config(tmp_path / "text-adapter", rank=8)
    template = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    params = vllm_entry(default_params, lora={"image": "vision-lora", "text": str(text)},
                        chat_template=template, engine={"trust_remote_code": True})
    params["panel"][KEY]["model_id"] = str(model_dir)
    backend, version = build_backend(RunContext(validate_params(params)), KEY, "judge")
    assert "+lora-" in version and "+template-" in version
    answers = backend.complete(_requests(str(model_dir)))
    assert [a.status for a in answers] == ["ok"] * 3
    llm = backend.llm  # type: ignore[attr-defined]
    assert llm.options == {"trust_remote_code": True, "limit_mm_per_prompt": {"image": 2},
                           "interleave_mm_strings": True, "enable_lora": True,
                           "max_loras": 2, "max_lora_rank": 256}
    [call] = llm.calls
    assert call["chat_template"] == template
    image, text_only, pair = call["lora_request"]
    assert image == pair == FakeLoRARequest("lora1-vision-lora", 1, str(vision.resolve()))
    assert text_only == FakeLoRARequest("lora2-text-adapter", 2, str(text.resolve()))


def test_without_a_text_adapter_text_only_requests_use_the_base_weights(fake_vllm,
                                                                        default_params,
                                                                        tmp_path):
    adapter = write_adapter_config(tmp_path / "vision", rank=8)
    params = vllm_entry(default_params, lora={"image": str(adapter)},
                        engine={"max_lora_rank": 16, "max_loras": 3})
    backend, _ = build_backend(RunContext(validate_params(params)), KEY, "judge")
    backend.complete(_requests("org/some-vlm"))
    llm = backend.llm  # type: ignore[attr-defined]
    assert llm.options["max_lora_rank"] == 16 and llm.options["max_loras"] == 3  # given
    [call] = llm.calls
    assert [r and r.lora_int_id for r in call["lora_request"]] == [1, None, 1]
    assert "chat_template" not in call


def test_a_model_without_adapters_is_called_as_before(fake_vllm, default_params):
    params = validate_params(study_params(vllm_entry(default_params), "philautia"))
    backend, _ = build_backend(RunContext(params), KEY, "generator")
    backend.complete(_requests("org/some-vlm")[:2])
    llm = backend.llm  # type: ignore[attr-defined]
    assert llm.options == {"limit_mm_per_prompt": {"image": 1}, "interleave_mm_strings": True}
    assert set(llm.calls[0]) == {"conversations"}  # no lora_request, no chat_template


def test_an_explicit_rank_below_the_adapters_fails_before_loading(fake_vllm, tmp_path):
    from judgebias.models.vllm_backend import VllmBackend

    adapter = write_adapter_config(tmp_path / "a", rank=64)
    backend = VllmBackend("org/m", engine_args={"max_lora_rank": 32},
                          lora=vllm_settings.adapters("org/m", {"image": str(adapter)}))
    with pytest.raises(ValueError, match="max_lora_rank 32 is below its adapters' rank 64"):
        backend.engine_options()


def test_a_hub_adapter_is_fetched_from_the_models_repository(fake_vllm, monkeypatch,
                                                             tmp_path):
    from judgebias.models.vllm_backend import VllmBackend

    asked: list[tuple] = []

    def snapshot_download(repo_id: str, revision: str | None = None,
                          allow_patterns: list[str] | None = None) -> str:
        asked.append((repo_id, revision, allow_patterns))
        write_adapter_config(tmp_path / "snapshot" / "vision-lora", rank=256)
        return str(tmp_path / "snapshot")

    hub = types.ModuleType("huggingface_hub")
    hub.snapshot_download = snapshot_download  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "huggingface_hub", hub)
    backend = VllmBackend("microsoft/Phi-4-multimodal-instruct", "abc123",
                          lora=vllm_settings.adapters("microsoft/Phi-4-multimodal-instruct",
                                                      {"image": "vision-lora"}))
    assert backend.engine_options()["max_lora_rank"] == 256
    assert asked == [("microsoft/Phi-4-multimodal-instruct", "abc123", ["vision-lora/*"])]
    assert backend.lora_folders() == {"image": str(tmp_path / "snapshot" / "vision-lora")}


@pytest.mark.parametrize("modalities, slots", [(("image",), 2), (("image", "text"), 2)])
def test_on_vllms_cpu_build_a_spare_slot_keeps_adapterless_requests_plain(
        fake_vllm, monkeypatch, tmp_path, modalities, slots):
    """vLLM's CPU LoRA ops read a request without an adapter (index -1) from the last
    slot: with an image adapter only, one empty slot more; with an adapter for every
    request, none is needed."""
    from judgebias.models.vllm_backend import VllmBackend

    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: True)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "vllm.platforms", platforms)
    lora = {m: str(write_adapter_config(tmp_path / m)) for m in modalities}
    backend = VllmBackend("org/m", lora=vllm_settings.adapters("org/m", lora))
    assert backend.engine_options()["max_loras"] == slots
    platforms.current_platform = types.SimpleNamespace(is_cpu=lambda: False)  # type: ignore[attr-defined]
    assert VllmBackend("org/m", lora=vllm_settings.adapters("org/m", lora)
                       ).engine_options()["max_loras"] == len(modalities)


def test_the_docs_phi4_example_validates_and_keys_its_adapter(params):
    """docs/backends.md's Phi-4-multimodal entry (docs that cannot drift; it moved there
    from the README): valid, its vision adapter taken from the repository's vision-lora
    folder and keyed by it, its engine given the image limit of its studies (BIRCH's
    judges: one image)."""
    import re

    import yaml

    page = (REPO / "docs" / "backends.md").read_text()
    block = re.search(r"```yaml\n# vllm adapters\n(.*?)```", page, re.S).group(1)
    example = yaml.safe_load(block)
    params["families"].update(example["families"])
    params["panel"].update(example["panel"])
    params["birch"]["models"] = [*params["birch"]["models"], "phi-4-multimodal"]
    config = validate_params(params)
    model = PanelModel.from_params(config, "phi-4-multimodal")
    assert model.engine_args == {"max_model_len": 8192, "trust_remote_code": True}
    [adapter] = vllm_settings.adapters(model.model_id, model.fields["lora"]).values()
    assert (adapter.modality, adapter.subfolder, adapter.folder) == ("image", "vision-lora",
                                                                     None)
    assert backend_version(model).endswith(
        "+lora-" + fingerprint({"image": "hub:vision-lora"}))
    assert vllm_settings.images_per_prompt(config, "phi-4-multimodal") == 1
