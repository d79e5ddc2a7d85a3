"""Do the eager and the CUDA-graph decoders write the same text from a trained checkpoint? (a diagnostic, not a
test): greedy replies of both to the first user turns of a trajectories file, with the character where they
part and the start of each.

    python3 bench/decode_check.py MODEL_DIR R/collect/trajectories.jsonl --n 4
"""
from __future__ import annotations

import argparse
import json


def _greedy_without_cache(model, tok, conv, n: int) -> str:
    """The reference the decoders must match: every token from a full forward over everything so far."""
    import torch

    ids = tok.apply_chat_template(conv, add_generation_prompt=True, tokenize=True, return_dict=False)
    ids = torch.tensor([list(ids)], device=model.device)
    start = ids.shape[1]
    with torch.no_grad():
        for _ in range(n):
            nxt = model(input_ids=ids).logits[0, -1].argmax()
            ids = torch.cat([ids, nxt.view(1, 1)], 1)
            if int(nxt) == tok.convert_tokens_to_ids("<|im_end|>"):
                break
    return tok.decode(ids[0, start:], skip_special_tokens=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("trajectories")
    ap.add_argument("--n", type=int, default=4)
    ap.add_argument("--max-new-tokens", type=int, default=500)
    a = ap.parse_args()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from drk.engines.base import SamplingParams
    from drk.engines.local import HFEngine

    tok = AutoTokenizer.from_pretrained(a.model)
    cuda = torch.cuda.is_available()
    model = AutoModelForCausalLM.from_pretrained(a.model, dtype=torch.bfloat16 if cuda else torch.float32)
    model = model.to("cuda" if cuda else "cpu")
    fast = "graph" if cuda else "static"  # on a CPU: the graph's decoder run eagerly
    convs, seen = [], set()
    for line in open(a.trajectories):
        ep = json.loads(line)
        msgs = ep["messages"]
        reply = next(i for i, m in enumerate(msgs) if m["role"] == "assistant")
        if ep["task"] not in seen and len(convs) < a.n:
            seen.add(ep["task"])
            convs.append(msgs[:reply])
    params = SamplingParams(temperature=0.0, max_new_tokens=a.max_new_tokens)
    texts = {mode: [g[0].text for g in HFEngine(model, tok, decode=mode).generate(convs, params)]
             for mode in ("dynamic", fast)}
    texts["no cache"] = [_greedy_without_cache(model, tok, conv, min(200, a.max_new_tokens)) for conv in convs]
    for i, (d, g) in enumerate(zip(texts["dynamic"], texts[fast])):
        part = next((k for k, (x, y) in enumerate(zip(d, g)) if x != y), min(len(d), len(g)))
        print(f"prompt {i}: {len(d)} / {len(g)} chars, equal up to {part}; "
              f"code block closed: {d.count('```') >= 2} / {g.count('```') >= 2}")
        print("  dynamic:", repr(d[:400]))
        print(f"  {fast}:".ljust(10), repr(g[:400]))
        print("  no cache:", repr(texts["no cache"][i][:400]))


if __name__ == "__main__":
    main()
