"""optgen's collectives over torch.distributed.

The runtime's distributed step (ZeRO-2: gradients averaged, each rank
updating its part, the updates gathered) calls these through the C ABI's
table of callbacks; each wraps the runtime's memory as a tensor (no copy)
and launches the collective asynchronously, so that the step's reductions
overlap as the runtime schedules them.

What gloo (PyTorch 1.13) lacks, and what stands in for it:

- reduce_scatter: an all-reduce of a copy of the whole buffer, of which
  each rank keeps its part. Correct, at twice the bytes of a reduce-scatter
  and one copy of the buffer per unit.
- all_gather of uneven parts: every part padded to the largest.
- bf16: all-reduced in f32 (converted there and back: the mean is rounded
  to bf16 once, the partial sums not at all, so the bits may differ from
  the MPI and NCCL communicators'), gathered as bytes.
"""

from __future__ import annotations

import ctypes
import sys

import torch
import torch.distributed as dist

from . import capi

_DTYPES = {capi.F32: torch.float32, capi.BF16: torch.bfloat16}


def wrap(address: int, count: int, dtype: torch.dtype) -> torch.Tensor:
    """The `count` elements of `dtype` at `address`, as a tensor sharing
    them."""
    if count == 0:
        return torch.empty(0, dtype=dtype)
    size = torch.empty(0, dtype=dtype).element_size()
    memory = (ctypes.c_char * (count * size)).from_address(address)
    return torch.frombuffer(memory, dtype=dtype)


class TorchCollectives:
    """The collectives table over a torch.distributed process group."""

    def __init__(self, group=None):
        self.group = group
        self.rank = dist.get_rank(group)
        self.size = dist.get_world_size(group)
        self._pending: dict[int, tuple] = {}
        self._next = 1
        self._error = ctypes.create_string_buffer(b"")
        # Kept alive as long as the table that points to them.
        self._callbacks = (
            capi.ALL_REDUCE(self._guard(self._all_reduce_mean)),
            capi.REDUCE_SCATTER(self._guard(self._reduce_scatter_mean)),
            capi.ALL_GATHER(self._guard(self._all_gather)),
            capi.WAIT(self._guard(self._wait)),
            capi.LAST_ERROR(lambda context: ctypes.addressof(self._error)),
            capi.ABORT(self._abort),
        )
        self.table = capi.Collectives(None, self.rank, self.size,
                                      *self._callbacks)

    def _guard(self, function):
        """A callback that returns 0, or 1 with the error's message kept
        for last_error(): no exception may cross into the runtime."""
        def callback(*args):
            try:
                function(*args)
                return 0
            except BaseException as error:  # noqa: B902 - nothing may escape
                message = f"{type(error).__name__}: {error}"
                self._error = ctypes.create_string_buffer(message.encode())
                return 1
        return callback

    def _launch(self, request, work, finish=None) -> None:
        """Hands the runtime a request for `work` (None: done already),
        `finish` to run once it completes."""
        key = self._next
        self._next += 1
        self._pending[key] = (work, finish)
        request[0] = key

    def _all_reduce_mean(self, context, data, count, dtype, request):
        memory = wrap(data, count, _DTYPES[dtype])
        if count == 0:
            return self._launch(request, None)
        reduced = memory if dtype == capi.F32 else memory.float()
        work = dist.all_reduce(reduced, group=self.group, async_op=True)

        def finish():
            if dtype == capi.F32:
                memory.div_(self.size)
            else:
                memory.copy_(reduced.div_(self.size))
        self._launch(request, work, finish)

    def _reduce_scatter_mean(self, context, send, recv, counts, dtype, request):
        counts = [counts[r] for r in range(self.size)]
        offset = sum(counts[: self.rank])
        total = sum(counts)
        if total == 0:
            return self._launch(request, None)
        sent = wrap(send, total, _DTYPES[dtype])
        mine = wrap(recv, counts[self.rank], _DTYPES[dtype])
        # gloo has no reduce_scatter: every rank reduces all of it (a copy:
        # the runtime's input stays as it was) and keeps its part.
        reduced = sent.to(torch.float32, copy=True)
        work = dist.all_reduce(reduced, group=self.group, async_op=True)

        def finish():
            mine.copy_(reduced[offset: offset + counts[self.rank]].div_(self.size))
        self._launch(request, work, finish)

    def _all_gather(self, context, send, recv, counts, dtype, request):
        counts = [counts[r] for r in range(self.size)]
        widest = max(counts)
        if widest == 0:
            return self._launch(request, None)
        # Bytes: a gather does no arithmetic, and gloo knows no bf16.
        width = torch.empty(0, dtype=_DTYPES[dtype]).element_size()
        sent = wrap(send, counts[self.rank] * width, torch.uint8)
        gathered = wrap(recv, sum(counts) * width, torch.uint8)
        if all(count == widest for count in counts):
            parts = list(gathered.split(widest * width))
            work = dist.all_gather(parts, sent, group=self.group, async_op=True)
            return self._launch(request, work)
        # Uneven parts: each padded to the widest.
        padded = torch.zeros(widest * width, dtype=torch.uint8)
        padded[: sent.numel()] = sent
        parts = [torch.empty(widest * width, dtype=torch.uint8)
                 for _ in range(self.size)]
        work = dist.all_gather(parts, padded, group=self.group, async_op=True)

        def finish():
            at = 0
            for part, count in zip(parts, counts):
                gathered[at: at + count * width] = part[: count * width]
                at += count * width
        self._launch(request, work, finish)

    def _wait(self, context, request):
        work, finish = self._pending.pop(request)
        if work is not None:
            work.wait()
        if finish is not None:
            finish()

    def _abort(self, context, code):
        # The runtime ends the process next (it has said why on stderr):
        # what the program printed should not be lost.
        sys.stdout.flush()
        sys.stderr.flush()
