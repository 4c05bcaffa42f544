"""The YAML examples and commands of the README and the docs site are what runs (docs that
cannot drift): each panel example is a valid params.yaml fragment, each command exists."""

from __future__ import annotations

import re

import yaml
from helpers.project import REPO

from judgebias.config import validate_params
from judgebias.study import study_models

# The README and every page of the docs site (mkdocs.yml, docs/)
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def _text(path: str) -> str:
    return (REPO / path).read_text()


def _yaml_block(text: str, first_line: str) -> dict:
    return yaml.safe_load(re.search(rf"```yaml\n{re.escape(first_line)}\n(.*?)```", text,
                                    re.S).group(1))


def _families_block(text: str) -> dict:
    """The first ```yaml block of `text` that starts with `families:`."""
    return yaml.safe_load(re.search(r"```yaml\n(families:\n.*?)```", text, re.S).group(1))


def test_backends_panel_example_validates(params):
    """docs/backends.md's panel (moved from the README): valid, one model per backend."""
    example = _families_block(_text("docs/backends.md"))
    params["families"].update(example["families"])
    params["panel"].update(example["panel"])
    params["backends"] = example["backends"]
    params["philautia"]["models"] = list(example["panel"])
    config = validate_params(params)
    assert {config["panel"][m]["backend"] for m in example["panel"]} == {
        "vllm", "openai", "gemini"}
    assert study_models(config, "philautia") == list(example["panel"])


def test_own_judge_examples_validate(params):
    """The README's "point it at your own judge" entry, and Getting started's copy: valid
    once its key joins a study's models, as the text says."""
    examples = [_families_block(_text(path)) for path in ("README.md",
                                                         "docs/getting-started.md")]
    assert examples[0] == examples[1]
    example = examples[0]
    [key] = example["panel"]
    params["families"].update(example["families"])
    params["panel"].update(example["panel"])
    params["birch"]["models"] = [*params["birch"]["models"], key]
    config = validate_params(params)
    assert key in study_models(config, "birch")


def test_readme_names_only_commands_that_exist():
    """Every `judgebias <command>` and `make <target>` the README and the docs pages tell a
    user to type (in a code block or a code span) exists (issue 19: the README tells the
    truth)."""
    from judgebias.commands import build_parser

    # the commands `judgebias` offers (its usage's `{a,b,...}`; plumbing is one of them)
    commands = set(re.search(r"\{([^}]*)\}", build_parser().format_usage()).group(1)
                   .split(","))
    targets = set(re.findall(r"^([a-z-]+):", (REPO / "Makefile").read_text(), re.M))
    unknown, all_named, all_made = [], set(), set()
    for page in PAGES:
        text = page.read_text()
        code = "\n".join([*re.findall(r"```\w*\n(.*?)```", text, re.S),
                          *re.findall(r"`([^`\n]+)`", re.sub(r"```.*?```", "", text,
                                                             flags=re.S))])
        named = set(re.findall(r"(?<![\w/.-])judgebias (?:--params \S+ )?([a-z][a-z-]+)",
                               code))
        made = set(re.findall(r"(?<![\w-])make ([a-z][a-z-]+)", code))
        where = page.relative_to(REPO)
        unknown += [f"{where}: judgebias {c}" for c in sorted(named - commands)]
        unknown += [f"{where}: make {t}" for t in sorted(made - targets)]
        all_named |= named
        all_made |= made
    assert all_named and all_made
    assert not unknown, unknown
    readme = (REPO / "README.md").read_text()
    assert "make run" in readme and "make test" in readme


def test_cluster_slurm_examples_are_what_runs(params):
    """docs/cluster.md's GPU panel validates and splits its vllm model over its two GPUs;
    its partitions.yaml lines are the shipped file's."""
    from judgebias.models.panel import PanelModel

    page = _text("docs/cluster.md")
    example = _yaml_block(page, "# slurm panel")
    params["families"].update(example["families"])
    params["panel"].update(example["panel"])
    config = validate_params(params)
    qwen = PanelModel.from_params(config, "qwen2-5-vl-72b")
    assert qwen.gpus == 2 and qwen.engine_args["tensor_parallel_size"] == 2
    shipped = yaml.safe_load((REPO / "workflow/profiles/slurm/partitions.yaml").read_text())
    assert _yaml_block(page, "# workflow/profiles/slurm/partitions.yaml") == shipped

