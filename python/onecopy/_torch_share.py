# SPDX-License-Identifier: Apache-2.0
"""A batch that crosses from a DataLoader worker to the training process in one shared buffer.

torch moves each tensor of an item through its own shared-memory segment: the worker creates
and fills one per tensor, and the training process receives each one's file descriptor on a
connection of its own to the worker, then maps it. A batch of onecopy.torch has four or five
small tensors (a list column's values and offsets, scalar columns, the position), so that fixed
cost, paid per tensor, is most of what a worker adds to the feed. OneBuffer pays it once per
batch: pickled (as the worker's queue pickles it), its tensors are copied into one shared buffer
(the copy torch would make into theirs), and unpickled they are views of that buffer in a plain
dict, so the training loop, pin_memory and collate functions see what they would have seen.
One difference: the buffer lives while any of its tensors does, so a tensor kept past its batch
keeps the whole batch's memory."""

from __future__ import annotations

import torch

# Each tensor starts at a multiple of this in the buffer: any dtype can view it there.
ALIGN = 64


def packable(value) -> bool:
    """Whether @value travels in the shared buffer: a dense CPU tensor that autograd does not track."""
    return (isinstance(value, torch.Tensor) and value.device.type == "cpu" and value.layout == torch.strided
            and not value.requires_grad and not value.is_quantized)


class OneBuffer(dict):
    """A dict of a batch's tensors (and other values) that pickles its tensors as one buffer and
    unpickles as a plain dict of views of it. Used only for items a DataLoader worker sends."""

    def __copy__(self):  # torch's collate copies mappings: a copy stays a OneBuffer, nothing packed
        return OneBuffer(self)

    def __reduce__(self):
        layout = []  # (key, dtype, shape, byte offset, bytes) of each packed tensor
        rest = {}
        tensors = []
        size = 0
        for key, value in self.items():
            if not packable(value):
                rest[key] = value
                continue
            size = -(-size // ALIGN) * ALIGN
            n = value.numel() * value.element_size()
            layout.append((key, value.dtype, tuple(value.shape), size, n))
            tensors.append(value)
            size += n
        if not layout:
            return dict, (dict(self),)
        buf = torch.empty(max(size, 1), dtype=torch.uint8).share_memory_()
        for (_, dtype, shape, at, n), value in zip(layout, tensors):
            buf[at:at + n].view(dtype).view(shape).copy_(value)
        return unpack, (buf, layout, rest, list(self))


def unpack(buf: torch.Tensor, layout: list, rest: dict, order: list) -> dict:
    """The dict OneBuffer.__reduce__ packed: its tensors as views of @buf, its keys in @order."""
    out = dict(rest)
    for key, dtype, shape, at, n in layout:
        out[key] = buf[at:at + n].view(dtype).view(shape)
    return {key: out[key] for key in order}
