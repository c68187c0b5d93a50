"""torchvision's model zoo through backend="kiln" (on the GPU machine: torchvision's CPU wheels
do not import on this repository's CPU torch). One job = one model on one device, inference
(against eager, with per-call times) or a training step (output and gradients against a
float64 oracle, beside eager float32's own distance from it); prints one RESULT line, and
errors in full. KILN_LOGS=graph_breaks names what runs in eager PyTorch.

    python bench/torchvision_zoo.py MODEL cuda|cpu infer|train
    KILN_ZOO_EXACT=1 ...          # TF32 off (torch's flags; kiln follows them)
    KILN_ZOO_SIZES=vgg11_bn,...   # these models at 250x250 (no multiple of their pools)

Session 51 ran it over 33 models, eight jobs at once (README, "On a GPU")."""
import os, sys, time, traceback, tempfile
os.environ.setdefault("KILN_CACHE_DIR", tempfile.mkdtemp())
import torch, torchvision
import kiln.torch  # noqa

name, device, what = sys.argv[1], sys.argv[2], sys.argv[3]
if os.environ.get("KILN_ZOO_EXACT"):
    torch.backends.cudnn.allow_tf32 = torch.backends.cuda.matmul.allow_tf32 = False
torch.manual_seed(0)
M = torchvision.models
kw = {}
if name in ("inception_v3", "googlenet"):
    kw = {"aux_logits": False, "init_weights": False}
builder = M.get_model_builder(name)
DETECTORS = ("fasterrcnn", "ssdlite", "ssd300", "retinanet", "maskrcnn", "fcos", "keypointrcnn")
if name.startswith(("fcn", "deeplab", "lraspp") + DETECTORS):
    kw["weights_backbone"] = None  # (nothing can be downloaded)
model = builder(weights=None, **kw)
size = {"inception_v3": 299, "raft_small": 128}.get(name, 224)
if name in os.environ.get("KILN_ZOO_SIZES", "").split(","):
    size = 250  # no multiple of the pools' windows
if name.startswith(("r3d", "mc3", "r2plus1d", "s3d", "mvit", "swin3d")):  # video: 16 frames
    side = 224 if name.startswith(("mvit", "swin3d", "s3d")) else 112
    inputs = (torch.randn(1, 3, 16, side, side),)
elif name == "raft_small":
    inputs = (torch.randn(1, 3, size, size), torch.randn(1, 3, size, size))
elif name.startswith(DETECTORS):
    inputs = ([torch.rand(3, 320, 320)],)
else:
    inputs = (torch.randn(2, 3, size, size),)
model = model.to(device)
inputs = tuple(x.to(device) if torch.is_tensor(x) else [t.to(device) for t in x] for x in inputs)


def flat(out):
    if torch.is_tensor(out):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in flat(v)]
    if isinstance(out, (list, tuple)):
        return [t for v in out for t in flat(v)]
    return []


def rel(a, b):
    worst = 0.0
    for x, y in zip(flat(a), flat(b)):
        if x.numel() == 0 or y.numel() == 0:  # (a detector with random weights finds nothing)
            worst = max(worst, 0.0 if x.shape == y.shape else float("inf"))
        elif x.dtype.is_floating_point:
            scale = y.abs().max().item() + 1e-6
            worst = max(worst, ((x.float() - y.float()).abs().max().item()) / scale)
        elif not torch.equal(x, y):
            worst = max(worst, float("inf"))
    return worst, len(flat(a)), len(flat(b))


def fresh(inputs):
    """Inputs of the same shapes with new values (a list: a detector's images)."""
    return tuple(torch.rand_like(x) if torch.is_tensor(x) else [torch.rand_like(t) for t in x]
                 for x in inputs)


def timed(f, batches):
    """Seconds a call of f, one call per batch."""
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for batch in batches:
        f(*batch)
    if device == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / len(batches)


status = "ok"
try:
    t0 = time.perf_counter()
    if what == "infer":
        model.eval()
        compiled = torch.compile(model, backend="kiln")
        with torch.no_grad():
            ref = model(*inputs)
            out = compiled(*inputs)
            if device == "cuda":
                torch.cuda.synchronize()
            first = time.perf_counter() - t0
            out2 = compiled(*inputs)
            err, n, nref = rel(out2, ref)
            batches = [fresh(inputs) for _ in range(5)]  # new data each timed call
            tk, te = timed(compiled, batches), timed(model, batches)
        err1, _, _ = rel(out, ref)
        err = max(err, err1)
        if n != nref or err > 2e-3:
            status = "MISMATCH"
        print(f"RESULT {name} {device} {what} {status} err={err:.2e} outs={n}/{nref} "
              f"first={first:.1f}s kiln={tk*1e3:.2f}ms eager={te*1e3:.2f}ms")
    else:
        model.train()
        for m in model.modules():  # dropout's random draws differ from eager's: off
            if isinstance(getattr(m, "p", None), float):
                m.p = 0.0
        import copy
        ref_model = copy.deepcopy(model)
        compiled = torch.compile(model, backend="kiln")
        torch.manual_seed(1)
        out = compiled(*inputs)
        loss = sum(t.float().square().mean() for t in flat(out))
        loss.backward()
        torch.manual_seed(1)
        ref = ref_model(*inputs)
        ref_loss = sum(t.float().square().mean() for t in flat(ref))
        ref_loss.backward()
        first = time.perf_counter() - t0
        # the float64 oracle: eager float32's own distance from it is the noise floor
        oracle = copy.deepcopy(ref_model).double()
        oracle.zero_grad()
        out64 = oracle(*[x.double() for x in inputs])
        sum(t.square().mean() for t in flat(out64)).backward()

        def gdist(a, b):
            worst = 0.0
            for p, q in zip(a.parameters(), b.parameters()):
                if q.grad is None:
                    continue
                if p.grad is None:
                    return float("inf")
                worst = max(worst, (p.grad.double() - q.grad).abs().max().item()
                            / (q.grad.abs().max().item() + 1e-12))
            return worst
        err, n, nref = rel(out, out64)
        eerr, _, _ = rel(ref, out64)
        gerr, egerr = gdist(model, oracle), gdist(ref_model, oracle)
        if n != nref or err > 3 * eerr + 1e-4 or gerr > 3 * egerr + 1e-3:
            status = "MISMATCH"
        print(f"RESULT {name} {device} {what} {status} vs-f64: out kiln {err:.2e} eager {eerr:.2e}"
              f" grad kiln {gerr:.2e} eager {egerr:.2e} outs={n}/{nref} first={first:.1f}s")
except Exception as e:  # noqa
    traceback.print_exc()
    print(f"RESULT {name} {device} {what} ERROR {type(e).__name__}: {str(e)[:300]!r}")
