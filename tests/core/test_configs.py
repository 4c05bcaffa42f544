"""configs/: the papers' panels, ready to run (issue 23, item 5).

Each params file there validates against the schema without its data (`validate
--no-data`), names every placeholder path with what belongs there and where to get it
(`validate`), and `judgebias plan --json` counts the paper's calls from the sizes it
declares, with every priced API model costed online and at its provider's batch price
side by side. The tests run in an empty folder, so the configs' relative data paths
(data/external/...) are absent and no built table of the checkout is read."""

from __future__ import annotations

import json

import pytest
import yaml
from helpers.project import REPO

from judgebias.cli import main
from judgebias.config import get_key
from judgebias.models.backends import backend_spec
from judgebias.models.base import Sampling
from judgebias.models.entry import Pricing
from judgebias.models.panel import PanelModel
from judgebias.plan import ModelPlan, Plan, cost_totals, estimate_cost, plan_table

CONFIGS = REPO / "configs"

# Per config, every params key naming a data file or folder: each is a placeholder
# (data/external/... is git-ignored) that `judgebias validate` must explain.
PLACEHOLDERS = {
    "philautia_eval.yaml": [
        "philautia.dataset.nocaps.annotations", "philautia.dataset.nocaps.image_dir",
        "pomms.datasets.nebula.path", "pomms.datasets.nebula.image_dir",
        "pomms.datasets.flickr8k_expert.path", "pomms.datasets.flickr8k_expert.image_dir"],
    "xprefeval.yaml": [
        "philautia.dataset.nocaps.annotations", "philautia.dataset.nocaps.image_dir"],
    "mmb.yaml": [
        "mmb.dataset.hpdv2.test", "mmb.dataset.hpdv2.train", "mmb.dataset.hpdv2.image_root",
        "mmb.dataset.mjbench.path", "mmb.dataset.mjbench.image_root"],
    "birch.yaml": [
        "birch.datasets.mllm_judge.path", "birch.datasets.mllm_judge.images",
        "birch.datasets.vl_rewardbench.path", "birch.datasets.vl_rewardbench.images"],
    "frame.yaml": [
        "frame.dataset.table.path", "frame.dataset.table.image_root",
        "frame.beauty.weights", "frame.beauty.face_models"],
}
FOLDERS = ("image_dir", "image_root", "images", "face_models")


@pytest.fixture
def offline(tmp_path, monkeypatch):
    """An empty working folder (no data/, no journal) and the API-key variables the
    configs name set to a dummy (no call is made: validate and plan only read them)."""
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(name, "not-a-key")


def config(name: str) -> dict:
    return yaml.safe_load((CONFIGS / name).read_text())


def plan_of(name: str, capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(["--params", str(CONFIGS / name), "plan", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def requests(result: dict) -> dict[str, int]:
    return {row["model"]: row["requests"] for row in result["models"]}


def by_study(result: dict, study: str) -> dict[str, int]:
    return {row["model"]: row["requests"] for row in result["studies"]
            if row["study"] == study}


def test_every_config_has_its_placeholders_listed():
    assert sorted(p.name for p in CONFIGS.glob("*.yaml")) == sorted(PLACEHOLDERS)


@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_a_config_validates_without_its_data(name, offline, capsys):
    assert main(["--params", str(CONFIGS / name), "validate", "--no-data"]) == 0
    out = capsys.readouterr().out
    assert f"{CONFIGS / name}: valid" in out
    assert "--no-data" in out  # says what it did not check


@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_validate_explains_each_placeholder(name, offline, capsys):
    """Exit 2, one line per placeholder naming the key and the path, with what belongs
    there and where to get it, and the command that checks the rest."""
    assert main(["--params", str(CONFIGS / name), "validate"]) == 2
    err = capsys.readouterr().err
    assert f"{CONFIGS / name}: valid, but {len(PLACEHOLDERS[name])} path(s)" in err
    lines = {line.strip().split(":")[0]: line.strip() for line in err.splitlines()}
    params = config(name)
    for key in PLACEHOLDERS[name]:
        kind = "folder" if key.rsplit(".", 1)[1] in FOLDERS else "file"
        line = lines[key]
        assert line.startswith(f"{key}: {kind} {get_key(params, key)} does not exist -- ")
        assert len(line.split(" -- ", 1)[1]) > 20, line  # what belongs there, where from
    assert f"judgebias --params {CONFIGS / name} validate --no-data" in err


@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_plan_costs_every_api_model_online_and_at_batch_price(name, offline, capsys):
    result = plan_of(name, capsys)
    panel = config(name)["panel"]
    assert {row["model"] for row in result["models"]} == set(panel)
    for row in result["models"]:
        model = panel[row["model"]]
        if model["backend"] == "vllm":
            assert row["cost_online_usd"] == row["cost_batch_usd"] == "-"
            assert row["gpus"] == model["resources"]["gpus"] >= 1
            assert row["mode"] == "local"
            continue
        online, batch = row["cost_online_usd"], row["cost_batch_usd"]
        assert online > 0
        # the provider's batch price is half the online one (specs/batch.md §1-2)
        price = backend_spec(model["backend"]).batch
        assert price is not None and price.price == 0.5
        assert batch == pytest.approx(online * price.price, abs=0.01)
        assert row["mode"] == ("batch" if model.get("batch") else "online")
        assert row["est_cost_usd"] == (batch if model.get("batch") else online)
    total = result["total"]
    api = [row for row in result["models"] if row["cost_online_usd"] != "-"]
    assert total["cost_online_usd"] == pytest.approx(sum(r["cost_online_usd"] for r in api),
                                                     abs=0.05)
    assert total["cost_batch_usd"] == pytest.approx(sum(r["cost_batch_usd"] for r in api),
                                                    abs=0.05)
    assert total["cost_usd"] == pytest.approx(sum(r["est_cost_usd"] for r in api), abs=0.05)
    assert total["needed"] == total["requests"] > 0  # nothing journaled
    assert total["estimated"] > 0  # counted from the declared sizes: no data here


def test_philautia_eval_plans_the_papers_calls(offline, capsys):
    """Seed 000 §5: 12 models on 4,500 images: 54,000 captions and 1,296,000 scores
    (12 evaluators x 12 generators x 4,500 images x 2 settings); Pomms (§6.3, App. A.2):
    every evaluator on Nebula's 32,978 and Flickr8k-Expert's 5,664 captions."""
    result = plan_of("philautia_eval.yaml", capsys)
    philautia = by_study(result, "philautia")
    assert len(philautia) == 12
    assert set(philautia.values()) == {4_500 + 12 * 4_500 * 2}
    assert sum(philautia.values()) == 54_000 + 1_296_000
    assert set(by_study(result, "pomms").values()) == {32_978 + 5_664}
    assert [r["mode"] for r in result["models"] if r["backend"] != "vllm"] == \
        ["batch", "batch"]  # GPT-4o and Gemini 2.5 Pro through their batch APIs


def test_xprefeval_plans_the_second_panel(offline, capsys):
    """Seed 001 §4: 8 models, both settings; 4,500 nocaps images assumed (seed 000 §5)."""
    assert set(requests(plan_of("xprefeval.yaml", capsys)).values()) == {4_500 + 8 * 4_500 * 2}


def test_mmb_plans_the_papers_pairs_times_the_pool(offline, capsys):
    """Seed 002 §5: C(9, 2) x 400 = 14,400 test pairs, plus 1,000 validation candidates,
    each under every instruction of the pool (44 built-in + 44 rephrasings); MJ-Bench's
    pairs are not counted before its file is there (the config declares no size)."""
    result = plan_of("mmb.yaml", capsys)
    assert requests(result) == {"gpt-4o": (14_400 + 1_000) * 88, "gpt-4o-writer": 44}
    assert any("MJ-Bench pairs" in row["what"] for row in result["not_counted"])


def test_birch_plans_every_variant_on_both_benchmarks(offline, capsys):
    """Seed 003 App. B: MLLM-as-a-Judge 7,756 pairs and VL-RewardBench's 1,250 rows;
    each judge: 6 variants and 3 preparatory passes (reference, caption, anchor) per
    pair; GPT-4o also labels both orders (Fig. 18) and lengthens (C.5)."""
    result = requests(plan_of("birch.yaml", capsys))
    pairs = 7_756 + 1_250
    assert len(result) == 8
    assert result.pop("gpt-4o") == pairs * 9 + 2 * pairs + pairs
    assert set(result.values()) == {pairs * 9}
    gpus = {key: m["resources"]["gpus"] for key, m in config("birch.yaml")["panel"].items()
            if m["backend"] == "vllm"}
    assert gpus["llama-3-2-vision-90b"] == 8 and gpus["llava-1-6-34b"] == 2


def test_frame_plans_the_grid_for_nine_judges(offline, capsys):
    """Seed 004 §4: 500 items, 100 per domain; App. B.3's grid: 16 brightness and 16 gamma
    factors, 5 positions of each overlay, 7 paddings, bounding boxes and the beauty filter;
    keyword overlay and boxes skip Outdoor (§5 footnote 2), the beauty filter is People
    only (Table 4). GPT-4.1-mini also runs §6's follow-ups."""
    result = requests(plan_of("frame.yaml", capsys))
    grid = 500 * (1 + 16 + 16 + 5 + 5 + 7) + 400 * (5 + 1) + 100
    assert grid == 27_500
    assert len(result) == 9
    assert result.pop("gpt-4-1-mini") > grid
    assert set(result.values()) == {grid}


@pytest.mark.parametrize(("name", "key", "named"), [
    ("philautia_eval.yaml", "pomms.datasets.nebula.n_items", "pomms.datasets.nebula.n_items"),
    ("mmb.yaml", "mmb.dataset.hpdv2.n_test_groups", "mmb.dataset.hpdv2.n_test_groups"),
    ("birch.yaml", "birch.datasets.mllm_judge.n_pairs", "birch.datasets.mllm_judge.n_pairs"),
    ("frame.yaml", "frame.dataset.table.n_per_domain", "frame.dataset.table.n_per_domain"),
])
def test_data_without_a_declared_size_is_listed_as_not_counted(name, key, named, offline,
                                                              tmp_path, capsys):
    """Without the size a block declares, plan cannot count a dataset not downloaded: it
    says so, naming the key to declare, instead of failing or counting nothing silently."""
    params = config(name)
    *parents, last = key.split(".")
    del get_key(params, ".".join(parents))[last]
    path = tmp_path / name
    path.write_text(yaml.safe_dump(params))
    assert main(["--params", str(path), "plan", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert any(named in row["what"] for row in result["not_counted"]), result["not_counted"]


def test_a_file_downloaded_without_its_images_is_counted_from_its_rows(offline, tmp_path,
                                                                        capsys):
    """The real Flickr8k-Expert and VL-RewardBench files (../shared/data, text only): with
    the file there but not its images, plan counts the file's items, not the declared
    size."""
    from helpers.project import shared_data_dir

    flickr = shared_data_dir() / "caption-judgments" / "flickr8k_expert.json"
    vlrb = shared_data_dir() / "pairwise-judgments" / "vl_rewardbench.jsonl"
    if not (flickr.is_file() and vlrb.is_file()):
        pytest.skip(f"real test data not found under {shared_data_dir()}")
    params = config("philautia_eval.yaml")
    params["pomms"]["datasets"]["flickr8k_expert"].update(path=str(flickr), n_items=10)
    (tmp_path / "pomms.yaml").write_text(yaml.safe_dump(params))
    assert main(["--params", str(tmp_path / "pomms.yaml"), "plan", "--json"]) == 0
    assert set(by_study(json.loads(capsys.readouterr().out), "pomms").values()) == \
        {32_978 + 5_664}  # Appendix A.2: the file's 5,664 captions, not the 10 declared
    params = config("birch.yaml")
    params["birch"]["datasets"]["vl_rewardbench"].update(path=str(vlrb), n_pairs=10)
    (tmp_path / "birch.yaml").write_text(yaml.safe_dump(params))
    assert main(["--params", str(tmp_path / "birch.yaml"), "plan", "--json"]) == 0
    assert requests(json.loads(capsys.readouterr().out))["llava-1-5-13b"] == \
        (7_756 + 1_250) * 9  # the file's 1,250 rows


def test_online_and_batch_cost_by_hand(tmp_path):
    """10,000 calls of 400 prompt characters and one image each, at $2 / $8 per million
    input / output tokens, 100 tokens an image, output at max_tokens 50 (nothing
    journaled): input 10,000 x (400/4 + 100) = 2,000,000 tokens, output 500,000; online
    (2,000,000 x 2 + 500,000 x 8) / 1e6 = $8, at the batch price (half) $4."""
    def priced(backend: str, batch: bool) -> ModelPlan:
        model = PanelModel(key=backend, backend=backend,  # type: ignore[arg-type]
                           model_id="m", revision="", family="f",
                           sampling=Sampling(max_tokens=50), batch=batch,
                           pricing=Pricing(input_per_mtok=2.0, output_per_mtok=8.0,
                                           image_tokens=100))
        plan = ModelPlan(backend, backend, requests=10_000, needed=10_000,
                         prompt_chars=4_000_000, images=10_000, batch=batch)
        estimate_cost(plan, model, tmp_path / "no-journal.sqlite")
        return plan

    openai, gemini, local = (priced("openai", batch=True), priced("gemini", batch=False),
                             priced("vllm", batch=False))
    assert (openai.cost, openai.cost_batch, openai.cost_configured) == \
        pytest.approx((8.0, 4.0, 4.0))
    assert (gemini.cost, gemini.cost_batch, gemini.cost_configured) == \
        pytest.approx((8.0, 4.0, 8.0))
    assert (local.cost, local.cost_batch) == (pytest.approx(8.0), None)  # no batch API
    plan = Plan([openai, gemini, local], [], [])
    assert cost_totals(plan) == {"cost_online_usd": 24.0, "cost_batch_usd": 16.0,
                                 "cost_usd": 20.0, "not_priced": []}
    table = plan_table(plan).set_index("model")
    assert list(table["mode"]) == ["batch", "online", "local"]
    assert list(table["cost_batch_usd"]) == [4.0, 4.0, "-"]
    assert list(table["est_cost_usd"]) == [4.0, 8.0, 8.0]


def test_calls_not_keyed_yet_are_sized_by_their_template(tmp_path):
    """An estimated call of a task counts its template's text (fields empty) and its
    images: caption_llava_ov is 54 characters and one image, so 8 such calls at $1 per
    million input tokens, 10 tokens an image, max_tokens 1 at $0: 8 x (54/4 + 10) =
    188 tokens, $0.000188."""
    from judgebias.judging.tasks import FreeText, JudgeTask
    from judgebias.plan import template_size

    task = JudgeTask(prompt="caption_llava_ov", answer=FreeText())
    assert template_size(task) == (54, 1)
    model = PanelModel(key="m", backend="openai", model_id="m", revision="", family="f",
                       sampling=Sampling(max_tokens=1),
                       pricing=Pricing(input_per_mtok=1.0, output_per_mtok=0.0,
                                       image_tokens=10))
    plan = ModelPlan("m", "openai", requests=8, needed=8, estimated=8, sized=8,
                     prompt_chars=8 * 54, images=8)
    estimate_cost(plan, model, tmp_path / "no-journal.sqlite")
    assert plan.cost == pytest.approx(188e-6)


@pytest.mark.parametrize(("name", "key", "version"), [
    ("frame.yaml", "o3", "openai-chat-1+reasoning-medium"),
    # the papers set no thinking budget: the models' own dynamic thinking, no
    # thinking_config, so keys journaled before issue 41 still answer
    ("birch.yaml", "gemini-2-5-flash", "gemini-generate-1"),
    ("philautia_eval.yaml", "gemini-2-5-pro", "gemini-generate-1"),
    ("frame.yaml", "gpt-4-1", "openai-chat-1"),
])
def test_reasoning_and_thinking_models_are_asked_as_such(name, key, version, offline):
    """Issue 41: o3 is sent as a reasoning model (effort, max_completion_tokens, nothing it
    refuses); its journal version says so, and every other model's keys are as before,
    the Gemini 2.5 models' included (no thinking budget set)."""
    from judgebias.config import validate_params
    from judgebias.models.openai_wire import chat_body
    from judgebias.models.reasoning import Reasoning
    from judgebias.models.registry import backend_version

    model = PanelModel.from_params(validate_params(config(name), data=False), key)
    assert backend_version(model) == version
    reasoning = Reasoning.of(model.fields)
    if model.backend == "openai":
        from judgebias.models.base import ChatRequest

        body = chat_body(ChatRequest(model.model_id, "Score it.", sampling=model.sampling),
                         reasoning)
        limit = "max_tokens" if reasoning is None else "max_completion_tokens"
        assert body[limit] == model.sampling.max_tokens
        assert ("temperature" in body) == (reasoning is None)


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PLACEHOLDERS))
def test_a_configs_workflow_parses_and_exports_once_its_data_are_there(name, tmp_path,
                                                                       monkeypatch):
    """With every placeholder path present (empty stand-ins), the paper's panel builds its
    DAG and its dvc.yaml: its panel keys (gpt-4-1, not gpt-4.1) are dotted key paths'
    names, and the params stage declares the blocks the file writes, whatever keys of
    them it leaves to their defaults."""
    from helpers.project import BIN, make_project, run

    for variable in ("OPENAI_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.setenv(variable, "not-a-key")
    params = config(name)
    (tmp_path / "project").mkdir()
    project = make_project(tmp_path / "project", params)
    for key in PLACEHOLDERS[name]:
        path = project / get_key(params, key)
        if key.rsplit(".", 1)[-1] in FOLDERS:
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.touch()
    run([str(BIN / "snakemake"), "--dry-run", "--cores", "1", "--quiet"], project)
    run([str(BIN / "judgebias"), "export-dvc"], project)
    assert (project / "dvc.yaml").read_text().count("cmd:") > 1
