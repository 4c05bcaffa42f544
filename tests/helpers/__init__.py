"""What test modules share (no test module imports another): a small real project and its
commands (`project`), score tensors (`scores`), a recording serve-sim and API params
(`api`), each study's input builders (`birch`, `frame`, `mmb`), and the tools some tests
bring up (`tiny_vlm`, `tiny_lora`, `vllm_cpu_env`, `slurm_cluster`, `report_browser`).

`tests/` is on sys.path (pytest puts the directory of the root conftest.py there), so a
test imports `from helpers.project import run`.
"""
