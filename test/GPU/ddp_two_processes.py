#!/usr/bin/env python3
"""attnfuse.torch under DistributedDataParallel: two processes on one GPU
(gloo: NCCL refuses two ranks on one device), each on its own batches.

    PYTHONPATH=bundle/python python3 test/GPU/ddp_two_processes.py

Each rank trains train_gpt.GPT (attnfuse attention, bf16 autocast) for 30
steps, eager and then under torch.compile. Passes if both ranks end with
bitwise-equal parameters (DDP averaged the attnfuse gradients), the loss
fell, and DDP with SDPA on the same batches ends within bf16 noise of it.
"""
import os
import sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import train_gpt  # noqa: E402

STEPS, BATCH, CTX = 30, 8, 256


def run(rank, world, impl, compiled, data, vocab):
    torch.manual_seed(0)
    model = train_gpt.GPT(vocab, CTX, impl).cuda()
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    step_fn = torch.compile(ddp) if compiled else ddp
    opt = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    g = torch.Generator().manual_seed(100 + rank)
    losses = [train_gpt.train_step(step_fn, opt, data, vocab, g, BATCH, CTX)
              for _ in range(STEPS)]
    flat = torch.cat([p.detach().flatten() for p in model.parameters()])
    gathered = [torch.empty_like(flat) for _ in range(world)]
    dist.all_gather(gathered, flat)
    return losses, gathered


def worker(rank, world, port, queue):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.cuda.set_device(0)
    text = train_gpt.make_text(200_000)
    chars = sorted(set(text))
    data = torch.tensor([chars.index(c) for c in text], dtype=torch.long)
    results = {}
    for name, impl, compiled in (("attnfuse", "attnfuse", False),
                                 ("attnfuse-compiled", "attnfuse", True),
                                 ("sdpa", "sdpa", False)):
        losses, params = run(rank, world, impl, compiled, data, len(chars))
        same = all(torch.equal(params[0], p) for p in params[1:])
        results[name] = (losses[0], losses[-1], same,
                         params[0].float().cpu())
    if rank == 0:
        queue.put({k: v[:3] + ((v[3] - results["sdpa"][3]).abs().max()
                               .item(),) for k, v in results.items()})
    dist.destroy_process_group()


def main():
    mp.set_start_method("spawn", force=True)
    queue = mp.get_context("spawn").SimpleQueue()
    port = 29500 + os.getpid() % 1000
    mp.spawn(worker, args=(2, port, queue), nprocs=2, join=True)
    results = queue.get()
    ok = True
    for name, (first, last, same, diff) in results.items():
        good = same and last < 0.8 * first and (name == "sdpa" or diff < 0.05)
        ok &= good
        print(f"{'PASS' if good else 'FAIL'} DDP {name}: ranks bitwise "
              f"equal {same}, loss {first:.3f} -> {last:.3f}, max |param - "
              f"sdpa's| {diff:.2e}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
