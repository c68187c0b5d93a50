"""`generate()` with a compiled forward: a decoder's KV cache grows by one each token, so every
step is a new length (Dynamo makes it dynamic at the second). Times eager, the first compiled
call (Dynamo's traces and kiln's compiles), new lengths, and lengths seen before, and checks
the tokens against eager's:

    python bench/generate.py [llama|gpt2] [--device cuda] [--backends kiln,inductor]
"""
import argparse
import time

import torch
import transformers as T


def model_of(name):
    torch.manual_seed(0)
    if name == "gpt2":
        return T.GPT2LMHeadModel(T.GPT2Config(n_embd=64, n_layer=2, n_head=4, vocab_size=500,
                                              n_positions=256))
    return T.LlamaForCausalLM(T.LlamaConfig(  # grouped-query attention: 4 heads over 2
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=128, vocab_size=500, max_position_embeddings=256))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("model", nargs="?", default="llama", choices=["llama", "gpt2"])
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--backends", default="kiln", help="kiln and/or inductor, comma-separated")
    args = parser.parse_args()
    model = model_of(args.model).to(args.device).eval()
    prompt = torch.randint(0, 500, (1, 7), generator=torch.Generator().manual_seed(1))
    prompt = prompt.to(args.device)

    def generate(tokens):
        start = time.perf_counter()
        with torch.no_grad():
            out = model.generate(prompt, max_new_tokens=tokens, do_sample=False, pad_token_id=0)
        if args.device == "cuda":
            torch.cuda.synchronize()
        return out, time.perf_counter() - start

    generate(4)  # eager's own warm-up
    want, eager = generate(60)
    rows = [("eager, 60 tokens", eager)]
    forward = model.forward
    for backend in args.backends.split(","):
        torch._dynamo.reset()
        model.forward = torch.compile(forward, backend=backend)
        for label, tokens in (("first call, 30 tokens", 30), ("30 tokens again", 30),
                              ("60 tokens, 30 lengths new", 60), ("60 tokens again", 60)):
            got, seconds = generate(tokens)
            same = torch.equal(got, want[:, :got.shape[1]])
            assert same or backend != "kiln", f"kiln {label}: tokens differ from eager's"
            rows.append((f"{backend} {label}" + ("" if same else " (other tokens)"), seconds))
    for label, seconds in rows:
        print(f"{args.model} {args.device}: {label:36s} {seconds * 1e3:9.1f} ms")


if __name__ == "__main__":
    main()
