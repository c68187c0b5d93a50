"""torch.compile(backend="kiln") on a CUDA GPU, against eager PyTorch on the same GPU: an MLP,
a CNN (convolution, batch norm, pooling) and a small BERT, inference and training steps, half
precision, torch's stream and TF32 flags. scripts/gpu-check runs this folder on the GPU machine;
CI has no GPU (tests/python/test_torch_cuda.py covers what it can without one).
"""
import pytest
import torch

import kiln

STRICT = {"unsupported_ops": "error"}  # every op in kiln: no silent eager fallback

if not torch.cuda.is_available() or kiln._kiln.cuda_unavailable_reason():
    raise RuntimeError("tests/gpu needs a CUDA GPU and torch's CUDA build (scripts/gpu-check)")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.fixture
def exact_float32():
    """torch's default lets cuDNN round float32 to TF32; the comparisons below want it exact
    (kiln follows torch's flags, so both sides change together)."""
    saved = torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
    yield
    torch.backends.cudnn.allow_tf32, torch.backends.cuda.matmul.allow_tf32 = saved


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.GELU(), torch.nn.Linear(128, 32),
                               torch.nn.LayerNorm(32))


def cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.MaxPool2d(2), torch.nn.Conv2d(16, 32, 3, stride=2, padding=1, bias=False),
        torch.nn.BatchNorm2d(32), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(), torch.nn.Linear(32, 10))


@pytest.mark.parametrize("mode", ["default", "reduce-overhead", "max-autotune"])
def test_mlp_inference_matches_eager(mode, exact_float32):
    model = mlp().cuda().eval()
    compiled = torch.compile(model, backend="kiln", options={**STRICT, "mode": mode})
    with torch.no_grad():
        for _ in range(4):  # reduce-overhead: learns addresses, captures, replays
            x = torch.randn(37, 64, device="cuda")
            got = compiled(x)
            assert got.device == x.device
            torch.testing.assert_close(got, model(x), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("channels_last", [False, True])
def test_cnn_inference_matches_eager(channels_last, exact_float32):
    model = cnn().cuda().eval()
    x = torch.randn(4, 3, 32, 32, device="cuda")
    if channels_last:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    compiled = torch.compile(model, backend="kiln", options=STRICT)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)


def test_tf32_follows_torchs_flags():
    model = cnn().cuda().eval()
    x = torch.randn(4, 3, 32, 32, device="cuda")
    compiled = torch.compile(model, backend="kiln", options=STRICT)
    with torch.no_grad():  # torch's default: TF32 convolutions on both sides
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-2, atol=1e-2)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_small_bert_inference_matches_eager(mode, exact_float32):
    from transformers import BertConfig, BertModel
    torch.manual_seed(0)
    config = BertConfig(vocab_size=100, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                        intermediate_size=128, max_position_embeddings=32)
    model = BertModel(config).cuda().eval()
    compiled = torch.compile(model, backend="kiln", options={**STRICT, "mode": mode})
    with torch.no_grad():
        for _ in range(3):
            tokens = torch.randint(0, 100, (2, 16), device="cuda")
            torch.testing.assert_close(compiled(tokens).last_hidden_state,
                                       model(tokens).last_hidden_state, rtol=1e-4, atol=1e-4)


def training_run(make, options, steps):
    """(losses, parameters) of SGD steps on `make()`'s model, eager (options None) or kiln."""
    model = make().cuda()
    forward = torch.compile(model, backend="kiln", options=options) if options else model
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    torch.manual_seed(3)
    shape = (8, 64) if make is mlp else (8, 3, 16, 16)
    losses = []
    for _ in range(steps):
        x = torch.randn(*shape, device="cuda")
        opt.zero_grad()
        loss = forward(x).square().mean()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return torch.tensor(losses), [p.detach().cpu() for p in model.parameters()]


def expect_same_training(make, options, steps, losses_close, parameters_close):
    """kiln's training against eager's: losses and parameters within (rtol, atol) each."""
    got_losses, got_parameters = training_run(make, options, steps)
    want_losses, want_parameters = training_run(make, None, steps)
    rtol, atol = losses_close
    torch.testing.assert_close(got_losses, want_losses, rtol=rtol, atol=atol)
    rtol, atol = parameters_close
    for got, want in zip(got_parameters, want_parameters):
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("make", [mlp, cnn], ids=["mlp", "cnn"])
def test_training_steps_match_eager(make, mode, exact_float32):
    # Replays start on the third step (default mode once found host-bound); the forward's
    # results (the saved activations) are the output pool's, written in place from then on.
    expect_same_training(make, {**STRICT, "mode": mode}, 7, (1e-4, 1e-5), (1e-3, 1e-4))


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
@pytest.mark.parametrize("capturable", [False, True])
def test_compiled_adam_steps_write_in_place_on_the_gpu(mode, capturable):
    """Parameters and moments written where they live (sched/donated_outputs.h), replayed
    graphs included. (Dynamo makes a compiled step capturable: its step counts live on the
    GPU, where eager's stay on the CPU.)"""
    def parameters():
        torch.manual_seed(5)
        params = [torch.randn(65, 33, device="cuda"), torch.randn(1000, device="cuda")]
        for p in params:
            p.grad = torch.randn_like(p)
        return params

    params, eager_params = parameters(), parameters()
    optimizer = torch.optim.Adam(params, lr=1e-2, capturable=capturable)
    eager = torch.optim.Adam(eager_params, lr=1e-2, capturable=capturable)
    step = torch.compile(optimizer.step, backend="kiln", mode=mode)
    for _ in range(6):
        step()
        eager.step()
    for p, q in zip(params, eager_params):
        torch.testing.assert_close(p, q)
    for state, eager_state in zip(optimizer.state.values(), eager.state.values()):
        for key in state:
            torch.testing.assert_close(state[key].cpu(), eager_state[key].cpu())


def test_cnn_training_with_tf32():
    """torch's default TF32 convolutions: channels-last activations and gradients, and
    channels-first weights, which cuDNN reorders (its fallback stages what it has no algorithm
    for: runtime/cuda/cuda_dnn.cpp)."""
    expect_same_training(cnn, STRICT, 5, (2e-2, 1e-3), (2e-2, 2e-3))


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_held_results_are_not_overwritten(mode, exact_float32):
    """Replays write into last call's result tensors only when nothing holds them any more: a
    result kept, a view of one kept, or results dropped at once, each call agrees with eager."""
    model = mlp().cuda().eval()
    compiled = torch.compile(model, backend="kiln", options={**STRICT, "mode": mode})
    with torch.no_grad():
        xs = [torch.randn(37, 64, device="cuda") for _ in range(6)]
        for x in xs:  # dropped: the pool's tensors are written again
            torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-5)
        last = None
        for x in xs + xs:  # `y = model(x)`: the last result is held while the next call runs
            y = compiled(x)
            if last is not None:  # the graphs alternate between two pooled results
                torch.testing.assert_close(last[1], model(last[0]), rtol=1e-4, atol=1e-5)
            last = (x, y)
        kept = [compiled(x) for x in xs]
        views = [compiled(x)[5:9] for x in xs]
        for x, got, view in zip(xs, kept, views):
            want = model(x)
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
            torch.testing.assert_close(view, want[5:9], rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_on_cuda(dtype):
    model = mlp().cuda().to(dtype).eval()
    compiled = torch.compile(model, backend="kiln", options=STRICT)
    x = torch.randn(16, 64, device="cuda", dtype=dtype)
    with torch.no_grad():
        got = compiled(x)
        assert got.dtype == dtype
        torch.testing.assert_close(got, model(x), rtol=2e-2, atol=2e-2)


def test_work_goes_on_torchs_current_stream():
    f = torch.compile(lambda x: torch.sin(x) * torch.cos(x) + 1, backend="kiln", options=STRICT)
    x = torch.randn(1 << 20, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        got = f(x)
    torch.cuda.current_stream().wait_stream(side)
    torch.testing.assert_close(got, torch.sin(x) * torch.cos(x) + 1)


@pytest.mark.parametrize("mode", ["default", "reduce-overhead"])
def test_a_decoder_with_dynamic_lengths_on_the_gpu(mode, exact_float32, capfd):
    # dynamic=True: Dynamo passes the model's floats (RMSNorm's epsilon, RoPE's scaling) in as
    # 0-d CPU tensors, which the GPU graph reads as numbers (copied to the device). Every length
    # after the first runs on one size-generic CUDA module (KILN_LOGS=recompiles says
    # "compiles for" where one does not; torch's attention mask padding, Mod of the length, is
    # dropped before tracing).
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=50, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                         num_key_value_heads=1, intermediate_size=64, max_position_embeddings=64)
    model = LlamaForCausalLM(config).cuda().eval()
    compiled = torch.compile(model, backend="kiln", dynamic=True,
                             options={**STRICT, "mode": mode})
    kiln.set_logs("recompiles")
    try:
        with torch.no_grad():  # reduce-overhead: each size's executable captures its graphs
            for tokens in (7, 12, 9, 30, 12, 12, 30, 30):
                ids = torch.randint(0, 50, (2, tokens), device="cuda")
                torch.testing.assert_close(compiled(input_ids=ids).logits,
                                           model(input_ids=ids).logits, rtol=1e-4, atol=1e-5)
    finally:
        kiln.set_logs("")
    err = capfd.readouterr().err
    assert "compiles for" not in err and "keeps no size symbols" not in err, err


def test_depthwise_3d_convolutions_match_eager(exact_float32):
    """mvit's attention pools: depthwise 3-d convolutions (cuDNN ran them a group at a time,
    4,608 launches a call), generated by kiln as sums of the kernel's taps."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv3d(8, 8, 3, stride=(1, 2, 2), padding=1, groups=8, bias=False),
        torch.nn.LayerNorm(4), torch.nn.Conv3d(8, 8, (3, 1, 3), padding=(1, 0, 1), groups=8,
                                               dilation=(2, 1, 1))).cuda().eval()
    x = torch.randn(2, 8, 6, 7, 8, device="cuda")
    with torch.no_grad():
        got = torch.compile(model, backend="kiln", options=STRICT)(x)
        torch.testing.assert_close(got, model(x), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("channels_last", [False, True])
def test_batch_one_convolutions_launch_no_generic_transposes(channels_last, exact_float32):
    """A batch of one has a batch stride torch and kiln may set to anything; cuDNN reads
    strides to know a layout, and took a channels-last batch-1 activation for a strided one:
    each convolution staged its input through cuDNN's generic transpose kernels (r(2+1)d_18:
    7.9 ms a call against eager's 3.3)."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv3d(3, 45, (1, 7, 7), stride=(1, 2, 2), padding=(0, 3, 3), bias=False),
        torch.nn.BatchNorm3d(45), torch.nn.ReLU(),
        torch.nn.Conv3d(45, 64, (3, 1, 1), padding=(1, 0, 0), bias=False),
        torch.nn.BatchNorm3d(64), torch.nn.ReLU(),
        torch.nn.Conv3d(64, 64, (1, 3, 3), padding=(0, 1, 1))).cuda().eval()
    x = torch.randn(1, 3, 8, 56, 56, device="cuda")
    if channels_last:
        model = model.to(memory_format=torch.channels_last_3d)
        x = x.to(memory_format=torch.channels_last_3d)
    compiled = torch.compile(model, backend="kiln", options=STRICT)
    with torch.no_grad():
        torch.testing.assert_close(compiled(x), model(x), rtol=1e-4, atol=1e-4)
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as trace:
            compiled(x)
            torch.cuda.synchronize()
    kernels = [event.key for event in trace.key_averages()]
    assert not [k for k in kernels if "transposeDirect" in k or "cubeTranspose" in k], kernels


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_graphs_mixing_cpu_tensors_with_the_gpus_compile_for_the_gpu(dynamic):
    """The CPU tensors torch lets mix with a GPU's: a table `arange` builds on the CPU that
    indexes a GPU tensor (mvit's relative positions), a slice filled with a Python number (a
    0-d CPU constant: swin's attention mask), a CPU result. kiln computes them on the GPU and
    returns CPU results on the CPU (such graphs ran wholly in eager PyTorch: STRICT refuses
    that)."""
    table = torch.randn(9, 4, device="cuda")

    def f(x):
        n = x.shape[1]
        distance = torch.arange(n)[:, None] - torch.arange(n)[None, :] + (n - 1)
        mask = x.new_zeros(n, n)
        mask[: n // 2, : n // 2] = 3.0
        return x + mask + table[distance].sum(-1), torch.arange(n) * 2.0
    compiled = torch.compile(f, backend="kiln", dynamic=dynamic, options=STRICT)
    for length in (3, 4, 5):
        x = torch.randn(length, length, device="cuda")
        got, want = compiled(x), f(x)
        assert [t.device for t in got] == [t.device for t in want]
        for mine, theirs in zip(got, want):
            torch.testing.assert_close(mine, theirs)


def test_warm_start_on_the_gpu(tmp_path):
    """tests/python/test_torch_warm_start.py's model on the GPU: the second process compiles
    the recorded graph for CUDA, with its index check, without AOTAutograd's export."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parents[1] / "python" / "test_torch_warm_start.py"
    spec = importlib.util.spec_from_file_location("warm_start_script", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cold = module.run(tmp_path, DEVICE="cuda")
    assert "index error:" in cold and "warm start from record" not in cold
    warm = module.run(tmp_path, DEVICE="cuda", FORBID_EXPORT="1")
    assert "index error:" in warm and "warm start from record" in warm
