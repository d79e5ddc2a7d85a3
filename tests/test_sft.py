"""`drk sft` with the tiny offline model: only assistant tokens are trained, the loss falls, the CLI writes a
checkpoint that loads back.

    .venv/bin/python -m pytest tests/test_sft.py -q
"""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import ROOT
from drk.cli import app
from drk.config import ConfigError, load_config
from drk.stages.sft import SFTConfig, build_trainer, load_conversations, truncate_after_turn

DEMO = str(ROOT / "data/trajectories/demo.jsonl")


def test_filters():
    all_rows = load_conversations(SFTConfig(data=DEMO, filter="all"))
    best = load_conversations(SFTConfig(data=DEMO, filter="upto_best"))
    assert len(all_rows) == len(best) == 11
    # episodes whose first turn was already correct end after it
    assert min(len(r["messages"]) for r in best) < max(len(r["messages"]) for r in all_rows)
    msgs = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a0"},
            {"role": "user", "content": "f"}, {"role": "assistant", "content": "a1"}]
    assert truncate_after_turn(msgs, 0) == msgs[:2]
    with pytest.raises(ConfigError):
        load_conversations(SFTConfig(data=str(ROOT / "data/queries/001_scaled_tanh_bias.py")))


def test_only_assistant_tokens_are_trained(tmp_path):
    cfg = load_config(SFTConfig, ROOT / "recipes/tiny/sft.yaml", {"out": str(tmp_path), "data": DEMO})
    trainer = build_trainer(cfg)
    tok = trainer.processing_class
    ex = trainer.train_dataset[0]
    batch = trainer.data_collator([ex])
    ids, labels = batch["input_ids"][0], batch["labels"][0]
    trained = tok.decode(ids[labels != -100])
    row = load_conversations(cfg)[0]
    expected = "".join(m["content"] + "<|im_end|>" for m in row["messages"] if m["role"] == "assistant")
    assert trained == expected
    assert (labels != -100).sum() < 0.5 * len(labels)  # prompts and feedback (most tokens) are masked


@pytest.mark.slow
def test_loss_falls_and_checkpoint_loads(tmp_path):
    out = tmp_path / "sft"
    res = CliRunner().invoke(app, ["sft", "-c", str(ROOT / "recipes/tiny/sft.yaml"), "--out", str(out),
                                   "--data", DEMO])
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "sft_summary.json").read_text())
    losses = summary["losses"]
    assert len(losses) >= 4 and losses[-1] < 0.85 * losses[0], losses
    assert json.loads((out / "sft_config.json").read_text())["lr"] == 5e-3
    from transformers import AutoModelForCausalLM, AutoTokenizer

    AutoModelForCausalLM.from_pretrained(out)
    assert "generation" in AutoTokenizer.from_pretrained(out).chat_template


def test_bad_recipe_is_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("lr: 1e-3\nepochs: 1\nbogus_option: 3\n")
    res = CliRunner().invoke(app, ["sft", "-c", str(bad), "--out", str(tmp_path / "o")])
    assert res.exit_code == 2 and "unknown option 'bogus_option'" in res.output and "Traceback" not in res.output
    assert "did you mean" not in res.output  # nothing close to suggest
