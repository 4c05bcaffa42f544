"""The README's panel example is a valid params.yaml fragment (docs that cannot drift)."""

from __future__ import annotations

import re

import yaml
from helpers.project import REPO

from judgebias.config import validate_params
from judgebias.study import study_models


def test_readme_panel_example_validates(params):
    readme = (REPO / "README.md").read_text()
    block = re.search(r"```yaml\n(families:\n.*?)```", readme, re.S).group(1)
    example = yaml.safe_load(block)
    params["families"].update(example["families"])
    params["panel"].update(example["panel"])
    params["backends"] = example["backends"]
    params["philautia"]["models"] = list(example["panel"])
    config = validate_params(params)
    assert {config["panel"][m]["backend"] for m in example["panel"]} == {
        "vllm", "openai", "gemini"}
    assert study_models(config, "philautia") == list(example["panel"])


def test_readme_names_only_commands_that_exist():
    """Every `judgebias <command>` and `make <target>` the README tells a user to type
    (in a code block or a code span) exists (issue 19: the README tells the truth)."""
    from judgebias.cli import build_parser

    readme = (REPO / "README.md").read_text()
    code = "\n".join([*re.findall(r"```\w*\n(.*?)```", readme, re.S),
                      *re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", readme, flags=re.S))])
    commands = set(build_parser()._subparsers._group_actions[0].choices)  # argparse's table
    named = set(re.findall(r"(?<![\w/.-])judgebias (?:--params \S+ )?([a-z][a-z-]+)", code))
    assert named and named <= commands, sorted(named - commands)
    targets = set(re.findall(r"^([a-z-]+):", (REPO / "Makefile").read_text(), re.M))
    made = set(re.findall(r"(?<![\w-])make ([a-z][a-z-]+)", code))
    assert made and made <= targets, sorted(made - targets)


def _yaml_block(readme: str, first_line: str) -> dict:
    return yaml.safe_load(re.search(rf"```yaml\n{re.escape(first_line)}\n(.*?)```", readme,
                                    re.S).group(1))


def test_readme_slurm_examples_are_what_runs(params):
    """The cluster section's GPU panel validates and splits its vllm model over its two
    GPUs; its partitions.yaml lines are the shipped file's."""
    from judgebias.models.panel import PanelModel

    readme = (REPO / "README.md").read_text()
    example = _yaml_block(readme, "# slurm panel")
    params["families"].update(example["families"])
    params["panel"].update(example["panel"])
    config = validate_params(params)
    qwen = PanelModel.from_params(config, "qwen2.5-vl-72b")
    assert qwen.gpus == 2 and qwen.engine_args["tensor_parallel_size"] == 2
    shipped = yaml.safe_load((REPO / "workflow/profiles/slurm/partitions.yaml").read_text())
    assert _yaml_block(readme, "# workflow/profiles/slurm/partitions.yaml") == shipped
