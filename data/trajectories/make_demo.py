"""Regenerate `demo.jsonl`: real `drk collect` trajectories on the project's own queries, with a scripted
teacher (the project's own solutions; a deliberately broken first try on some queries), evaluated on the
CPU evaluator. Used by the tiny SFT recipe and the SFT tests.

    .venv/bin/python data/trajectories/make_demo.py
"""
from __future__ import annotations

from pathlib import Path

from drk.agent.episode import EpisodeConfig
from drk.stages.collect import collect
from drk.engines import EngineSpec, make_engine
from drk.engines.base import SamplingParams
from drk.gym import EvalOptions, LocalPool
from drk.testing.scripted_server import ScriptedServer
from drk.tasks.queries import load_queries

HERE = Path(__file__).resolve().parent
DATA = HERE.parent


def main() -> None:
    sols = {p.stem: p.read_text() for p in (DATA / "query_solutions").glob("*.py")}
    tasks = [t for t in load_queries(str(DATA / "queries")) if t.id.split("/")[1] in sols]

    def script(messages, req, i):
        task = next(t for t in tasks if t.source.strip() in messages[1]["content"])
        code = sols[task.id.split("/")[1]]
        turn = sum(m["role"] == "assistant" for m in messages)
        if turn == 0 and task.problem_id % 2 == 1:  # odd queries: a first try that forgets to write the output
            code = code.replace("return out", "return torch.zeros_like(out)", 1)
        return f"I will write one fused Triton kernel.\n```python\n{code}```"

    cfg = EpisodeConfig(turns=2, sampling=SamplingParams(max_new_tokens=4096),
                        eval_options=EvalOptions(device="cpu", input_budget_mb=0.25))
    out = HERE / "demo-run"
    with ScriptedServer(script) as srv, LocalPool(device="cpu", workers=2) as pool:
        engine = make_engine(EngineSpec(model="scripted-teacher", base_url=srv.base_url))
        collect(tasks, engine, pool, cfg, out, teacher="scripted-teacher")
    (out / "trajectories.jsonl").replace(HERE / "demo.jsonl")
    for f in out.iterdir():
        f.unlink()
    out.rmdir()


if __name__ == "__main__":
    main()
