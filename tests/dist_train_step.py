"""Helper for tests/test_distributed.py (not collected by pytest): one `drk rl` training step on fixed rows,
run either as one process or under `torchrun --nproc_per_node N` (each rank takes rows[rank::N]).
Writes the parameter update (new - old) of rank 0 to argv[1]."""
import sys

import torch
from accelerate import Accelerator

from drk.config import load_config
from drk.engines.base import SamplingParams
from drk.engines.local import HFEngine
from drk.engines.tiny import build_tiny_model
from drk.train.batch import TurnRow
from drk.stages.rl import RLConfig, old_logprobs, train_on_rows


def main() -> None:
    out = sys.argv[1]
    acc = Accelerator(cpu=True)
    torch.manual_seed(0)
    model, tok = build_tiny_model(None, seed=0)
    # the default loss scaling (turn-sums over a nominal row count, / 1000); nominal = all 12 rows and lr = the
    # scale factor keep the update as large as a plain turn mean's, well above float32's resolution
    cfg = load_config(RLConfig, None, {"micro_batch_tokens": 512, "temperature": 1.0, "updates_per_step": 1,
                                       "loss_scaling": {"nominal_rows": 12}})
    # identical rows on every rank: same model, same prompts, same seed
    eng = HFEngine(model, tok)
    convs = [[{"role": "user", "content": f"task {i}: write a kernel"}] for i in range(6)]
    gens = eng.generate(convs, SamplingParams(max_new_tokens=12, n=2, seed=7))
    rows = [TurnRow(g.prompt_token_ids, g.token_ids, g.logprobs, float((k % 5) - 2) / 2, i, (i, k % 2, 0))
            for i, gs in enumerate(gens) for k, g in enumerate(gs)]
    mine = rows[acc.process_index::acc.num_processes]
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.SGD(model.parameters(), lr=cfg.loss_scaling.scale_factor)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda _: 1.0)
    model, opt, sched = acc.prepare(model, opt, sched)
    model.eval()
    logp_old = old_logprobs(model, mine, cfg, tok.pad_token_id, None)
    model.train()
    stats = train_on_rows(model, opt, sched, acc, mine, logp_old, torch.ones(len(mine), dtype=torch.bool), cfg,
                          tok.pad_token_id, None)
    if acc.is_main_process:
        after = dict(acc.unwrap_model(model).named_parameters())
        torch.save({"update": {n: (after[n].detach() - before[n]) for n in before}, "loss": stats["loss"]}, out)
    # leave together: a rank that exits while its peer is still in gloo's last exchange can abort the peer
    acc.wait_for_everyone()
    acc.end_training()


if __name__ == "__main__":
    main()
