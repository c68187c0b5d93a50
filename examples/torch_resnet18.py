"""Seed experiment 4: resnet18 inference through torch.compile, Inductor against kiln.

The model is torchvision's resnet18 (random weights; kiln.bench.torch_models defines the same
module tree where torchvision does not import), in eval mode under torch.no_grad(). Each
backend's first call is Dynamo's trace + the compile + one run; then the median of --repeat
calls. Both compiled results are checked against eager PyTorch.

    python examples/torch_resnet18.py                        # batch 16, 3x224x224
    python examples/torch_resnet18.py --batch 1 --image 64 --repeat 3
    python examples/torch_resnet18.py --device cuda          # on a GPU
"""
import argparse
import sys

import torch

from kiln.bench import device_argument
from kiln.bench.torch_models import resnet18, median_seconds, report_backend

VARIANTS = (("inductor", "default"), ("kiln", "default"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--image", type=int, default=224, help="height and width")
    parser.add_argument("--backends", default="inductor,kiln",
                        help="comma list of torch.compile backends to compare with eager")
    parser.add_argument("--device", type=device_argument, default="cpu", help="cpu or cuda")
    parser.add_argument("--repeat", type=int, default=5)
    options = parser.parse_args()
    chosen = [(backend, mode) for backend, mode in VARIANTS
              if backend in options.backends.split(",")]

    torch.manual_seed(0)
    model = resnet18().eval().to(options.device)
    images = torch.randn(options.batch, 3, options.image, options.image, device=options.device)
    all_agree = True
    with torch.no_grad():
        expected = model(images)
        eager = median_seconds(model, images, options.repeat)
        print(f"resnet18, {options.batch}x3x{options.image}x{options.image} float32: eager "
              f"{eager * 1e3:.2f} ms")
        for backend, mode in chosen:
            all_agree &= report_backend(model, images, expected, backend, mode, eager,
                                        options.repeat)
    return 0 if all_agree else 1


if __name__ == "__main__":
    sys.exit(main())
