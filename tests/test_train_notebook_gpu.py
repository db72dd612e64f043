"""Notebook 07's GPU branch, run top to bottom on the CPU.

CI has no GPU, so nbval only ever runs the notebook's CPU branch. Here its code cells run with
``cuda`` set to True and the device's name replaced, and the tiny offline model standing in
for ``MODEL_ID`` (a stand-in, as no hub is reachable): the Gemma path's own cells (load, LoRA
SFT, before and after, GRPO on the same adapters, after GRPO) must run and report.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu_path

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "07_train.ipynb"
#: The two places where the notebook asks the machine for CUDA, and what stands in for them.
STAND_INS = {"cuda = torch.cuda.is_available()": "cuda = True",
             "torch.cuda.get_device_name(0)": "'a CPU standing in'"}


def gpu_branch_code(model_folder: str) -> str:
    """The notebook's code cells as one script on the GPU branch, with small parameters."""
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    code = []
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        code.append("\n".join(line for line in source.splitlines()
                              if not line.startswith("%")))
        if "parameters" in cell.get("metadata", {}).get("tags", []):
            code.append(f"MODEL_ID = {model_folder!r}\nSFT_SEEDS = 1\nSFT_EPOCHS = 0.08\n"
                        "SEEDS = [1000]\nTASKS = ['memory_leak']\nMAX_STEPS = 3\n"
                        "GRPO_STEPS = 1\nGRPO_COMPLETION_TOKENS = 64\nGRPO_TURNS = 2")
    script = "\n\n".join(code)
    for needed, stand_in in STAND_INS.items():
        assert needed in script, f"notebook 07 no longer has {needed!r}; update this test"
        script = script.replace(needed, stand_in)
    return script


def test_the_gpu_branch_of_notebook_07_runs_top_to_bottom(tmp_path, monkeypatch, capsys):
    pytest.importorskip("trl")
    import matplotlib

    from srelib.training.tiny_model import tiny_chat_model

    matplotlib.use("Agg")
    monkeypatch.setenv("SRELIB_AGENT_HOME", str(tmp_path / "no-agent"))  # the GPU path needs none
    model = str(tiny_chat_model(tmp_path / "model"))
    namespace: dict = {}
    exec(compile(gpu_branch_code(model), str(NOTEBOOK), "exec"), namespace)
    printed = capsys.readouterr().out
    assert f"{model} trains with LoRA adapters of rank 16" in printed
    assert "LoRA SFT of" in printed and "model (untrained):" in printed
    assert namespace["order"] == ["model (untrained)", "agent", "null"]
    assert not (tmp_path / "no-agent").exists()  # no small agent was trained or used
    assert type(namespace["trainer"].model).__name__.startswith("PeftModel")
    assert sorted(namespace["trainer"].model.peft_config) == ["default", "ref"]
    assert len(namespace["table"]) == 1
    assert set(namespace["final"]["policy"]) == {"agent", "agent+GRPO", "null"}
