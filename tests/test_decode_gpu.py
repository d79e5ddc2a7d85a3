"""The CUDA-graph decoder computes what the eager decoder computes, at the size and dtype the GPU learning run
samples with ("base", bf16): the same teacher-forced tokens through both give the same next-token logits, over
a second call of another prompt width too (the captured graph is replayed, not recaptured).

    DRK_TEST_DEVICE=cuda .venv/bin/python -m pytest -q -m gpu tests/test_decode_gpu.py
"""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")]


def _forced_logits(decoder, prompts, forced):
    out = [decoder.prefill(prompts).float()]
    for t in range(forced.shape[1]):
        out.append(decoder.step(forced[:, t]).float())
    return torch.stack(out, 1)  # [rows, steps + 1, vocab]


def test_graph_decoder_gives_the_eager_decoders_logits():
    from drk.engines.decoders import DynamicDecoder, StaticDecoder, buckets
    from drk.engines.tiny import build_tiny_model

    model, tok = build_tiny_model(size="base", dtype="bfloat16", device="cuda")
    model = model.to("cuda").eval()
    g = torch.Generator().manual_seed(0)
    vocab = len(tok) - 10
    graph = StaticDecoder(model, *buckets(3, 600), tok.pad_token_id, use_graph=True)
    with torch.no_grad():
        for lengths in ((180, 150, 200), (90, 240, 60)):  # the second call replays the first call's graph
            prompts = [torch.randint(10, vocab, (n,), generator=g).tolist() for n in lengths]
            forced = torch.randint(10, vocab, (3, 200), generator=g).cuda()
            want = _forced_logits(DynamicDecoder(model, tok.pad_token_id), prompts, forced)
            got = _forced_logits(graph, prompts, forced)
            assert graph.graph is not None
            diff = (want - got).abs().amax(-1)  # [rows, steps]
            # bf16 rounding moves logits by a few hundredths; a wrong position or cache slot moves them by the
            # logits' own spread (about 0.5 for this random model)
            assert diff.max().item() < 0.15, (lengths, diff.max(-1).values.tolist())
            # the argmax must agree wherever it is decided by more than rounding (a random model's top two
            # logits are often closer than that, and then either choice is right)
            top2 = want.topk(2, -1).values
            decided = (top2[..., 0] - top2[..., 1]) > 0.1
            agree = (want.argmax(-1) == got.argmax(-1))[decided].float().mean().item()
            assert decided.sum() > 100 and agree > 0.99, (lengths, int(decided.sum()), agree)
