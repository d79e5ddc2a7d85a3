"""Tests for drk.engines: HFEngine (exact ids + log-probs), OpenAIEngine over real HTTP against ScriptedServer,
and the offline tiny model / tokenizer / chat template. CPU only, offline, well under a minute."""
from __future__ import annotations

import logging
import threading
import time

import pytest

torch = pytest.importorskip("torch")

from drk.engines import Engine, EngineError, EngineSpec, SamplingParams, make_engine, resolve_kind  # noqa: E402
from drk.engines.local import HFEngine  # noqa: E402
from drk.engines.openai_engine import OpenAIEngine  # noqa: E402
from drk.testing.scripted_server import ScriptedServer  # noqa: E402
from drk.engines.tiny import build_tiny_model, make_config  # noqa: E402

TOL = 1e-4
CONVS = [
    [{"role": "user", "content": "Write a kernel."}],
    [{"role": "system", "content": "You write fast Triton kernels."},
     {"role": "user", "content": "Hello, how are you today? Please write an add kernel with a mask."}],
    [{"role": "user", "content": "softmax"}, {"role": "assistant", "content": "def softmax(x): ..."},
     {"role": "user", "content": "The output was incorrect. Please fix the bug."}],
]


@pytest.fixture(scope="module")
def tiny():
    return build_tiny_model(seed=0)


@pytest.fixture(scope="module")
def engine(tiny):
    model, tokenizer = tiny
    return HFEngine(model, tokenizer)


# ------------------------------------------------------------------------------------------------ reference math
def teacher_forced_logits(model, prompt_ids, completion_ids):
    """Logits predicting each completion token, from one full forward pass (no cache)."""
    ids = torch.tensor([list(prompt_ids) + list(completion_ids)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float()
    start = len(prompt_ids) - 1
    return logits[start:start + len(completion_ids)]


def reference_logprobs(model, gen, temperature, top_k=0, top_p=1.0, vocab_limit=None):
    """Log-prob of each sampled id under log_softmax(logits / T), truncated and renormalised if asked."""
    logits = teacher_forced_logits(model, gen.prompt_token_ids, gen.token_ids)
    if vocab_limit is not None:
        logits[:, vocab_limit:] = float("-inf")
    logits = logits / temperature
    out = []
    for row, tok in zip(logits, gen.token_ids):
        keep = torch.ones_like(row, dtype=torch.bool)
        if top_k:
            keep &= row >= torch.sort(row, descending=True).values[top_k - 1]
        if top_p < 1.0:
            probs = torch.softmax(row, -1)
            order = torch.argsort(probs, descending=True)
            mass, nucleus = 0.0, torch.zeros_like(keep)
            for idx in order.tolist():
                nucleus[idx] = True
                mass += float(probs[idx])
                if mass >= top_p:
                    break
            keep &= nucleus
        masked = row.masked_fill(~keep, float("-inf"))
        out.append(float(torch.log_softmax(masked, -1)[tok]))
    return out


def max_abs_diff(a, b):
    assert len(a) == len(b) and len(a) > 0
    return max(abs(x - y) for x, y in zip(a, b))


def check_against_reference(model, gens, **kw):
    worst = 0.0
    for gen in gens:
        worst = max(worst, max_abs_diff(gen.logprobs, reference_logprobs(model, gen, **kw)))
    return worst


# ------------------------------------------------------------------------------------------------------ HFEngine
def test_hf_logprobs_match_teacher_forcing(tiny, engine):
    model, tokenizer = tiny
    out = engine.generate(CONVS, SamplingParams(temperature=0.7, max_new_tokens=24, n=2, seed=0))
    assert [len(gs) for gs in out] == [2, 2, 2]
    for conv, gens in zip(CONVS, out):
        expected_prompt = tokenizer.apply_chat_template(conv, add_generation_prompt=True, return_dict=False)
        for g in gens:
            assert g.prompt_token_ids == list(expected_prompt)
            assert len(g.token_ids) == len(g.logprobs) > 0
            assert g.usage == {"prompt_tokens": len(g.prompt_token_ids), "completion_tokens": len(g.token_ids)}
    worst = check_against_reference(model, [g for gs in out for g in gs], temperature=0.7)
    print(f"\nmax |sampled logprob - teacher-forced log_softmax(logits/0.7)| = {worst:.3e}")
    assert worst < TOL
    g = out[1][0]
    assert max_abs_diff(engine.logprobs_of(g.prompt_token_ids, g.token_ids, temperature=0.7), g.logprobs) < TOL


def test_hf_top_k_and_top_p_truncation(tiny, engine):
    model, _ = tiny
    out = engine.generate(CONVS, SamplingParams(temperature=0.7, top_k=5, max_new_tokens=16, n=2, seed=1))
    gens = [g for gs in out for g in gs]
    for g in gens:  # every sampled id is among the 5 most likely
        logits = teacher_forced_logits(model, g.prompt_token_ids, g.token_ids)
        top5 = torch.topk(logits, 5, dim=-1).indices
        assert all(tok in row.tolist() for tok, row in zip(g.token_ids, top5))
    worst_k = check_against_reference(model, gens, temperature=0.7, top_k=5)
    out = engine.generate(CONVS, SamplingParams(temperature=0.9, top_p=0.6, max_new_tokens=16, seed=2))
    worst_p = check_against_reference(model, [gs[0] for gs in out], temperature=0.9, top_p=0.6)
    print(f"\nmax abs diff with top_k=5: {worst_k:.3e}; with top_p=0.6: {worst_p:.3e}")
    assert worst_k < TOL and worst_p < TOL


def test_hf_batched_equals_unbatched(engine):
    greedy = SamplingParams(temperature=0.0, max_new_tokens=20)
    engine.take_timing()
    batched = engine.generate(CONVS, greedy)
    t = engine.take_timing()  # one batch: a decode step per token of its longest row (rounded up to a done-check)
    assert max(len(g[0].token_ids) for g in batched) <= t["decode_steps"] <= 20 and t["prefill_s"] > 0
    assert t["padded_prompt_tokens"] == len(CONVS) * max(len(g[0].prompt_token_ids) for g in batched)
    assert engine.take_timing()["decode_steps"] == 0
    for conv, gens in zip(CONVS, batched):
        single = engine.generate([conv], greedy)[0][0]
        assert single.token_ids == gens[0].token_ids
        assert max_abs_diff(single.logprobs, gens[0].logprobs) < TOL
    sampled = engine.generate(CONVS, SamplingParams(temperature=1.0, max_new_tokens=20, seed=3))
    for gens in sampled:  # batched (left-padded) sampling vs an unbatched, unpadded teacher-forced pass
        g = gens[0]
        assert max_abs_diff(engine.logprobs_of(g.prompt_token_ids, g.token_ids), g.logprobs) < TOL


def test_hf_seed_reproducible(engine):
    params = SamplingParams(temperature=1.0, max_new_tokens=16, n=2, seed=123)
    a = engine.generate(CONVS[:2], params)
    b = engine.generate(CONVS[:2], params)
    c = engine.generate(CONVS[:2], SamplingParams(temperature=1.0, max_new_tokens=16, n=2, seed=124))
    ids = lambda out: [g.token_ids for gs in out for g in gs]  # noqa: E731
    assert ids(a) == ids(b)
    assert [g.logprobs for gs in a for g in gs] == [g.logprobs for gs in b for g in gs]
    assert ids(a) != ids(c)
    assert not torch.are_deterministic_algorithms_enabled()  # the seeded call restored the global setting


def test_hf_n_samples_in_input_order(engine):
    out = engine.generate(CONVS, SamplingParams(temperature=1.0, max_new_tokens=12, n=4, seed=5))
    assert [len(gs) for gs in out] == [4, 4, 4]
    for conv, gens in zip(CONVS, out):
        assert all(g.prompt_token_ids == engine.encode_conversation(conv) for g in gens)
        assert len({tuple(g.token_ids) for g in gens}) > 1  # four independent samples


def _bias_logits(model, bias_by_id: dict[int, float]):
    """Forward hook adding a constant to chosen logits (the engine and the reference both see it)."""
    def hook(_module, _inputs, output):
        bias = torch.zeros(output.shape[-1], dtype=output.dtype)
        for tok, value in bias_by_id.items():
            bias[tok] = value
        return output + bias
    return model.lm_head.register_forward_hook(hook)


def test_hf_eos_handling():
    model, tokenizer = build_tiny_model(seed=1)
    engine = HFEngine(model, tokenizer)
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>")
    handle = _bias_logits(model, {im_end: 6.0})
    try:
        out = engine.generate(CONVS[:2], SamplingParams(temperature=1.0, max_new_tokens=40, n=6, seed=0))
        gens = [g for gs in out for g in gs]
        stopped = [g for g in gens if g.finish_reason == "stop"]
        assert stopped, "the bias should make some samples end on <|im_end|>"
        for g in gens:
            stops_inside = [t for t in g.token_ids[:-1] if t in engine.stop_ids]
            assert not stops_inside, "sample continued past a stop token"
            if g.finish_reason == "stop":
                assert g.token_ids[-1] in engine.stop_ids  # cut at EOS, inclusive
            else:
                assert g.finish_reason == "length" and len(g.token_ids) == 40
            assert "<|im_end|>" not in g.text
            assert g.text == tokenizer.decode(g.token_ids[:-1] if g.finish_reason == "stop" else g.token_ids)
        assert check_against_reference(model, gens, temperature=1.0) < TOL
    finally:
        handle.remove()


def test_hf_stop_string(tiny):
    model, tokenizer = tiny
    kernel = tokenizer.encode(" kernel", add_special_tokens=False)
    assert len(kernel) == 1
    handle = _bias_logits(model, {kernel[0]: 5.0})
    try:
        engine = HFEngine(model, tokenizer)
        gens = engine.generate(CONVS[:1], SamplingParams(max_new_tokens=40, n=4, seed=0, stop=[" kernel"]))[0]
        hit = [g for g in gens if g.finish_reason == "stop"]
        assert hit
        for g in hit:
            assert " kernel" not in g.text
            assert g.token_ids[-1] == kernel[0]  # ids keep the token that completed the stop string
            assert g.text == tokenizer.decode(g.token_ids[:-1])
    finally:
        handle.remove()


def test_hf_masks_padded_vocab():
    model, tokenizer = build_tiny_model(seed=2, vocab_size=None)
    padded, tok2 = build_tiny_model(seed=2, vocab_size=len(tokenizer) + 64)
    n_real = len(tok2)
    assert padded.config.vocab_size == n_real + 64
    handle = _bias_logits(padded, {i: 8.0 for i in range(n_real, n_real + 64)})  # padded ids would dominate
    try:
        params = SamplingParams(temperature=1.0, max_new_tokens=16, n=2, seed=0)
        gens = [g for gs in HFEngine(padded, tok2).generate(CONVS, params) for g in gs]
        assert all(t < n_real for g in gens for t in g.token_ids)
        assert check_against_reference(padded, gens, temperature=1.0, vocab_limit=n_real) < TOL
        unmasked = HFEngine(padded, tok2, mask_padded_vocab=False).generate(CONVS[:1], params)[0]
        assert any(t >= n_real for g in unmasked for t in g.token_ids)
    finally:
        handle.remove()


def test_hf_peft_lora_model():
    peft = pytest.importorskip("peft")
    base, tokenizer = build_tiny_model(seed=3)
    probe = torch.tensor([tokenizer.encode("def add(x, y):")])
    with torch.no_grad():
        base_logits = base(input_ids=probe).logits.clone()
    torch.manual_seed(0)
    config = peft.LoraConfig(r=4, lora_alpha=8, lora_dropout=0.5, target_modules=["q_proj", "v_proj"],
                             init_lora_weights=False)
    model = peft.get_peft_model(base, config)
    model.train()  # the engine must sample in eval mode (no LoRA dropout) and restore training mode
    engine = HFEngine(model, tokenizer)
    gens = [g for gs in engine.generate(CONVS[:2], SamplingParams(temperature=0.8, max_new_tokens=16, n=2, seed=0))
            for g in gs]
    assert model.training
    model.eval()
    with torch.no_grad():
        assert not torch.allclose(model(input_ids=probe).logits, base_logits)  # the adapter is active
    worst = check_against_reference(model, gens, temperature=0.8)
    print(f"\nPEFT LoRA max abs diff: {worst:.3e}")
    assert worst < TOL


def test_hf_static_decode_matches_dynamic(tiny):
    """The static-cache decoder (the CUDA-graph path, run eagerly on CPU) gives the dynamic loop's tokens and
    log-probs, with bucket rows that repeat the first prompt and chunks of different widths sharing one cache."""
    model, tokenizer = tiny
    dynamic = HFEngine(model, tokenizer, decode="dynamic", max_batch_rows=2)
    static = HFEngine(model, tokenizer, decode="static", max_batch_rows=2)
    for params in (SamplingParams(temperature=0.0, max_new_tokens=20),
                   SamplingParams(temperature=1.0, max_new_tokens=20, n=2, seed=7)):
        want, got = dynamic.generate(CONVS, params), static.generate(CONVS, params)
        for a, b in zip([g for gs in want for g in gs], [g for gs in got for g in gs]):
            assert b.token_ids == a.token_ids and b.finish_reason == a.finish_reason
            assert max_abs_diff(b.logprobs, a.logprobs) < TOL
    decoder = static._static
    assert decoder is not None and decoder.graph is None and (decoder.rows, decoder.max_len) == (8, 256)
    assert check_against_reference(model, [g for gs in got for g in gs], temperature=1.0) < TOL


def test_hf_static_decoder_is_kept_for_calls_of_its_bucket_and_seededness(tiny):
    static = HFEngine(*tiny, decode="static", max_batch_rows=2)
    static.generate(CONVS, SamplingParams(temperature=1.0, max_new_tokens=20, seed=7))
    decoder = static._static
    static.generate(CONVS[:1], SamplingParams(temperature=1.0, max_new_tokens=20, seed=1))
    assert static._static is decoder  # same bucket, seeded again: buffers reused
    static.generate(CONVS[:1], SamplingParams(temperature=0.0, max_new_tokens=20))
    # unseeded: no deterministic algorithms, so not the seeded call's graph
    assert static._static is not decoder and not static._static.deterministic


def test_hf_static_decoder_grows_for_a_longer_call_and_gives_the_same_tokens(tiny):
    model, tokenizer = tiny
    static = HFEngine(model, tokenizer, decode="static", max_batch_rows=2)
    static.generate(CONVS[:1], SamplingParams(temperature=0.0, max_new_tokens=20))
    decoder = static._static
    long = SamplingParams(temperature=0.0, max_new_tokens=300)
    long_call = static.generate(CONVS[:1], long)[0][0]
    assert static._static is not decoder and static._static.max_len == 512
    assert long_call.token_ids == HFEngine(model, tokenizer, decode="dynamic").generate(CONVS[:1], long)[0][0].token_ids


def test_hf_static_decoder_is_rebuilt_when_a_parameter_moves():
    model, tokenizer = build_tiny_model(seed=0)  # its own model: the test moves a weight's storage
    static = HFEngine(model, tokenizer, decode="static", max_batch_rows=2)
    params = SamplingParams(temperature=0.0, max_new_tokens=20)
    static.generate(CONVS[:1], params)
    decoder = static._static
    weight = model.get_input_embeddings().weight
    weight.data = weight.data.clone()  # same values, new storage: a captured graph would read the old one
    static.generate(CONVS[:1], params)
    assert static._static is not decoder


def test_hf_release_frees_the_static_decoder(tiny):
    static = HFEngine(*tiny, decode="static")
    static.generate(CONVS[:1], SamplingParams(temperature=0.0, max_new_tokens=4))
    assert static._static is not None
    static.release()
    assert static._static is None


def test_hf_static_decode_eager_attention_and_lora():
    """Eager attention takes the static decoder's additive float mask; a PEFT-wrapped model decodes the same."""
    peft = pytest.importorskip("peft")
    model, tokenizer = build_tiny_model(seed=4)
    model.set_attn_implementation("eager")
    lora = peft.get_peft_model(model, peft.LoraConfig(r=4, target_modules=["q_proj", "v_proj"],
                                                      init_lora_weights=False))
    params = SamplingParams(temperature=1.0, max_new_tokens=24, n=2, seed=3)
    for m in (model, lora):
        want = HFEngine(m, tokenizer, decode="dynamic").generate(CONVS, params)
        got = HFEngine(m, tokenizer, decode="static").generate(CONVS, params)
        pairs = list(zip([g for gs in want for g in gs], [g for gs in got for g in gs]))
        assert all(a.token_ids == b.token_ids and max_abs_diff(a.logprobs, b.logprobs) < TOL for a, b in pairs)


def test_hf_static_decode_refusals(tiny, monkeypatch):
    from drk.engines.decoders import static_supported

    model, tokenizer = tiny
    assert static_supported(model) == ""
    sliding = type(model.config).from_dict({**model.config.to_dict(), "layer_types": [
        "sliding_attention", "full_attention"], "use_sliding_window": True, "sliding_window": 4})
    sliding._attn_implementation = "sdpa"
    assert "layer types" in static_supported(type("M", (), {"config": sliding})())
    flash = type(model.config).from_dict(model.config.to_dict())
    flash._attn_implementation = "flash_attention_2"
    assert "needs sdpa or eager" in static_supported(type("M", (), {"config": flash})())
    with pytest.raises(EngineError, match="unknown decode mode"):
        HFEngine(model, tokenizer, decode="fast")
    with pytest.raises(EngineError, match="needs a CUDA device"):
        HFEngine(model, tokenizer, decode="graph").generate(CONVS[:1], SamplingParams(max_new_tokens=2))
    auto = HFEngine(model, tokenizer)  # auto on CPU = the dynamic loop, no static buffers
    auto.generate(CONVS[:1], SamplingParams(max_new_tokens=2))
    assert auto._static is None and auto.decode == "auto"
    monkeypatch.setenv("DRK_DECODE", "static")  # the CLI-wide switch; an explicit decode= still wins
    assert HFEngine(model, tokenizer).decode == "static"
    assert HFEngine(model, tokenizer, decode="dynamic").decode == "dynamic"
    monkeypatch.setenv("DRK_DECODE", "fastest")
    with pytest.raises(EngineError, match="unknown decode mode 'fastest'"):
        HFEngine(model, tokenizer)


def test_hf_engine_from_saved_dir(tmp_path, tiny):
    build_tiny_model(tmp_path / "tiny", seed=0)
    eng = make_engine(EngineSpec(model=str(tmp_path / "tiny"), device="cpu", dtype="float32"))
    assert isinstance(eng, HFEngine) and isinstance(eng, Engine)
    out = eng.generate(CONVS[:1], SamplingParams(temperature=0.0, max_new_tokens=8))
    ref = HFEngine(*tiny).generate(CONVS[:1], SamplingParams(temperature=0.0, max_new_tokens=8))
    assert out[0][0].token_ids == ref[0][0].token_ids
    assert eng.usage()["requests"] == 1 and eng.usage()["completion_tokens"] == 8
    with pytest.raises(EngineError):
        make_engine(EngineSpec(model=str(tmp_path / "does-not-exist"), kind="hf"))


def test_make_engine_kinds():
    assert resolve_kind(EngineSpec(model="m", base_url="http://127.0.0.1:1/v1")) == "openai"
    assert resolve_kind(EngineSpec(model="some/path")) == "hf"
    with pytest.raises(EngineError):
        resolve_kind(EngineSpec(model="m", kind="tgi"))
    try:
        import vllm  # noqa: F401
    except ImportError:
        with pytest.raises(EngineError, match="pip install"):
            make_engine(EngineSpec(model="m", kind="vllm"))


# -------------------------------------------------------------------------------------------------- OpenAIEngine
FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05}


def openai_engine(srv, **kw):
    extra = {**FAST, **kw.pop("extra", {})}
    return OpenAIEngine(EngineSpec(model="scripted", base_url=srv.base_url, timeout_s=10, extra=extra, **kw))


def echo(messages, request, index):
    return f"reply {index} to: {messages[-1]['content']}"


def test_openai_normal_reply():
    with ScriptedServer(echo) as srv:
        eng = openai_engine(srv)
        assert isinstance(eng, Engine)
        out = eng.generate(CONVS[:2], SamplingParams(temperature=0.5, top_p=0.9, max_new_tokens=64, seed=7,
                                                     stop=["```\n"]))
    assert [len(gs) for gs in out] == [1, 1]
    assert out[0][0].text.endswith("to: Write a kernel.") and out[0][0].finish_reason == "stop"
    assert out[0][0].token_ids is None and out[0][0].logprobs is None and out[0][0].error == ""
    sent = sorted(srv.requests, key=lambda r: len(r["messages"]))
    assert sent[0]["messages"] == CONVS[0] and sent[1]["messages"] == CONVS[1]
    assert sent[0]["temperature"] == 0.5 and sent[0]["top_p"] == 0.9 and sent[0]["max_tokens"] == 64
    assert sent[0]["seed"] == 7 and sent[0]["stop"] == ["```\n"] and sent[0]["n"] == 1 and "logprobs" not in sent[0]
    usage = eng.usage()
    assert usage["requests"] == 2 and usage["retries"] == 0 and usage["errors"] == 0
    assert usage["completion_tokens"] == sum(g.usage["completion_tokens"] for gs in out for g in gs) > 0
    assert usage["prompt_tokens"] == sum(g.usage["prompt_tokens"] for gs in out for g in gs) > 0


@pytest.mark.parametrize("honour_n", [True, False])
def test_openai_n3(honour_n):
    with ScriptedServer(echo, honour_n=honour_n) as srv:
        eng = openai_engine(srv)
        out = eng.generate(CONVS[:1], SamplingParams(n=3, seed=10))
    assert len(out[0]) == 3 and len({g.text for g in out[0]}) == 3
    assert all(g.finish_reason == "stop" for g in out[0])
    assert len(srv.requests) == (1 if honour_n else 3)
    if not honour_n:  # top-up requests ask for the rest, with distinct seeds
        assert [r["n"] for r in srv.requests] == [3, 2, 1] and [r["seed"] for r in srv.requests] == [10, 11, 12]


@pytest.mark.parametrize("status", [500, 429])
def test_openai_retries_then_succeeds(status):
    with ScriptedServer(lambda m, r, i: status if i == 0 else "ok") as srv:
        eng = openai_engine(srv)
        out = eng.generate(CONVS[:1], SamplingParams())
    assert out[0][0].text == "ok" and out[0][0].finish_reason == "stop"
    assert eng.usage() | {"prompt_tokens": 0, "completion_tokens": 0} == {
        "requests": 2, "retries": 1, "errors": 0, "prompt_tokens": 0, "completion_tokens": 0}


def test_openai_persistent_failure_is_returned_not_raised():
    with ScriptedServer(lambda m, r, i: 503) as srv:
        eng = openai_engine(srv, max_retries=2)
        out = eng.generate(CONVS[:2], SamplingParams(n=2))
    assert [len(gs) for gs in out] == [2, 2]
    for g in (g for gs in out for g in gs):
        assert g.finish_reason == "error" and "503" in g.error and "\n" not in g.error and g.text == ""
    assert eng.usage()["requests"] == 6 and eng.usage()["retries"] == 4 and eng.usage()["errors"] == 2
    with ScriptedServer(lambda m, r, i: 400) as srv:  # a client error is not retried
        eng = openai_engine(srv, max_retries=3)
        g = eng.generate(CONVS[:1], SamplingParams())[0][0]
    assert g.finish_reason == "error" and "400" in g.error and eng.usage()["retries"] == 0


def test_openai_unreachable_endpoint():
    srv = ScriptedServer(echo).start()
    url = srv.base_url
    srv.stop()  # nothing listens on that port any more
    eng = OpenAIEngine(EngineSpec(model="m", base_url=url, max_retries=1, timeout_s=2, extra=FAST))
    g = eng.generate(CONVS[:1], SamplingParams())[0][0]
    assert g.finish_reason == "error" and "connection" in g.error.lower()
    assert eng.usage()["retries"] == 1 and eng.usage()["errors"] == 1


def test_openai_concurrency_cap():
    lock, state = threading.Lock(), {"now": 0, "peak": 0}

    def slow(messages, request, index):
        with lock:
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
        time.sleep(0.15)
        with lock:
            state["now"] -= 1
        return "done"

    with ScriptedServer(slow) as srv:
        eng = openai_engine(srv, max_concurrency=3)
        out = eng.generate([CONVS[0]] * 9, SamplingParams())
    assert all(gs[0].text == "done" for gs in out)
    print(f"\npeak concurrent requests: {state['peak']} (cap 3)")
    assert state["peak"] == 3 and srv.max_in_flight == 3


def test_openai_logprobs_opt_in():
    with ScriptedServer(lambda m, r, i: "a b c") as srv:
        out = openai_engine(srv, extra={"logprobs": True}).generate(CONVS[:1], SamplingParams())
    assert srv.requests[0]["logprobs"] is True and out[0][0].logprobs == [-1.0, -1.0, -1.0]


def test_openai_api_key_never_leaks(monkeypatch, caplog):
    secret = "sk-drk-TOPSECRET-0123456789abcdef"
    monkeypatch.setenv("DRK_TEST_API_KEY", secret)
    caplog.set_level(logging.DEBUG)
    with ScriptedServer(lambda m, r, i: 500 if i % 2 == 0 else "fine") as srv:
        eng = openai_engine(srv, api_key_env="DRK_TEST_API_KEY", max_retries=0)
        out = eng.generate(CONVS, SamplingParams(n=1))
    assert srv.authorizations and all(a == f"Bearer {secret}" for a in srv.authorizations)  # the key is used
    texts = [repr(eng), str(eng.spec), repr(out), repr(eng.usage()), caplog.text]
    assert any(g.finish_reason == "error" for gs in out for g in gs)
    assert all(secret not in t for t in texts)
    monkeypatch.delenv("DRK_TEST_API_KEY")
    with pytest.raises(EngineError) as info:
        OpenAIEngine(EngineSpec(model="m", base_url="https://api.example.com/v1", api_key_env="DRK_TEST_API_KEY"))
    assert "DRK_TEST_API_KEY" in str(info.value)
    OpenAIEngine(EngineSpec(model="m", base_url="http://localhost:9/v1", api_key_env="DRK_TEST_API_KEY"))  # EMPTY


# ------------------------------------------------------------------------------------------- tiny model + template
def test_tiny_model_saves_and_reloads(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    t0 = time.time()
    model, tokenizer = build_tiny_model(tmp_path / "m", seed=0)
    assert time.time() - t0 < 10
    assert 1000 <= len(tokenizer) <= 2000 and model.config.vocab_size == len(tokenizer)
    cfg = model.config
    shape = (cfg.model_type, cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads,
             cfg.num_key_value_heads, cfg.intermediate_size, cfg.tie_word_embeddings)
    assert shape == ("qwen3", 64, 2, 4, 2, 128, True)
    model2 = AutoModelForCausalLM.from_pretrained(tmp_path / "m")
    tok2 = AutoTokenizer.from_pretrained(tmp_path / "m")
    text = "import triton\n@triton.jit\ndef k(x_ptr):\n    pid = tl.program_id(0)  # héllo"
    ids = tokenizer.encode(text)
    assert tok2.encode(text) == ids and tok2.decode(ids) == text
    assert tok2.chat_template == tokenizer.chat_template and tok2.eos_token == "<|im_end|>"
    with torch.no_grad():
        assert torch.equal(model(input_ids=torch.tensor([ids])).logits, model2(input_ids=torch.tensor([ids])).logits)
    same, _ = build_tiny_model(seed=0)
    other, _ = build_tiny_model(seed=1)
    w = lambda m: m.model.layers[0].self_attn.q_proj.weight  # noqa: E731
    assert torch.equal(w(model), w(same)) and not torch.equal(w(model), w(other))


def test_chat_template_assistant_mask(tiny):
    _, tokenizer = tiny
    conv = CONVS[2] + [{"role": "assistant", "content": "@triton.jit\ndef fixed(x_ptr, n):\n    return"}]
    enc = tokenizer.apply_chat_template(conv, return_dict=True, return_assistant_tokens_mask=True)
    ids, mask = enc["input_ids"], enc["assistant_masks"]
    spans, current = [], []
    for tok, m in zip(ids, mask):
        if m:
            current.append(tok)
        elif current:
            spans.append(current)
            current = []
    if current:
        spans.append(current)
    expected = [m["content"] + "<|im_end|>" for m in conv if m["role"] == "assistant"]
    assert [tokenizer.decode(s) for s in spans] == expected
    # prompt (generation prompt) + the assistant turn's tokens = the conversation with that turn, token for token
    prompt = tokenizer.apply_chat_template(conv[:-1], add_generation_prompt=True, return_dict=False)
    assert list(ids[:len(prompt)]) == list(prompt)
    trl_templates = pytest.importorskip("trl.chat_template_utils")
    has_generation_markers = trl_templates.has_generation_markers
    is_chat_template_stop_token_trained = trl_templates.is_chat_template_stop_token_trained

    assert has_generation_markers(tokenizer.chat_template)
    assert is_chat_template_stop_token_trained(tokenizer)


def test_qwen3_06b_config_shape(tiny):
    from transformers import AutoModelForCausalLM

    _, tokenizer = tiny
    cfg = make_config("qwen3-0.6b", tokenizer)
    assert (cfg.hidden_size, cfg.num_hidden_layers, cfg.num_attention_heads, cfg.num_key_value_heads,
            cfg.head_dim, cfg.intermediate_size, cfg.vocab_size) == (1024, 28, 16, 8, 128, 3072, 151936)
    assert cfg.rope_parameters["rope_theta"] == 1_000_000.0 and cfg.tie_word_embeddings
    assert cfg.vocab_size > len(tokenizer)  # padded: engines must mask ids >= len(tokenizer)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    assert sum(p.numel() for p in model.parameters()) == 596_049_920  # Qwen3-0.6B, tied embeddings


def _shape_and_size(size: str, tokenizer) -> tuple:
    """(hidden, layers, vocab) of an offline size and its parameter count, without allocating it."""
    from transformers import AutoModelForCausalLM

    cfg = make_config(size, tokenizer)
    with torch.device("meta"):
        n = sum(p.numel() for p in AutoModelForCausalLM.from_config(cfg).parameters())
    return (cfg.hidden_size, cfg.num_hidden_layers, cfg.vocab_size), n


def test_small_config_is_a_bigger_offline_shape_with_the_same_tokenizer(tiny):
    _, tokenizer = tiny
    shape, n = _shape_and_size("small", tokenizer)
    assert shape == (128, 4, len(tokenizer))
    assert 900_000 < n < 1_100_000  # the CPU smoke run's policy: about 6x "tiny" (984,448 parameters)
    with pytest.raises(ValueError, match="small"):
        make_config("huge", tokenizer)


def test_base_config_is_a_real_size_architecture_of_at_least_100m_parameters(tiny):
    _, tokenizer = tiny
    shape, n = _shape_and_size("base", tokenizer)
    assert shape == (768, 16, len(tokenizer))
    assert n == 101_870_336  # the GPU learning run's policy (issue 16 asks for at least ~100M)


# ------------------------------------------------------------------------------------------------------------ GPU
@pytest.mark.gpu
def test_hf_engine_cuda_bf16_qwen3_06b_shape():
    """On a GPU: the real Qwen3-0.6B shape in bf16, vocab padded past the tokenizer; ids masked, log-probs agree
    with a teacher-forced pass up to bf16 noise, and seeded sampling reproduces."""
    if not torch.cuda.is_available():
        pytest.skip("needs CUDA")
    model, tokenizer = build_tiny_model(size="qwen3-0.6b", seed=0, dtype="bfloat16", device="cuda")
    engine = HFEngine(model, tokenizer)
    params = SamplingParams(temperature=1.0, max_new_tokens=128, n=4, seed=0)
    torch.cuda.synchronize()
    t0 = time.time()
    out = engine.generate(CONVS * 4, params)
    torch.cuda.synchronize()
    seconds = time.time() - t0
    gens = [g for gs in out for g in gs]
    tokens = sum(len(g.token_ids) for g in gens)
    assert all(t < len(tokenizer) for g in gens for t in g.token_ids)
    diffs = [abs(a - b) for g in gens[:8]
             for a, b in zip(engine.logprobs_of(g.prompt_token_ids, g.token_ids), g.logprobs)]
    diffs.sort()
    median, worst = diffs[len(diffs) // 2], diffs[-1]
    print(f"\n{len(gens)} rows x {params.max_new_tokens} steps: {tokens} tokens in {seconds:.2f}s "
          f"({tokens / seconds:.0f} tok/s); bf16 |logprob diff| median {median:.2e} max {worst:.2e}")
    assert median < 0.05 and worst < 1.0
    again = engine.generate(CONVS * 4, params)  # seeded: deterministic kernels make bf16 CUDA sampling repeat
    assert [g.token_ids for gs in again for g in gs] == [g.token_ids for g in gens]
    assert engine._static is not None and engine._static.graph is not None  # the default on CUDA: graph replay
    dynamic = HFEngine(model, tokenizer, decode="dynamic")
    for eng in (engine, dynamic):
        eng.generate(CONVS * 4, params)
        eng.take_timing()
        eng.generate(CONVS * 4, params)
        print(f"{eng.decode}: {eng.take_timing()['decode_ms_per_step']:.1f} ms per decode step")
    greedy = SamplingParams(temperature=0.0, max_new_tokens=32)
    a, b = engine.generate(CONVS, greedy), dynamic.generate(CONVS, greedy)
    same = sum(x[0].token_ids[:8] == y[0].token_ids[:8] for x, y in zip(a, b))
    print(f"greedy graph vs dynamic: {same}/{len(CONVS)} rows share their first 8 tokens (bf16)")
    assert same >= 1


def test_the_engine_kind_the_user_names_is_the_one_built(tmp_path, tiny):
    """`--engine hf` with a --base-url must load the local model, not call the endpoint: the kind was dropped
    on the way to the engine factory, so every kind but template fell back to "auto"."""
    from drk.engines.local import HFEngine
    from drk.loading import EngineOptions, load_engine

    model, tokenizer = tiny
    model.save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    eng = load_engine(EngineOptions(model=str(tmp_path / "m"), base_url="http://127.0.0.1:9/v1", kind="hf"), "cpu")
    assert isinstance(eng, HFEngine)


def test_hf_generation_holds_the_gpu_shared_and_lets_measurements_in_at_each_sync_point(tiny):
    """`drk rl` generates (the next step's first turns, the next chunk) while the evaluators on the same GPU
    measure kernels: the policy's decode steps, time-sliced with a candidate's timed calls, changed that
    candidate's time (and so its reward) and slowed the evaluation. So the engine runs its GPU work inside
    `gpu_hold` (the evaluators' lock, shared) and lets go at each point where the device has finished the
    steps so far (every `sync_every` decode steps), where a waiting measurement takes the GPU. The tokens are
    the same with and without it."""
    model, tokenizer = tiny
    events, state = [], {"held": False}

    class Hold:
        def __enter__(self):
            assert not state["held"], "the hold is taken twice"
            state["held"] = True
            events.append("enter")

        def __exit__(self, *exc):
            state["held"] = False
            events.append("exit")

    calls = []
    engine = HFEngine(model, tokenizer, decode="dynamic", sync_every=4)
    inner = engine.model.forward

    def forward(*a, **k):  # every forward of the model (prefill and each decode step) runs inside the hold
        calls.append(state["held"])
        return inner(*a, **k)

    params = SamplingParams(temperature=1.0, max_new_tokens=24, seed=3, stop=[])
    want = engine.generate(CONVS, params)
    engine.gpu_hold = Hold
    engine.model.forward = forward
    try:
        got = engine.generate(CONVS, params)
    finally:
        del engine.model.forward
    assert [g.token_ids for gs in got for g in gs] == [g.token_ids for gs in want for g in gs]
    assert calls and all(calls), "a forward ran outside the hold"
    assert not state["held"] and events[-1] == "exit"
    steps = max(len(g.token_ids) for gs in got for g in gs)
    # one hold per prefill, then one more after each sync point passed without every row done
    assert events.count("enter") == events.count("exit") >= 1 + (steps - 1) // 4


def test_no_decode_step_runs_while_a_measurement_holds_the_gpu_lock(tiny, tmp_path):
    """The same with the evaluators' real lock (drk.gym.judge.devicelock, in a folder of its own): a thread
    that takes it exclusively, as a judge timing a kernel does, over and over while the engine generates,
    never sees a forward of the policy's run inside its hold, and the generation still finishes."""
    from drk.gym.judge.devicelock import DeviceLock

    lock = DeviceLock("test-gpu", directory=str(tmp_path))
    model, tokenizer = tiny
    engine = HFEngine(model, tokenizer, decode="dynamic", sync_every=2)
    engine.gpu_hold = lock.shared
    state = {"measuring": False, "overlaps": 0, "holds": 0, "stop": False}
    inner = engine.model.forward

    def forward(*a, **k):
        if state["measuring"]:
            state["overlaps"] += 1
        out = inner(*a, **k)
        if state["measuring"]:
            state["overlaps"] += 1
        return out

    def measure():
        while not state["stop"]:
            with lock.exclusive():
                state["measuring"] = True
                time.sleep(0.01)
                state["measuring"] = False
                state["holds"] += 1
            time.sleep(0.002)

    engine.model.forward = forward
    t = threading.Thread(target=measure)
    t.start()
    try:
        gens = engine.generate(CONVS, SamplingParams(temperature=1.0, max_new_tokens=40, seed=5, stop=[]))
    finally:
        state["stop"] = True
        t.join()
        del engine.model.forward
    assert all(g.token_ids for gs in gens for g in gs)
    assert state["holds"] >= 3 and state["overlaps"] == 0


def test_gpu_hold_lets_go_only_once_the_device_has_finished(monkeypatch):
    """A hold let go while its kernels still run would let a measurement start beside them: on CUDA the device is
    synchronised before every release (exit and `let_in`); a block ending in an exception is released without it
    (a broken context would raise again), but released."""
    from contextlib import contextmanager
    from types import SimpleNamespace

    import torch

    from drk.engines.local import GpuHold

    log = []

    @contextmanager
    def shared():
        log.append("in")
        try:
            yield
        finally:
            log.append("out")
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: log.append("sync"))
    with GpuHold(shared, SimpleNamespace(type="cuda")) as hold:
        hold.let_in()
    assert log == ["in", "sync", "out", "in", "sync", "out"]
    log.clear()
    with pytest.raises(RuntimeError), GpuHold(shared, SimpleNamespace(type="cuda")):
        raise RuntimeError("kernel failed")
    assert log == ["in", "out"]
    log.clear()
    with GpuHold(shared, torch.device("cpu")) as hold:
        hold.let_in()
    assert log == ["in", "out", "in", "out"]
