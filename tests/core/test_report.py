"""Tests for report figures (heatmap, interval plot) and the self-contained HTML report."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from judgebias.report.figures import (
    color_limits,
    display_name,
    heatmap,
    interval_plot,
    save_figure,
    self_cells,
    text_layout,
)
from judgebias.report.html import (
    EMBED_WIDTH,
    PHOTO_BYTES,
    Figure,
    Report,
    Section,
    Table,
    render_report,
    write_report,
)

MODELS = [
    "GPT-4o",
    "Gemini-2.5-Pro",
    "Gemma-3-4B-IT",
    "DeepSeek-VL2",
    "LLaVA-1.5-13B",
    "LLaVA-NeXT-Vicuna-7B",
    "LLaVA-OneVision-7B",
    "Phi-3.5-Vision",
    "Qwen2.5-VL-7B",
    "InternVL2.5-8B",
    "Eagle2-9B",
    "Molmo-7B-D-0924",
]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _matrix(n: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    names = MODELS[:n] if n <= len(MODELS) else [f"model-{i}" for i in range(n)]
    return pd.DataFrame(rng.normal(size=(n, n)), index=names, columns=names)


def _intervals() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "model": ["sim/a", "sim/b", "real-c"],
            "estimate": [0.8, 0.1, -0.2],
            "ci_low": [0.5, -0.2, -0.6],
            "ci_high": [1.1, 0.4, 0.1],
        }
    )


# --------------------------------------------------------------------------- figures


@pytest.mark.parametrize("n", [6, 12, 14])
def test_heatmap_writes_png(tmp_path: Path, n: int) -> None:
    out = heatmap(
        _matrix(n),
        tmp_path / "sub" / "phi_tilde.png",
        "Phi-tilde",
        diverging=True,
        highlight_diagonal=True,
        simulated={MODELS[0]},
    )
    assert out == tmp_path / "sub" / "phi_tilde.png"
    assert out.read_bytes().startswith(PNG_MAGIC)
    with Image.open(out) as image:
        assert image.width > 500 and image.height > 400
    assert [p.name for p in out.parent.iterdir()] == ["phi_tilde.png"]  # no temp leftovers
    assert out.stat().st_mode & 0o044  # readable by others, unlike mkstemp's 0600


def test_heatmap_is_byte_identical_across_renders(tmp_path: Path) -> None:
    matrix = _matrix(8)
    matrix.iloc[1, 2] = np.nan
    first = heatmap(matrix, tmp_path / "a.png", "t", diverging=True, highlight_diagonal=True)
    second = heatmap(matrix, tmp_path / "b.png", "t", diverging=True, highlight_diagonal=True)
    assert first.read_bytes() == second.read_bytes()
    assert b"Software" not in first.read_bytes()


def test_heatmap_sequential_and_overwrite(tmp_path: Path) -> None:
    path = tmp_path / "phi.png"
    heatmap(_matrix(6).abs(), path, "Phi", diverging=False, value_fmt=".3f")
    before = path.read_bytes()
    heatmap(_matrix(6, seed=1).abs(), path, "Phi", diverging=False, value_fmt=".3f")
    assert path.read_bytes() != before


def test_heatmap_rejects_non_numeric(tmp_path: Path) -> None:
    frame = pd.DataFrame({"a": ["x", "y"], "b": [1.0, 2.0]}, index=["a", "b"])
    with pytest.raises(ValueError, match="non-numeric"):
        heatmap(frame, tmp_path / "x.png", "t", diverging=True)
    with pytest.raises(ValueError, match="empty"):
        heatmap(pd.DataFrame(), tmp_path / "y.png", "t", diverging=True)


def test_color_limits_symmetric_for_diverging() -> None:
    values = np.array([[-0.5, 2.0], [np.nan, 1.0]])
    assert color_limits(values, diverging=True) == (-2.0, 2.0)
    assert color_limits(values, diverging=False) == (-0.5, 2.0)
    low, high = color_limits(np.zeros((2, 2)), diverging=True)
    assert low == -high and high > 0
    low, high = color_limits(np.full((2, 2), 0.7), diverging=False)
    assert low < 0.7 < high


def test_display_name_and_self_cells() -> None:
    assert display_name("sim/a", {"sim/a"}) == "sim/a (sim)"
    assert display_name("GPT-4o", {"sim/a"}) == "GPT-4o"
    assert display_name("GPT-4o") == "GPT-4o"
    # Matched by name: an extra Pomms column and a shuffled order still hit self cells.
    assert self_cells(["b", "a"], ["a", "b", "Pomms"]) == [(0, 1), (1, 0)]
    assert self_cells(["r0", "r1"], ["c0", "c1", "c2"]) == [(0, 0), (1, 1)]


def test_interval_plot(tmp_path: Path) -> None:
    first = interval_plot(_intervals(), tmp_path / "a.png", "philautia", simulated={"sim/a"})
    second = interval_plot(_intervals(), tmp_path / "b.png", "philautia", simulated={"sim/a"})
    assert first.read_bytes().startswith(PNG_MAGIC)
    assert first.read_bytes() == second.read_bytes()


def test_interval_plot_validates(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="ci_high"):
        interval_plot(_intervals().drop(columns="ci_high"), tmp_path / "x.png", "t")
    bad = _intervals()
    bad.loc[1, "ci_low"] = bad.loc[1, "ci_high"] + 0.1  # above its upper end
    with pytest.raises(ValueError, match="sim/b"):
        interval_plot(bad, tmp_path / "x.png", "t")
    outside = _intervals()
    outside.loc[1, "ci_low"] = outside.loc[1, "estimate"] + 0.01  # a percentile interval
    assert interval_plot(outside, tmp_path / "y.png", "t").exists()


def test_figures_carry_the_box_of_every_text_line_they_draw(tmp_path: Path) -> None:
    """The layout holds what the renderer drew, where the saved pixels have it: upright
    lines agree with matplotlib's own extents (shifted by the tight crop), a rotated
    line's box is rotated with it, and tick labels outside the axes are not listed."""
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(4, 3))
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    ax.set_xticks([0, 1, 5], ["left", "right", "outside"])  # 5 is beyond the x limits
    ax.set_xlim(-0.1, 1.1)
    ax.set_ylabel("a long vertical label")
    ax.set_title("Two\nlines")
    path = save_figure(fig, tmp_path / "f.png")
    layout = text_layout(path.read_bytes())
    with Image.open(path) as image:
        assert (layout["width"], layout["height"]) == image.size
    texts = {t["text"]: np.asarray(t["box"]) for t in layout["texts"]}
    assert {"left", "right", "Two", "lines", "a long vertical label"} <= set(texts)
    assert "outside" not in texts
    assert all(t["px"] == pytest.approx(10 * 150 / 72, abs=0.01) for t in layout["texts"]
               if t["text"] in ("left", "right"))
    # Upright: as wide as matplotlib's extent (the crop only moves it), and no taller:
    # the box holds the glyphs ("left" has no descender), the extent a whole line.
    left = fig.axes[0].get_xticklabels()[0].get_window_extent(dpi=150)
    box = texts["left"]
    assert np.ptp(box[:, 0]) == pytest.approx(left.width, abs=1.5)
    assert 0.6 * left.height < np.ptp(box[:, 1]) <= left.height
    # The y label runs up the page: taller than wide, left of the tick labels.
    vertical = texts["a long vertical label"]
    assert np.ptp(vertical[:, 1]) > 5 * np.ptp(vertical[:, 0])
    assert vertical[:, 0].max() < box[:, 0].min()
    assert texts["Two"][:, 1].max() <= texts["lines"][:, 1].min() + 1  # first line on top
    plain = io.BytesIO()
    Image.new("RGB", (4, 4)).save(plain, format="PNG")
    assert text_layout(plain.getvalue()) is None  # not drawn by save_figure


def test_report_embeds_large_photographs_downscaled_and_links_the_full_size_file(
        tmp_path: Path) -> None:
    """A large photographic figure (over PHOTO_BYTES) is embedded EMBED_WIDTH wide as
    JPEG; each figure links to its full-size file, relative to the report's folder, and
    is laid out at least as wide as its smallest text needs to be 8 px high; a chart
    is embedded as is."""
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(12, 8))  # 1800 px at 150 dpi, of noise
    ax = fig.add_subplot()
    ax.imshow(np.random.default_rng(0).integers(0, 255, (600, 900, 3), dtype=np.uint8))
    ax.set_title("a gallery")
    photo = save_figure(fig, tmp_path / "results" / "study" / "figures" / "photo.png",
                        photographs=True)
    chart = heatmap(_matrix(3), tmp_path / "results" / "study" / "figures" / "chart.png",
                    "t", diverging=True)
    assert photo.stat().st_size > PHOTO_BYTES
    report = Report(title="t", sections=[Section("s", figures=[Figure(photo, "photo"),
                                                               Figure(chart, "chart")])])
    text = write_report(report, tmp_path / "results" / "report.html").read_text()
    assert '<a href="study/figures/photo.png"' in text
    assert '<a href="study/figures/chart.png"' in text
    (jpeg,) = re.findall(r'src="data:image/jpeg;base64,([^"]+)"', text)
    with Image.open(photo) as full, Image.open(io.BytesIO(base64.b64decode(jpeg))) as shown:
        assert shown.format == "JPEG" and shown.width == EMBED_WIDTH
        assert shown.height == round(full.height * EMBED_WIDTH / full.width)
    (png,) = re.findall(r'src="data:image/png;base64,([^"]+)"', text)
    assert base64.b64decode(png) == chart.read_bytes()
    layout = text_layout(photo.read_bytes())
    smallest = min(t["px"] for t in layout["texts"])  # the tick labels, 10 pt
    need = int(np.ceil(layout["width"] * 8 / smallest))
    assert f"min-width: min(100%, {need}px)" in text
    assert "full-size" not in render_report(report)  # no folder, no links


# --------------------------------------------------------------------------- html


@pytest.fixture
def report(tmp_path: Path) -> Report:
    names = ["sim/a", "sim/b", "real-c"]
    matrix = pd.DataFrame(
        [[1.2, -0.3, -0.9], [0.1, 0.7, -0.8], [-1.3, -0.4, 1.7]], index=names, columns=names
    )
    matrix.index.name = "generator"
    png = heatmap(
        matrix,
        tmp_path / "phi_tilde.png",
        "Phi-tilde",
        diverging=True,
        simulated={"sim/a", "sim/b"},
        highlight_diagonal=True,
    )
    intervals = interval_plot(_intervals(), tmp_path / "ci.png", "scores")
    return Report(
        title="judgebias report",
        sections=[
            Section(
                title="Philautia",
                intro="Self-preference of each judge.\n\nSecond paragraph.",
                figures=[Figure(png, "Phi-tilde <script>alert(1)</script>")],
                tables=[Table(matrix, "Phi-tilde values & more")],
                notes=["Diagonal = philautia score."],
                subsections=[
                    Section(
                        title="Intervals",
                        figures=[Figure(intervals, "Bootstrap intervals")],
                        tables=[Table(_intervals(), "Intervals", float_fmt="{:.2f}")],
                    )
                ],
            ),
            Section(title="Philautia"),  # duplicate titles still get distinct anchors
        ],
        provenance={"params_hash": "abc123", "git_commit": "deadbeef", "python": "3.11"},
        simulated_models=["sim/a", "sim/b"],
    )


def test_html_is_self_contained(report: Report) -> None:
    text = render_report(report)
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", text, re.IGNORECASE)
    assert "http://" not in text and "https://" not in text
    assert "<script" not in text.lower()
    assert "<link" not in text.lower()
    assert text.count('<img src="data:image/png;base64,') == 2


def test_html_embeds_the_image_bytes(report: Report, tmp_path: Path) -> None:
    text = render_report(report)
    encoded = base64.b64encode((tmp_path / "phi_tilde.png").read_bytes()).decode("ascii")
    assert f"data:image/png;base64,{encoded}" in text


def test_html_escapes_text(report: Report) -> None:
    text = render_report(report)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "Phi-tilde values &amp; more" in text


def test_html_marks_simulated_models(report: Report) -> None:
    text = render_report(report)
    assert "Results from SIMULATED models" in text
    assert "planted traits, not real model behaviour: sim/a, sim/b" in text
    assert text.count('<span class="sim">sim/a (sim)</span>') >= 3  # row, column, cell
    assert "real-c (sim)" not in text
    plain = render_report(Report(title="t", sections=report.sections, simulated_models=[]))
    assert "SIMULATED" not in plain and "(sim)</span>" not in plain


def test_html_layout_toc_and_provenance(report: Report) -> None:
    text = render_report(report)
    # Figure i comes first, then its table, inside one pair block.
    pair = text.split('<div class="pair">')[1]
    assert pair.index("<figure") < pair.index("<table>")
    assert 'href="#sec-1"' in text and 'href="#sec-1-1"' in text and 'href="#sec-2"' in text
    assert 'id="sec-1-1"' in text and "<h3>Intervals</h3>" in text
    assert "<p>Second paragraph.</p>" in text
    assert "<dt>params_hash</dt><dd>abc123</dd>" in text
    assert "<dt>git_commit</dt><dd>deadbeef</dd>" in text
    assert "Figure 2. Bootstrap intervals" in text and "Table 2. Intervals" in text
    assert "<th>generator</th>" in text
    assert '<td class="num">1.200</td>' in text and '<td class="num">0.80</td>' in text


def test_a_folded_section_keeps_its_title_and_headline_out_and_folds_the_rest() -> None:
    """`Section.fold`: title and headline stay in view; intro, tables, notes and
    subsections go into one collapsed <details> whose summary is the (escaped) fold text;
    the tables keep their numbers, and the contents still link to the section."""
    inner = Section(title="Inner", anchor="inner", tables=[Table(_matrix(2), "inner")])
    folded = Section(title="Rows", anchor="rows", headline="in short", intro="why",
                     tables=[Table(_matrix(3), "every row")], notes=["a note"],
                     subsections=[inner], fold="Show <all> rows")
    text = render_report(Report(title="t", sections=[Section(title="Top"), folded]))
    section = text[text.index('<section id="rows">'):text.index('<section id="provenance">')]
    details = section[section.index("<details>"):]
    assert section.index("<h2>Rows</h2>") < section.index('class="headline">in short')
    assert section.index('class="headline">') < section.index("<details>")
    assert details.startswith("<details><summary>Show &lt;all&gt; rows</summary>")
    assert details.rstrip().endswith("</details>\n</section>")
    for part in ("<p>why</p>", "Table 1. every row", "<li>a note</li>",
                 '<section id="inner">', "Table 2. inner"):
        assert part in details
    assert 'href="#rows"' in text and 'href="#inner"' in text
    assert "<details" not in render_report(Report(title="t", sections=[Section(title="Top")]))


def test_html_is_deterministic_and_written_atomically(report: Report, tmp_path: Path) -> None:
    assert render_report(report) == render_report(report)
    out_dir = tmp_path / "out"
    path = write_report(report, out_dir / "report.html")
    assert path.read_text(encoding="utf-8") == render_report(report, out_dir)
    assert [p.name for p in out_dir.iterdir()] == ["report.html"]


def test_html_missing_figure_names_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope.png"
    bad = Report(title="t", sections=[Section(title="s", figures=[Figure(missing, "c")])])
    with pytest.raises(FileNotFoundError, match=r"nope\.png"):
        render_report(bad)


def test_html_formats_missing_and_mixed_cells() -> None:
    frame = pd.DataFrame({"x": [1.0, np.nan], "n": [3, 4], "flag": [True, False]}, index=["a", "b"])
    text = render_report(Report(title="t", sections=[Section("s", tables=[Table(frame, "c")])]))
    assert "<td>–</td>" in text
    assert '<td class="num">3</td>' in text
    assert "<td>yes</td>" in text and "<td>no</td>" in text and "True" not in text


# ------------------------------------------------------------------ the full report


def _run(*argv: str) -> None:
    from judgebias.cli import main

    assert main(["--params", "params.yaml", *argv]) == 0, argv


def _step(target: str, inputs: dict, outputs: dict, **wildcards: str) -> None:
    """Run a study step through the CLI, with the arguments its rule would pass."""
    from judgebias.workflow.step_dispatch import command_arguments

    _run("plumbing", "step", target, *command_arguments(inputs, outputs, wildcards).split())


def _philautia_steps(config: dict) -> None:
    """Every philautia step through the CLI with explicit paths, as the rules call them."""
    from judgebias.studies.philautia import tables
    from judgebias.study import study_models

    models = study_models(config, "philautia")
    _step("philautia.dataset", {}, {"table": tables.DATASET_TABLE,
                                    "images": tables.DATASET_IMAGES})
    for g in models:
        _step("philautia.caption", {"images": tables.DATASET_TABLE},
              {"captions": tables.captions_path(g)}, generator=g)
    for setting in config["philautia"]["settings"]:
        scores = []
        for e in models:
            for g in models:
                scores.append(tables.scores_path(setting, e, g))
                _step("philautia.score", {"images": tables.DATASET_TABLE,
                                          "captions": tables.captions_path(g)},
                      {"scores": scores[-1]}, evaluator=e, generator=g, setting=setting)
        file = {name: tables.setting_file(setting, name)
                for name in ("scores", "phi", "counts", "phi_tilde", "philautia")}
        _step("philautia.phi", {"scores": scores},
              {"long": file["scores"], "phi": file["phi"], "counts": file["counts"]})
        _step("philautia.philautia", {"scores": file["scores"]},
              {"metrics": tables.setting_file(setting, "metrics", ".json"),
               "tables": [tables.setting_file(setting, t) for t in tables.ANALYSIS_TABLES]})
        _step("philautia.selfpref", {"scores": file["scores"], "philautia": file["philautia"]},
              {"selfpref": tables.setting_file(setting, tables.SELFPREF_TABLE)})
        _step("philautia.heatmaps", {k: file[k] for k in ("phi", "phi_tilde", "philautia")},
              {"figures": [tables.figure_path(setting, f) for f in tables.FIGURES]},
              setting=setting)


def _pomms_steps(config: dict) -> None:
    from judgebias.studies.philautia.tables import setting_file
    from judgebias.studies.pomms import tables
    from judgebias.study import study_models

    setting = config["pomms"]["setting"]
    judgements, item_scores = [], []
    for dataset in config["pomms"]["datasets"]:
        judgements.append(tables.judgements_path(dataset))
        _step("pomms.judgements", {}, {"table": judgements[-1],
                                       "images": tables.judgement_images(dataset)},
              dataset=dataset)
        for e in study_models(config, "philautia"):
            item_scores.append(tables.item_scores_path(setting, dataset, e))
            _step("pomms.judge_items", {"judgements": judgements[-1]},
                  {"item_scores": item_scores[-1]}, evaluator=e, setting=setting)
    _step("pomms.fit", {"judgements": judgements, "item_scores": item_scores,
                        "scores": setting_file(setting, "scores")},
          {"metrics": tables.METRICS, "tables": [tables.table_path(t) for t in tables.TABLES],
           "ensemble": tables.ENSEMBLE, "model_card": tables.ENSEMBLE_CARD})
    _step("pomms.heatmap", {"phi_tilde": tables.table_path("phi_tilde")},
          {"figure": tables.HEATMAP})


@pytest.fixture
def project(tmp_path: Path, params: dict, monkeypatch) -> tuple[Path, dict]:
    """A tiny project folder (3 models, 8 images, 40 judgement items) to run steps in."""
    import yaml

    from judgebias.config import validate_params

    monkeypatch.chdir(tmp_path)
    params["philautia"]["dataset"]["synthetic"]["n_images"] = 8
    params["philautia"].update(models=["lumen-large", "lumen-mini", "corvid-pro"],
                               n_bootstrap=20, n_permutations=100)
    params["pomms"]["datasets"]["synthetic"]["n_items"] = 40
    params.pop("mmb")  # its report section is tested end to end (tests/mmb/test_mmb_pipeline.py)
    params.pop("frame")  # and so is this one (tests/frame/test_frame_pipeline.py)
    params.pop("birch")  # and this one (tests/birch/test_birch_pipeline.py)
    params.pop("leaderboard")  # and this one (tests/leaderboard/test_leaderboard_pipeline.py)
    params["journal_dir"] = str(tmp_path / "journal")
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return tmp_path, validate_params(params)


def test_each_study_reports_from_its_results_folder(params) -> None:
    """A study's report_inputs hook names files in its results folder (Study.results, the
    folder `judgebias report --results` hands its section) and named files outside it."""
    import importlib

    from judgebias.config import validate_params
    from judgebias.study import registered

    params["frame"]["presets"] = "paper"  # its results add the presets' table
    # the default runs no recorded table (its inputs are the user's own files)
    params["recorded"] = {"tables": {"mine": {"kind": "pairwise", "path": "mine.csv"}}}
    config = validate_params(params, data=False)
    studies = [*registered().values(),
               importlib.import_module("judgebias.studies._template").STUDY]
    inputs = {s.name: s.load("report_inputs")(config) for s in studies}
    for study in studies:
        folder, named = f"{study.results}/", inputs[study.name]
        assert named.results and all(p.startswith(folder) for p in named.results), study.name
        assert not any(p.startswith(folder) for p in named.data.values()), study.name
    assert "results/frame/presets.parquet" in inputs["frame"].results


@pytest.mark.slow
def test_report_has_a_section_per_study(project) -> None:
    """`judgebias report --results study=folder ...`: one section per active study, from
    the results folder each study's steps wrote, with provenance and simulated models."""
    from judgebias.study import registered

    root, config = project
    _philautia_steps(config)
    _pomms_steps(config)
    for name in ("philautia", "pomms"):
        for path in registered()[name].load("report_inputs")(config).files():
            assert (root / path).is_file(), path  # every file the report rule declares
    _card(config)
    _run("report", "--out", "results/report.html", "--card", "results/judges.parquet",
         "--results", "philautia=results/philautia", "pomms=results/pomms")
    text = (root / "results/report.html").read_text(encoding="utf-8")
    assert text.index('<section id="judge-card">') < text.index('id="study-philautia"')
    assert "Philautia: self- and family-preference of caption judges" in text
    assert "Pomms: an ensemble of evaluators against self-preference" in text
    assert text.index("Philautia: self-") < text.index("Pomms: an ensemble")  # registry order
    assert "Setting: ref_based" in text and "Setting: ref_free" in text
    assert "Results from SIMULATED models" in text
    # and the data are named, the simulated ones as such
    assert "Images: 8 SYNTHETIC scenes (seed 7), not photographs" in text
    assert "Judgement datasets: `synthetic`: SIMULATED raters of 40 synthetic items" in text
    assert "<dt>params fingerprint</dt>" in text and "<dt>params file</dt><dd>params.yaml" in text
    assert "exact conditional expectation" in text  # philautia.score: expected
    assert text.count('<img src="data:image/png;base64,') == 2 * 3 + 1
    assert "http://" not in text and "https://" not in text


@pytest.mark.slow
def test_report_of_a_philautia_only_project(project) -> None:
    """Without a `pomms:` block the report has the philautia section only, and needs only
    the philautia results; an active study without a results folder is an error."""
    import yaml

    from judgebias.config import validate_params
    from judgebias.report.build import write_full_report

    root, _ = project
    params = yaml.safe_load((root / "params.yaml").read_text())
    del params["pomms"]
    params["philautia"]["settings"].pop("ref_based")
    params["philautia"]["score"] = "parsed"
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    config = validate_params(params)
    _philautia_steps(config)
    _run("report", "--out", "results/report.html", "--results", "philautia=results/philautia")
    text = (root / "results/report.html").read_text(encoding="utf-8")
    assert "Philautia: self-" in text and "Pomms" not in text
    assert "Setting: ref_free" in text and "Setting: ref_based" not in text
    assert "parsed $NN$ integers" in text  # philautia.score: parsed
    with pytest.raises(ValueError, match="no results folder given for study 'philautia'"):
        write_full_report(config, "params.yaml", {}, {}, root / "other.html")


@pytest.mark.slow
def test_report_flags_only_the_simulated_models_that_were_run(project) -> None:
    import yaml

    from judgebias.config import validate_params

    root, _ = project
    params = yaml.safe_load((root / "params.yaml").read_text())
    del params["pomms"]
    params["philautia"]["settings"].pop("ref_based")
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _philautia_steps(validate_params(params))
    _run("report", "--out", "results/report.html", "--results", "philautia=results/philautia")
    text = (root / "results/report.html").read_text(encoding="utf-8")
    banner = re.search(r"not real model behaviour: ([^.]*)\.", text).group(1)
    assert banner == "corvid-pro, lumen-large, lumen-mini"


@pytest.mark.slow
@pytest.mark.browser
def test_report_reads_well_in_chromium(project, browser) -> None:
    """Philautia's and Pomms' sections in headless Chromium (tests/helpers/report_browser.py)."""
    from helpers.report_browser import check_card, check_report

    root, config = project
    _philautia_steps(config)
    _pomms_steps(config)
    _card(config)
    _run("report", "--out", "results/report.html", "--card", "results/judges.parquet",
         "--results", "philautia=results/philautia", "pomms=results/pomms")
    check_report(browser, root / "results/report.html", ["Judge card", "Philautia", "Pomms"],
                 "philautia-pomms")
    targets = check_card(browser, root / "results/report.html", "philautia-pomms")
    assert targets == ["#study-philautia"]  # Pomms' rows (tau with humans) are no headline


def _card(config: dict) -> None:
    """`judgebias plumbing card-build` with every study's named card inputs, as the card
    rule."""
    from judgebias.study import active

    named = [f"{s.name}.{name}={path}" for s in active(config) if s.card
             for name, path in s.load("card_inputs")(config).items()]
    _run("plumbing", "card-build", "--table", "results/judges.parquet", "--metrics",
         "results/card", "--in", *named)


def _planted_unreadable_figure(path: Path) -> Path:
    """A bar chart whose long tick labels run into each other and whose note is set in
    3 pt type (6 px at 150 dpi), both drawn by matplotlib like any study figure."""
    from matplotlib.figure import Figure as MplFigure

    fig = MplFigure(figsize=(3.5, 2.5))
    ax = fig.add_subplot()
    ax.bar(range(6), [3, 1, 4, 1, 5, 9])
    ax.set_xticks(range(6), [f"a long category name {i}" for i in range(6)])
    ax.text(0, 8, "a note in tiny type", fontsize=3)
    return save_figure(fig, path)


@pytest.mark.browser
def test_browser_check_catches_overlapping_and_tiny_text_in_figures(tmp_path: Path,
                                                                     browser) -> None:
    """tests/helpers/report_browser.py fails a report whose figure has labels running into each
    other or text under 8 px as shown, names the figure and the text, and passes the same
    report with a readable figure (a heatmap whose rotated labels have overlapping upright
    bounding boxes but do not touch)."""
    from helpers.report_browser import check_report

    readable = heatmap(_matrix(6), tmp_path / "figures" / "readable.png", "Phi-tilde",
                       diverging=True, highlight_diagonal=True)
    planted = _planted_unreadable_figure(tmp_path / "figures" / "planted.png")
    table = Table(_matrix(3), "Values")

    def report(figure: Path, caption: str) -> Path:
        section = Section("Planted", figures=[Figure(figure, caption)], tables=[table])
        return write_report(Report(title="t", sections=[section]),
                            tmp_path / f"{caption}.html")

    check_report(browser, report(readable, "readable"), ["Planted"], "planted-readable")
    with pytest.raises(AssertionError, match="text in figures that cannot be read") as error:
        check_report(browser, report(planted, "planted"), ["Planted"], "planted-unreadable")
    message = str(error.value)
    assert "planted: 'a long category name 0' overlaps 'a long category name 1'" in message
    assert "planted: 'a note in tiny type' is 6.3 px high as shown (< 8)" in message
    assert "readable" not in message
