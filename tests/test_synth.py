"""The synthetic task family (`drk.tasks.synth`) and the template teacher (`drk.engines.template`): the
generator is deterministic and splits by composition, every reference runs, each teacher variant gets the
verdict it claims from the real CPU evaluator, and the teacher plugs into `drk collect` as an engine.

Run: `PYTHONPATH=src python -m pytest tests/test_synth.py -q` (CPU; Triton's interpreter; well under a minute).
"""
from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from typer.testing import CliRunner

from drk.cli import app
from drk.engines import EngineError, EngineSpec, SamplingParams, make_engine
from drk.engines.template import CORRECT_FAST, CORRECT_SLOW, WRONG, TemplateTeacher, kernel_source, variants_for
from drk.tasks import Task
from drk.tasks.queries import load_queries
from drk.tasks.synth import KINDS, OPS, SynthError, SynthSpec, generate, parse_composition, split, write_tasks

ROOT = Path(__file__).resolve().parents[1]
runner = CliRunner()


def task_of(spec: SynthSpec) -> Task:
    return Task(id=f"synth/{spec.name}", name=spec.name, source=spec.source())


# ------------------------------------------------------------------------------------------- generator
def test_generator_is_deterministic_for_a_seed_and_differs_across_seeds():
    assert generate(3) == generate(3)
    assert generate(3) != generate(4)


@pytest.mark.parametrize("seed", [0, 1, 7])
def test_held_in_and_held_out_are_disjoint_by_composition_and_share_their_parts(seed):
    held_in, held_out = split(seed)
    assert not set(held_in) & set(held_out)
    assert set(held_in) | set(held_out) == {(o, k) for o in OPS for k in KINDS}
    specs = generate(seed)
    assert {s.composition for s in specs["held_in"]} == set(held_in)
    assert {s.composition for s in specs["held_out"]} == set(held_out)
    for i in (0, 1):  # every op and every kind is seen in training and in evaluation
        assert {c[i] for c in held_in} == {c[i] for c in held_out}


def test_written_tasks_load_as_a_query_set_and_the_shipped_set_is_current(tmp_path):
    m = write_tasks(tmp_path / "s", seed=0)
    tasks = load_queries(str(tmp_path / "s" / "held_in"))
    assert len(tasks) == m["held_in"]["tasks"] and tasks[0].problem_id == 1
    assert all(parse_composition(t.source) for t in tasks)
    with pytest.raises(SynthError, match="not empty"):
        write_tasks(tmp_path / "s", seed=1)
    # data/synth is what recipes/smoke trains on: it must be exactly the generator's seed-0 output
    for part in ("held_in", "held_out"):
        shipped = sorted((ROOT / "data/synth" / part).glob("*.py"))
        fresh = sorted((tmp_path / "s" / part).glob("*.py"))
        assert [f.name for f in shipped] == [f.name for f in fresh]
        assert all(a.read_text() == b.read_text() for a, b in zip(shipped, fresh))


def test_every_generated_reference_runs_with_the_declared_output_shape():
    torch = pytest.importorskip("torch")
    specs = [s for part in generate(0).values() for s in part]
    for spec in specs:
        ns: dict = {}
        exec(compile(spec.source(), spec.name, "exec"), ns)
        model = ns["Model"](*ns["get_init_inputs"]())
        (x,) = ns["get_inputs"]()
        y = model(x)
        assert x.shape == (spec.rows, spec.cols) and x.dtype == getattr(torch, spec.dtype)
        assert y.shape == (x.shape if KINDS[spec.kind][1] else x.shape[:1]), spec.name
        assert torch.isfinite(y).all(), spec.name


def test_cli_tasks_synth_writes_files_and_refuses_a_foreign_folder(tmp_path):
    res = runner.invoke(app, ["tasks", "synth", "--out", str(tmp_path / "t"), "--seed", "2"])
    assert res.exit_code == 0, res.output
    assert json.loads((tmp_path / "t" / "manifest.json").read_text())["seed"] == 2
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    res = runner.invoke(app, ["tasks", "synth", "--out", str(tmp_path / "other")])
    assert res.exit_code == 2 and "not empty" in res.output and "Traceback" not in res.output


# ------------------------------------------------------------------------------------------- teacher
CASES = [  # (op, kind, dtype): every kind, both dtypes, ops whose wrong twin differs clearly
    ("sigmoid", "sum", "float16"), ("relu", "map", "float32"), ("square", "max", "float32"),
    ("shift", "softmax", "float16"), ("silu", "center", "float32"), ("scale", "mean", "float16"),
]


def test_teacher_variants_get_the_verdicts_they_claim_from_the_real_evaluator(cpu_pool):
    from drk.gym import EvalOptions, EvalRequest

    reqs, claims = [], []
    for op, kind, dtype in CASES:
        task = task_of(SynthSpec(op, kind, 4, 40, dtype))
        for variant in variants_for(kind):
            reqs.append(EvalRequest(task, kernel_source(op, kind, variant), EvalOptions(device="cpu")))
            claims.append((task.id, variant))
    results = cpu_pool.evaluate_batch(reqs)
    for (tid, variant), res in zip(claims, results):
        if variant in CORRECT_FAST + CORRECT_SLOW:
            assert res.verdict == "ok" and res.coverage and res.coverage > 0.5, (tid, variant, res.error)
        else:
            assert variant in WRONG and res.verdict not in ("ok", "infra_error"), (tid, variant, res.verdict)


def test_teacher_draws_the_configured_mix_and_fixes_after_feedback():
    teacher = TemplateTeacher(wrong=0.5, slow=0.2, fix=0.8)
    first = [{"role": "user", "content": "Here is\n# drk-synth: op=relu kind=sum\nimport torch"}]
    draws = [teacher.choose(first, random.Random(i)) for i in range(2000)]
    share = lambda names: sum(d in names for d in draws) / len(draws)  # noqa: E731
    assert abs(share(WRONG) - 0.5) < 0.05 and abs(share(CORRECT_SLOW) - 0.2) < 0.04
    failed = first + [{"role": "assistant", "content": "x"},
                      {"role": "user", "content": "Feedback from the evaluator:\nVerdict: incorrect. ..."}]
    fixes = [teacher.choose(failed, random.Random(i)) for i in range(2000)]
    assert abs(sum(f == "fast" for f in fixes) / 2000 - (0.8 + 0.2 * 0.3)) < 0.05  # fixed, or a fresh fast draw
    ok = first + [{"role": "assistant", "content": "fast one"}, {"role": "user", "content": "Verdict: ok. Good."}]
    assert teacher.reply(ok, random.Random(0)) == "fast one"  # a correct fast answer is kept
    other = [{"role": "user", "content": "Here is a PyTorch program without a synthetic header."}]
    assert "```" not in teacher.reply(other, random.Random(0))


def test_teacher_is_an_engine_seeded_by_request_and_rejects_bad_options():
    spec = EngineSpec(model="template", kind="template", extra={"wrong": 0.3, "seed": 1})
    conv = [{"role": "user", "content": "# drk-synth: op=abs kind=mean\n"}]
    a = make_engine(spec).generate([conv], SamplingParams(n=4, seed=5))[0]
    assert [g.text for g in a] == [g.text for g in make_engine(spec).generate([conv], SamplingParams(n=4, seed=5))[0]]
    assert all("```python" in g.text and g.finish_reason == "stop" for g in a)
    # identical conversations in one call (the episode loop's n=1 per episode) get different draws
    many = TemplateTeacher(wrong=0.5).generate([conv] * 16, SamplingParams(n=1, seed=5))
    assert len({g[0].text for g in many}) > 1
    with pytest.raises(EngineError, match="probability"):
        make_engine(EngineSpec(model="template", kind="template", extra={"wrong": 1.5}))
    with pytest.raises(EngineError, match="bad options"):
        make_engine(EngineSpec(model="template", kind="template", extra={"colour": 1}))
    with pytest.raises(EngineError, match="wrong_variants"):
        make_engine(EngineSpec(model="template", kind="template", extra={"wrong_variants": "fast"}))


def test_teacher_limits_its_wrong_answers_to_the_named_variants():
    first = [{"role": "user", "content": "# drk-synth: op=relu kind=sum\n"}]
    only = TemplateTeacher(wrong=0.5, slow=0.0, wrong_variants="nomask")
    draws = [only.choose(first, random.Random(i)) for i in range(400)]
    assert set(draws) == {"fast", "nomask"} and 150 < draws.count("nomask") < 250
    two = TemplateTeacher(wrong=1.0, slow=0.0, wrong_variants=["wrong_op", "wrong_axis"])
    assert {two.choose(first, random.Random(i)) for i in range(200)} == {"wrong_op", "wrong_axis"}
    # a kind without any named variant (wrong_axis does not exist for maps) falls back to the ones it has
    axis = TemplateTeacher(wrong=1.0, slow=0.0, wrong_variants="wrong_axis")
    maps = [{"role": "user", "content": "# drk-synth: op=relu kind=map\n"}]
    assert {axis.choose(maps, random.Random(i)) for i in range(200)} == {"nomask", "wrong_op"}


def test_collect_with_the_template_engine_runs_through_the_real_evaluator(tmp_path):
    out = tmp_path / "c"
    args = ["collect", "--queries", str(ROOT / "data/synth/held_in"), "--problems", "1", "--engine", "template",
            "--engine-opt", "wrong=1.0", "--engine-opt", "slow=0", "--engine-opt", "fix=1.0", "--turns", "2", "--device", "cpu",
            "--workers", "1", "--seed", "0", "--out", str(out)]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.output
    (rec,) = [json.loads(x) for x in (out / "trajectories.jsonl").read_text().splitlines()]
    verdicts = [t["result"]["verdict"] for t in rec["turns"]]
    assert verdicts[0] != "ok" and verdicts[1] == "ok"  # always wrong first, always fixed after the feedback
    assert rec["rewards"][0] == 0.0 and rec["rewards"][1] > 0.5 and rec["best_round"] == 1
    assert rec["teacher"].startswith("template") and "Verdict:" in rec["messages"][3]["content"]
    res = runner.invoke(app, args[:-2] + ["--engine-opt", "wrong=2", "--out", str(tmp_path / "d")])
    assert res.exit_code == 2 and "probability" in res.output and "Traceback" not in res.output
