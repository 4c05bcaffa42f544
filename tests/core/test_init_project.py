"""`judgebias init`: a researcher's audit in its own project folder, run by the installed
package (issue 42 item 2).

The slow test builds judgebias's wheel from a copy of the sources, installs it into a
fresh virtualenv and runs a small audit in an `init` folder through both front doors.
The fresh virtualenv reaches the third-party packages through a ``.pth`` line naming the
test environment's site-packages (this machine is offline, and installing PyTorch again
would take minutes); judgebias itself comes from the wheel, which the test checks: a
``.pth`` line adds a folder to the path without running the editable install's hook
there, so the source checkout is not importable from the fresh environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
import yaml
from helpers.project import REPO, study_params

from judgebias.config import ConfigError
from judgebias.project import example_configs, init_project
from judgebias.skeleton import PROJECT_FILES, copy_files, package_file, workflow_root


def test_the_workflow_is_found_beside_an_editable_install() -> None:
    assert workflow_root() == REPO
    assert {"birch", "mmb"} <= set(example_configs())


def test_a_project_holding_the_source_declares_its_own_copy(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(REPO)
    assert package_file("prompts/templates/x.txt") == "src/judgebias/prompts/templates/x.txt"
    monkeypatch.chdir(tmp_path)  # an `init` project: the installed file, by absolute path
    declared = package_file(REPO / "src/judgebias/studies/mmb/instructions.yaml")
    assert declared == (REPO / "src/judgebias/studies/mmb/instructions.yaml").as_posix()


def test_init_writes_a_project_without_the_workflow(tmp_path) -> None:
    project = tmp_path / "audit"
    said = init_project(project, "birch", git=False, dvc=False)
    assert (project / "params.yaml").read_text() == (REPO / "configs/birch.yaml").read_text()
    assert "include: workflow_snakefile()" in (project / "Snakefile").read_text()
    assert (project / "workflow/profiles/local/config.yaml").is_file()
    assert not (project / "workflow/rules").exists()  # the rules stay in the package
    assert any("configs/birch" in line for line in said)


def test_init_refuses_a_folder_in_use_and_an_unknown_panel(tmp_path) -> None:
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "notes.txt").write_text("mine")
    with pytest.raises(ConfigError, match="not an empty folder"):
        init_project(tmp_path / "used", git=False, dvc=False)
    with pytest.raises(ConfigError, match="--config nope: no such example panel; choose"):
        init_project(tmp_path / "new", "nope", git=False, dvc=False)
    assert not (tmp_path / "new").exists()


def _build_wheel(dest: Path) -> Path:
    """The wheel of a copy of the sources (the build writes nothing into the checkout)."""
    source = dest / "source"
    copy_files(REPO, ["pyproject.toml", "setup.py", "README.md", "src", *PROJECT_FILES], source,
               "*.egg-info")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                    "--no-build-isolation", "--wheel-dir", str(dest), str(source)], check=True)
    (wheel,) = dest.glob("judgebias-*.whl")
    return wheel


def _fresh_venv(path: Path, wheel: Path) -> Path:
    """A new virtualenv with the wheel installed, the other packages through a .pth."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    site = subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                          check=True, capture_output=True, text=True).stdout.strip()
    Path(site, "test_environment_packages.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet",
                    "--no-deps", "--no-index", str(wheel)], check=True)
    return python


def _small_audit() -> dict:
    """Philautia on 6 images and three models."""
    params = study_params(yaml.safe_load((REPO / "params.yaml").read_text()), "philautia")
    philautia = params["philautia"]
    philautia["dataset"]["synthetic"]["n_images"] = 6
    philautia.update(models=["lumen-large", "lumen-mini", "corvid-pro"], n_bootstrap=20,
                     n_permutations=100)
    return params


@pytest.mark.slow
def test_the_wheel_runs_an_audit_in_an_init_project(tmp_path) -> None:
    python = _fresh_venv(tmp_path / "venv", _build_wheel(tmp_path / "dist"))
    bin_dir = python.parent
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.pop("JUDGEBIAS_PARAMS", None)

    def run(*command: str | Path, cwd: Path) -> str:
        done = subprocess.run([str(c) for c in command], cwd=cwd, env=env, text=True,
                              capture_output=True)
        assert done.returncode == 0, f"{command}:\n{done.stdout}\n{done.stderr}"
        return done.stdout + done.stderr

    installed = run(python, "-c", "import judgebias; print(judgebias.__file__)", cwd=tmp_path)
    assert installed.startswith(str(tmp_path / "venv")), installed

    project = tmp_path / "my-audit"
    run(bin_dir / "judgebias", "init", project, cwd=tmp_path)
    assert (project / ".git").is_dir() and (project / ".dvc").is_dir()
    (project / "params.yaml").write_text(yaml.safe_dump(_small_audit(), sort_keys=False))
    run(bin_dir / "judgebias", "export-dvc", cwd=project)
    dvc_yaml = (project / "dvc.yaml").read_text()
    assert str(tmp_path / "venv") in dvc_yaml  # the code stamps read the installed files
    assert "src/judgebias" not in dvc_yaml.replace(str(tmp_path / "venv"), "")

    # DVC's front door, then Snakemake's: each finds the other's work done
    run(bin_dir / "judgebias", "dvc-repro", cwd=project)
    assert (project / "results/philautia/ref_free/metrics.json").is_file()
    dry = run(python, "-m", "snakemake", "--dry-run", "--cores", "1", cwd=project)
    assert "Nothing to be done" in dry, dry
    assert "up to date" in run(python, "-m", "dvc", "status", cwd=project)

    # a changed param reruns through Snakemake; then nothing is left for either door
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["philautia"]["n_bootstrap"] = 30
    (project / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    log = run(python, "-m", "snakemake", "--cores", "2", cwd=project)
    assert "rule philautia:" in log and "rule caption:" not in log, log
    assert "Nothing to be done" in run(python, "-m", "snakemake", "--dry-run", "--cores", "1",
                                       cwd=project)
    assert "total: 0 new calls" in run(bin_dir / "judgebias", "plan", cwd=project)
    assert "philautia:" in run(bin_dir / "judgebias", "card", "corvid-pro", cwd=project)
    assert (project / "results/report.html").is_file()
