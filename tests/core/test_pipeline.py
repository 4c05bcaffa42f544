"""The pipeline through both front doors, on a small real project (issue: incrementality).

Each test copies the workflow into a temporary project with a small params.yaml (3 of the
default models, 12 images), runs it for real, then changes one thing and checks with
`snakemake --dry-run` / `dvc repro --dry` that exactly the affected jobs are scheduled.
DVC's front door running and recording for real is tests/core/test_front_doors.py.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
from collections import Counter
from pathlib import Path

import pandas as pd
import pytest
import yaml
from helpers.project import (
    BIN,
    PANEL,
    REPO,
    job,
    job_resources,
    make_project,
    planned_jobs,
    run,
    study_params,
    write_params,
)

from judgebias.workflow.dvc_export import CODE_DIR, CODE_STAGE, PARAMS_STAGE
from judgebias.workflow.paramstamp import PARAMS_DIR

SETTINGS = ["ref_based", "ref_free"]
POMMS_SETTING = "ref_free"  # pomms.setting: its Phi-tilde and philautia scores
JUDGEMENT_SETTING = "ref_based"  # pomms.judgement_setting: scores the judgement items


def downstream(settings: list[str]) -> Counter:
    """Analysis of the settings, Pomms (which reads its setting's scores), the judge card
    and the report."""
    jobs = Counter(job(r, setting=s) for s in settings
                   for r in ("phi", "philautia", "selfpref", "heatmaps"))
    jobs.update([job("pomms"), job("pomms_heatmap"), job("card"), job("report")])
    return jobs


def item_scores(evaluators) -> Counter:
    return Counter(job("judge_items", setting=JUDGEMENT_SETTING, dataset="synthetic",
                       evaluator=e)
                   for e in evaluators)


def scores(settings, evaluators, generators) -> Counter:
    return Counter(job("score", setting=s, evaluator=e, generator=g)
                   for s in settings for e in evaluators for g in generators)


@pytest.fixture
def project(tmp_path, default_params) -> Path:
    return make_project(tmp_path, study_params(default_params, "philautia", "pomms", small=True))


@pytest.mark.slow
def test_snakemake_runs_and_reruns_only_what_changed(project, default_params):
    # plain snakemake, every job a cold process (the other pipeline tests run warm)
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project, warm=False)
    assert (project / "results/report.html").stat().st_size > 10_000
    for setting in SETTINGS:
        metrics = json.loads((project / f"results/philautia/{setting}/metrics.json").read_text())
        assert set(metrics["philautia"]) == set(PANEL)
    # the card: philautia's and Pomms' rows for exactly the judged models, and Pomms' fix
    # tested against each of them (the same number as the agreement table)
    card = pd.read_parquet(project / "results/judges.parquet")
    assert set(card["model"]) == set(PANEL) and set(card["study"]) == {"philautia", "pomms"}
    gains = card[card["measure"] == "pomms_gain"].set_index("model")
    agreement = pd.read_parquet(project / "results/pomms/agreement.parquet")
    test = agreement[agreement["split"] == "test"].set_index("metric")
    assert set(gains.index) == set(PANEL) and gains["p_value"].between(0, 1).all()
    for model, gain in gains.iterrows():
        assert gain["estimate"] == test.loc[model, "tau_b_diff"]

    # (a) nothing changed: zero jobs
    assert planned_jobs(project) == Counter()

    # (b) the reference-free evaluator prompt changes: its score jobs and what follows
    # (the judgement items are scored with the reference-based prompt: not rerun)
    template = project / "src/judgebias/prompts/templates/gveval_ref_free.txt"
    original = template.read_text()
    template.write_text(original + " ")
    assert planned_jobs(project) == (scores(["ref_free"], PANEL, PANEL)
                                     + downstream(["ref_free"]))
    template.write_text(original)
    assert planned_jobs(project) == Counter()

    # (b) a study setting of the analysis changes: only the analysis, never a model call
    params = study_params(default_params, "philautia", "pomms", small=True)
    params["philautia"]["ddof"] = 1
    write_params(project, params)
    expected = Counter(job(r, setting=s) for s in SETTINGS
                       for r in ("philautia", "selfpref", "heatmaps"))
    expected.update([job("pomms"), job("pomms_heatmap"), job("card"), job("report")])
    assert planned_jobs(project) == expected

    # (c) one model joins a panel of M: its caption job, its score jobs on all M+1
    # generators, the M existing evaluators' jobs on its captions, and the analysis
    params = study_params(default_params, "philautia", "pomms", small=True)
    params["philautia"]["models"].append("corvid-lite")
    write_params(project, params)
    new, panel = "corvid-lite", [*PANEL, "corvid-lite"]
    expected = Counter([job("caption", generator=new)])
    expected += scores(SETTINGS, [new], panel) + scores(SETTINGS, PANEL, [new])
    expected += item_scores([new]) + downstream(SETTINGS)
    assert planned_jobs(project) == expected
    assert sum(expected.values()) == 1 + 2 * (len(panel) + len(PANEL)) + 1 + 12


def dvc_graph(project: Path) -> dict[str, dict]:
    run([str(BIN / "judgebias"), "export-dvc", "--out", "dvc.graph.yaml"], project)
    return yaml.safe_load((project / "dvc.graph.yaml").read_text())["stages"]


def _outs(stage: dict) -> set[str]:
    """A stage's outs, metrics and plots (an entry is a path, or {path: options})."""
    return {o if isinstance(o, str) else next(iter(o))
            for key in ("outs", "metrics", "plots") for o in stage.get(key, [])}


def code_stamps(stages: dict[str, dict]) -> dict[str, list[str]]:
    """Each rule's code stamp and the files it hashes, from the `code` stage's command
    (`judgebias plumbing code-stamp --out STAMP FILE... --out STAMP FILE...`)."""
    from judgebias.workflow.codestamp import stamps_of
    from judgebias.workflow.dvcsync import stage_args

    assert stages[CODE_STAGE]["cmd"].startswith("judgebias plumbing code-stamp ")
    return stamps_of(stage_args(stages[CODE_STAGE]).out)


def stages_to_rerun(stages: dict[str, dict], changed: str) -> Counter:
    """Per rule, the jobs that declare `changed` or the code stamp of a rule whose files
    include it, and every job downstream of them (the stamp stages have no Snakemake
    counterpart: left out)."""
    stamps = {stamp for stamp, files in code_stamps(stages).items() if changed in files}
    hit = {name for name, stage in stages.items() if name != CODE_STAGE
           and ({changed} | stamps) & set(stage.get("deps", ()))}
    grew = True
    while grew:
        outs = set().union(*(_outs(stages[name]) for name in hit))
        more = {name for name, stage in stages.items()
                if any(d in outs or any(d.startswith(o + "/") for o in outs)
                       for d in stage.get("deps", ()))}
        grew = not more <= hit
        hit |= more
    return Counter(name.split("__")[0] for name in hit)


def declared_files(stages: dict[str, dict], stage: dict) -> list[str]:
    """A job stage's deps with its code stamp replaced by the files the stamp hashes."""
    stamps = code_stamps(stages)
    return [f for d in stage["deps"] for f in stamps.get(d, [d])]


@pytest.mark.slow
def test_editing_a_module_reruns_exactly_the_rules_whose_steps_import_it(project):
    """Code dependencies are derived from each step's imports (judgebias.workflow.codedeps):
    touching one module schedules the jobs whose step imports it and what depends on them,
    nothing else; the test server is no job's dependency."""
    run([str(BIN / "snakemake"), "--cores", "2", "--quiet"], project)
    stages = dvc_graph(project)
    for module in ("report/figures.py", "studies/pomms/estimator.py", "models/sim.py",
                   "studies/philautia/measures.py", "judging/expected.py",
                   "devtools/serve_sim/server.py", "studies/pomms/report.py"):
        path = project / "src/judgebias" / module
        original = path.read_text()
        path.write_text(original + "# edited\n")  # Snakemake compares content, not mtime
        planned = Counter(rule for (rule, _), n in planned_jobs(project).items()
                          for _ in range(n))
        path.write_text(original)
        assert planned == stages_to_rerun(stages, f"src/judgebias/{module}"), module
    assert stages_to_rerun(stages, "src/judgebias/devtools/serve_sim/server.py") == Counter()
    assert planned_jobs(project) == Counter()

    # Every project module a step imports at run time is a declared input, except the
    # dispatch layer every command shares to parse its arguments (codedeps docstring).
    from judgebias.workflow.codedeps import dispatch_modules

    dispatch = dispatch_modules()
    seen_rules = set()
    for name, stage in stages.items():
        rule = name.split("__")[0]
        if rule in seen_rules or name in (CODE_STAGE, PARAMS_STAGE):
            continue  # the stamp stages: no rule, no step
        seen_rules.add(rule)
        argv = stage["cmd"].split()[1:]
        probe = ("import sys; from judgebias.cli import main; code = main(sys.argv[1:]); "
                 "print(' '.join(sorted(m for m in sys.modules if m.startswith('judgebias'))))"
                 "; sys.exit(code)")
        out = run([sys.executable, "-c", probe, *argv], project).stdout.split()
        declared = {d.removeprefix("src/").removesuffix(".py").removesuffix("/__init__")
                    .replace("/", ".") for d in declared_files(stages, stage)
                    if d.startswith("src/")}
        undeclared = set(out) - declared - dispatch
        assert not undeclared, f"{rule}: imports {sorted(undeclared)} it does not declare"


@pytest.mark.slow
def test_params_without_pomms_run_philautia_only(tmp_path, default_params):
    project = make_project(tmp_path, study_params(default_params, "philautia", small=True))
    rules = {rule for rule, _ in planned_jobs(project)}
    assert "pomms" not in rules and "judge_items" not in rules
    assert {"caption", "score", "phi", "philautia", "report"} <= rules


@pytest.mark.slow
def test_committed_dvc_yaml_is_derived_from_the_dag(tmp_path):
    from judgebias.workflow.dvc_export import render_dvc_yaml

    committed = (REPO / "dvc.yaml").read_text()
    cwd = os.getcwd()
    try:
        assert render_dvc_yaml(REPO / "Snakefile") == committed, (
            "dvc.yaml is stale: run `judgebias export-dvc` and commit it")
    finally:
        os.chdir(cwd)


def test_job_stages_declare_their_rules_code_stamp():
    """One stage writes every rule's code stamp, the stamp of the rule's source files;
    the rule's jobs declare the stamp instead of any of the files (dvc_export)."""
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    code = stages[CODE_STAGE]
    stamps = code_stamps(stages)
    jobs = {n: s for n, s in stages.items() if n not in (CODE_STAGE, PARAMS_STAGE)}
    assert {f"{CODE_DIR}/{name.split('__')[0]}.json" for name in jobs} == set(stamps)
    for name, stage in jobs.items():
        stamp = f"{CODE_DIR}/{name.split('__')[0]}.json"
        assert stamp in stage["deps"], name
        assert not set(stage["deps"]) & set(code["deps"]), name
        assert not [d for d in stage["deps"] if d.endswith(".py")], name
    assert code["outs"] == [{stamp: {"cache": True}} for stamp in sorted(stamps)]
    assert code["deps"] == sorted({f for files in stamps.values() for f in files})
    for files in stamps.values():
        assert "src/judgebias/study.py" in files == sorted(files)


def test_job_stages_depend_on_the_stamps_of_their_params():
    """No job stage declares DVC params (DVC would parse params.yaml once per stage): each
    depends on the stamp of the keys its rule declares, and the one `params` stage writes
    exactly those stamps and declares the sections they lie in (dvc_export)."""
    from judgebias.workflow.paramstamp import SEPARATOR, stamp_path

    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    stage = stages.pop(PARAMS_STAGE)
    assert not [name for name, job_stage in stages.items() if "params" in job_stage]
    used = {d for job_stage in stages.values() for d in job_stage["deps"]
            if d.startswith(PARAMS_DIR + "/")}
    cmd = stage["cmd"].split()
    assert cmd[:5] == ["judgebias", "plumbing", "params-stamp", "--out", PARAMS_DIR]
    sets = {stamp_path(keys.split(SEPARATOR)): keys.split(SEPARATOR) for keys in cmd[5:]}
    assert list(sets) == sorted(sets) == sorted(used)
    assert stage["outs"] == [{stamp: {"cache": True}} for stamp in sets]
    assert stage["params"] == sorted({k.split(".")[0] for keys in sets.values() for k in keys})
    assert {"panel", "philautia", "seed"} <= set(stage["params"])
    philautia = [d for d in stages["philautia__ref_free"]["deps"] if d in sets]
    assert len(philautia) == 1 and "philautia.ddof" in sets[philautia[0]]


def test_params_stamp_changes_with_its_keys_only(tmp_path, monkeypatch):
    """A stamp is its keys' values as sorted JSON, named by the set of keys, rewritten only
    when a value changes (its mtime, DVC's state entry, stays); a key the file leaves out
    stamps its default, one neither sets is named."""
    from judgebias.cli import main
    from judgebias.config import ConfigError
    from judgebias.workflow.paramstamp import stamp_path, write_param_stamps

    monkeypatch.chdir(tmp_path)
    params = {"seed": 1, "panel": {"a": {"temperature": 0.5, "family": "x"}}}
    sets = [["seed", "panel.a"], ["panel.a.family"]]
    assert stamp_path(["panel.a", "seed"], "s") == stamp_path(sets[0], "s") != stamp_path(
        sets[1], "s")

    def stamp() -> list[tuple[str, int]]:
        (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
        assert main(["plumbing", "params-stamp", "--out", "s", *(",".join(k) for k in sets)]) == 0
        return [(Path(stamp_path(k, "s")).read_text(), Path(stamp_path(k, "s")).stat()
                 .st_mtime_ns) for k in sets]

    before = stamp()
    assert json.loads(before[0][0]) == {"panel.a": params["panel"]["a"], "seed": 1}
    os.utime(stamp_path(sets[1], "s"), ns=(0, 0))  # an unchanged stamp keeps its mtime
    params["panel"]["a"]["temperature"] = 0.7
    after = stamp()
    assert after[0][0] != before[0][0] and after[1] == (before[1][0], 0)
    with pytest.raises(ConfigError, match=re.escape("no value for params keys panel.b, mmb")):
        write_param_stamps([["seed", "panel.b"], ["mmb"]], root=tmp_path)
    # a key the file leaves out stamps its schema default, the value the job reads
    write_param_stamps([["max_failures"]], root=tmp_path, out="s")
    assert json.loads(Path(stamp_path(["max_failures"], "s")).read_text()) == {
        "max_failures": {}}


def test_code_stamp_changes_with_a_listed_file(tmp_path, monkeypatch, capsys):
    from judgebias.cli import main

    monkeypatch.chdir(tmp_path)
    for name in ("a.py", "b.py"):
        (tmp_path / name).write_text(name)

    def stamp() -> tuple[dict[str, str], dict[str, str], int]:
        assert main(["plumbing", "code-stamp", "--out", "code/x.json", "a.py", "b.py",
                     "--out", "code/y.json", "a.py"]) == 0
        y = tmp_path / "code/y.json"
        return (json.loads((tmp_path / "code/x.json").read_text()),
                json.loads(y.read_text()), y.stat().st_mtime_ns)

    before = stamp()
    sha = {n: hashlib.sha256(n.encode()).hexdigest() for n in ("a.py", "b.py")}
    assert before[:2] == (sha, {"a.py": sha["a.py"]})
    (tmp_path / "b.py").write_text("b.py # edited")
    after = stamp()
    assert after[0]["a.py"] == before[0]["a.py"] and after[0]["b.py"] != before[0]["b.py"]
    assert after[1:] == before[1:]  # y's files did not change: y is not rewritten
    for bad, said in ((["--out", "x.json"], "x.json: names no file"),
                      (["--out", "x.json", "a.py", "--out", "x.json", "b.py"],
                       "x.json: given twice")):
        assert main(["plumbing", "code-stamp", *bad]) == 2
        assert said in capsys.readouterr().err


def test_one_code_stamp_per_rule_needs_the_same_code_in_every_job():
    from types import SimpleNamespace

    from judgebias.workflow.dvc_export import _code_stage

    def job(rule: str, setting: str, files: list[str]) -> SimpleNamespace:
        return SimpleNamespace(rule=SimpleNamespace(name=rule), input={"code": files},
                               wildcards_dict={"setting": setting})

    stage = _code_stage([job("score", "a", ["x.py", "y.py"]),
                         job("score", "b", ["y.py", "x.py"]), job("phi", "a", ["z.py"]),
                         job("pomms", "a", [])])[CODE_STAGE]
    assert stage == {
        "cmd": "judgebias plumbing code-stamp --out .judgebias/code/phi.json z.py "
               "--out .judgebias/code/score.json x.py y.py",
        "deps": ["x.py", "y.py", "z.py"],
        "outs": [{".judgebias/code/phi.json": {"cache": True}},
                 {".judgebias/code/score.json": {"cache": True}}]}
    assert _code_stage([job("pomms", "a", [])]) == {}
    with pytest.raises(ValueError, match="rule score: jobs score__a and score__b declare "
                                         "different code files"):
        _code_stage([job("score", "a", ["x.py"]), job("score", "b", ["x.py", "y.py"])])


def test_export_refuses_params_blocks_the_file_does_not_set(tmp_path):
    """DVC reads params from the file, not from our schema's defaults (b2e8e66, 962e525:
    `dvc commit` failed on keys only the schema set): the export names them first. The
    params stage declares the top-level blocks (the stamps say which keys a job reads), so
    a key left to its default inside a block the file has is no problem: the paper
    configs leave most of them out."""
    from judgebias.config import ConfigError
    from judgebias.workflow.dvc_export import check_params_declared

    params = tmp_path / "params.yaml"
    params.write_text("frame:\n  models: [a]\n  prompts: {}\n")
    stages = {"frame_score__a": {"params": ["frame.models", "frame.prompts"]},
              "frame_render__tone": {"params": ["frame.resize_back", "frame.models"]},
              "mmb_judge__a": {"params": ["mmb.prompt"]}}
    with pytest.raises(ConfigError) as info:
        check_params_declared(stages, params)
    message = str(info.value)
    assert str(params) in message
    assert "mmb (declared by stage mmb_judge__a)" in message
    assert "frame" not in message.replace(str(params), "")
    check_params_declared({k: v for k, v in stages.items() if k != "mmb_judge__a"}, params)


def test_exported_commands_survive_dvc_lock_folding():
    """dvc.lock folds long commands; a fold at a double space lost one and `dvc status`
    called the stage changed right after `dvc commit` (seen with a model named
    corvid-flash): commands are exported with single spaces, and quoting is refused."""
    from types import SimpleNamespace

    from judgebias.workflow.dvc_export import _command

    job = SimpleNamespace(rule=SimpleNamespace(name="birch_judge"),
                          shellcmd="judgebias birch-judge --pairs p.parquet  --out o.parquet\n")
    assert _command(job) == "judgebias birch-judge --pairs p.parquet --out o.parquet"
    job.shellcmd = "judgebias x --prompt 'two  spaces'"
    with pytest.raises(ValueError, match="rule birch_judge: quoted shell command"):
        _command(job)
    stages = yaml.safe_load((REPO / "dvc.yaml").read_text())["stages"]
    assert not [name for name, stage in stages.items() if "  " in stage["cmd"]]


def test_every_rule_has_a_log_and_declares_params():
    """Every study rule runs its step through `judgebias plumbing step` with the files it names
    (judgebias.workflow.step_dispatch), declares the params it reads and derives its code; the
    report and the judge card rules are the core's commands."""
    blocks = [block for path in sorted((REPO / "workflow/rules").glob("*.smk"))
              for block in re.split(r"\n *rule ", path.read_text())[1:]]
    assert len(blocks) >= 40
    for block in blocks:
        name = block.split(":", 1)[0]
        assert re.search(r"\n +log:", block), f"rule {name} has no log"
        assert 'code=step_code("' in block, f"rule {name}: code not derived from its step"
        if name in ("report", "card"):
            assert "dvc_params=" in block
            continue
        assert "**step_params(" in block, f"rule {name} declares no params"
        assert re.search(r'\n +shell:\n +step\("\w+\.\w+"\)', block), (
            f"rule {name} does not run a study step")


@pytest.mark.slow
def test_bad_params_stop_snakemake_before_any_job(tmp_path, default_params):
    params = study_params(default_params, "philautia", "pomms", small=True)
    params["philautia"]["models"].append("gpt-9")
    project = make_project(tmp_path, params)
    result = run([str(BIN / "snakemake"), "--dry-run", "--cores", "1"], project, check=False)
    assert result.returncode != 0
    assert "philautia.models[3]: model 'gpt-9' is referenced but not defined" in (
        result.stdout + result.stderr)
    assert not (project / "data").exists() and not (project / ".judgebias").exists()


@pytest.mark.slow  # two Snakemake dry runs of a project (11 s)
def test_jobs_request_gpus_and_api_units_from_the_panel(tmp_path, default_params):
    """vllm jobs request their model's GPUs, API jobs a unit of their provider, sim and
    batch-mode API jobs neither; locally and through the SLURM profile (a dry run needs
    no cluster)."""
    params = study_params(default_params, "philautia", "pomms", small=True)
    vllm = params["panel"]["lumen-mini"]
    vllm.pop("sim")
    vllm.update(backend="vllm", model_id="Qwen/Qwen2.5-VL-7B-Instruct",
                resources={"gpus": 2, "mem_mb": 32000})
    api = params["panel"]["corvid-pro"]
    api.pop("sim")
    api.update(backend="openai", api_key_env="OPENAI_API_KEY")
    batch = params["panel"]["lumen-large"]  # batch mode: its jobs only poll, no API unit
    batch.pop("sim")
    batch.update(backend="openai", api_key_env="OPENAI_API_KEY", batch=True)
    project = make_project(tmp_path, params)
    expected = {"lumen-mini": ("2", "0"), "corvid-pro": ("0", "1"), "lumen-large": ("0", "0")}
    for extra in ([], ["--profile", str(REPO / "workflow/profiles/slurm")]):
        jobs = job_resources(project, *extra)
        for (rule, wildcards), resources in jobs.items():
            if rule not in ("caption", "score"):
                continue
            runner = dict(wildcards)["generator" if rule == "caption" else "evaluator"]
            assert (resources["gpu"], resources["api_openai"]) == expected[runner], (
                rule, wildcards, resources)
        assert jobs[("caption", (("generator", "lumen-mini"),))]["mem_mb"] == "32000"
