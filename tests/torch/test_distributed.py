"""Context parallelism: ranks encode their shards with offsets; gathered, they equal one table bit for bit.

Two processes (gloo on CPU) each add the encoding to their half of one long
sequence, with ``offset = rank * shard``; ``all_gather`` reassembles it. Run
as a script, this file is one rank.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch

import posenc
from posenc.torch import SinusoidalPositionalEncoding

WORLD = 2
LENGTH = 2 * 3000  # positions 0 … 5999; rank 1 starts at 3000
D = 96
CONVENTION = "fairseq"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _rank_main(rank: int, port: int, out: Path) -> None:
    import torch.distributed as dist

    dist.init_process_group(
        "gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=WORLD,
        timeout=__import__("datetime").timedelta(seconds=60),
    )
    try:
        shard = LENGTH // WORLD
        module = SinusoidalPositionalEncoding(D, convention=CONVENTION)
        # each rank sees only its shard of the activations (zeros: the output is the encoding)
        local = module(torch.zeros(1, shard, D), offset=rank * shard)
        parts = [torch.empty_like(local) for _ in range(WORLD)]
        dist.all_gather(parts, local)
        if rank == 0:
            np.save(out, torch.cat(parts, dim=1)[0].numpy())
    finally:
        dist.destroy_process_group()


def test_two_ranks_gather_the_single_process_table(tmp_path):
    out = tmp_path / "gathered.npy"
    port = _free_port()
    env = {**os.environ, "GLOO_SOCKET_IFNAME": os.environ.get("GLOO_SOCKET_IFNAME", "lo"), "OMP_NUM_THREADS": "1"}
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, str(rank), str(port), str(out)],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        for rank in range(WORLD)
    ]
    logs = []
    try:
        for p in procs:
            logs.append(p.communicate(timeout=90)[0])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    assert all(p.returncode == 0 for p in procs), "\n".join(logs)
    gathered = np.load(out)
    single = SinusoidalPositionalEncoding(D, convention=CONVENTION)(torch.zeros(LENGTH, D)).numpy()
    assert gathered.shape == (LENGTH, D)
    assert np.array_equal(gathered.view(np.uint32), single.view(np.uint32))  # bit for bit
    assert np.array_equal(gathered, posenc.encode(np.arange(LENGTH), D, convention=CONVENTION))


if __name__ == "__main__":
    _rank_main(int(sys.argv[1]), int(sys.argv[2]), Path(sys.argv[3]))
