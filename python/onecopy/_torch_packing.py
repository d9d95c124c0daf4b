# SPDX-License-Identifier: Apache-2.0
"""onecopy.torch.PackedTokens and collate_varlen: token sequences packed across samples."""

from __future__ import annotations

from typing import Any, Iterator, Optional, Sequence, Union

import torch
import torch.utils.data

from onecopy._steps import POSITION_KEY, check_uneven, equal_steps
from onecopy._torch_mix import Mix

class PackedTokens(torch.utils.data.IterableDataset):
    """Packs the token lists of `column` into training sequences of exactly `seq_len` tokens,
    across sample boundaries. Each item: {"input_ids": int tensor [seq_len]} and, with
    `document_ids`, "document_ids": int32 [seq_len] numbering the documents within the sequence
    from 0, for block-diagonal attention masks; with `varlen`, what variable-length attention
    kernels (flash-attention's varlen functions) take: "cu_seqlens", int32 [documents + 1], the
    cumulative document boundaries from 0 to seq_len, and "position_ids", int64 [seq_len],
    restarting at 0 at each document (a document cut at the end of a sequence goes on in the
    next one from position 0). cu_seqlens differs in length from item to item: batch items with
    `collate_varlen`. The tail shorter than seq_len is dropped. Reads `dataset` (a Dataset or Mix
    built with batch_rows=None) sample by sample.

    Checkpoints: the dataset's state_dict() counts a sample as given once its last token is in a
    yielded sequence, so a resumed stream starts with the sample that was cut, whole: its head is
    seen twice, and nothing is lost."""

    def __init__(self, dataset: Union[torch.utils.data.IterableDataset, Mix], column: str = "tokens", seq_len: int = 2048,
                 document_ids: bool = True, varlen: bool = False, uneven: Optional[str] = "repeat"):
        super().__init__()
        self.uneven = check_uneven(uneven)
        if seq_len < 1:
            raise ValueError("seq_len must be at least 1")
        for d in getattr(dataset, "datasets", [dataset]):
            if d.batch_rows is not None:
                raise ValueError("PackedTokens reads samples: build the Dataset with batch_rows=None")
        self.dataset, self.column, self.seq_len = dataset, column, int(seq_len)
        self.document_ids = bool(document_ids)
        self.varlen = bool(varlen)

    def set_epoch(self, epoch: int) -> None:
        self.dataset.set_epoch(epoch)
        self.steps = 0

    def stats(self) -> dict:
        """The packed dataset's stats() (Dataset.stats; its "training_s" includes packing)."""
        return self.dataset.stats()

    def state_dict(self) -> dict:
        return {**self.dataset.state_dict(), "packed_steps": self.steps}

    def load_state_dict(self, state: Union[dict, Sequence[dict]]) -> None:
        """This rank's state_dict(), or every rank's (a list) to resume with another world."""
        if isinstance(state, (list, tuple)):
            self.steps = 0
            self.dataset.load_state_dict([{k: v for k, v in st.items() if k != "packed_steps"} for st in state])
            return
        self.steps = int(state.get("packed_steps", 0))
        self.dataset.load_state_dict({k: v for k, v in state.items() if k != "packed_steps"})

    # Equal steps (onecopy._steps): how many sequences a rank packs is known only once read.
    batch_rows = None
    steps = 0

    @property
    def world_size(self) -> int:
        return getattr(self.dataset, "world_size", 1)

    def _equalizes(self) -> bool:
        return self.world_size > 1 and self.uneven is not None

    def planned_rows(self, epoch: int) -> None:
        return None

    def sync_group(self):
        return (self.dataset.datasets[0] if isinstance(self.dataset, Mix) else self.dataset).sync_group()

    def record(self, pos: torch.Tensor) -> None:
        self._consumed(pos)

    def steps_given(self, epoch: int, steps: int) -> None:
        self.steps = steps

    def _start_tracking(self) -> None:
        self.dataset._start_tracking()

    def _consumed(self, pos: torch.Tensor) -> None:
        self.dataset._consumed(pos)

    @property
    def _tracked(self) -> bool:
        return self.dataset._tracked

    @_tracked.setter
    def _tracked(self, value: bool) -> None:
        self.dataset._tracked = value

    def __iter__(self) -> Iterator[dict]:
        yield from equal_steps(self, self.epoch, self._sequences)

    @property
    def epoch(self) -> int:
        return self.dataset.epoch

    def _sequences(self) -> Iterator[dict]:
        in_worker = torch.utils.data.get_worker_info() is not None
        self.dataset._deferred = True
        nothing = torch.tensor([0, 0, -1, 0, 0])
        done: list[torch.Tensor] = []  # positions of samples whose last token is buffered
        tokens: list[torch.Tensor] = []
        docs: list[torch.Tensor] = []
        have = 0  # tokens in the sequence being built
        doc = 0  # number of the current document within it
        try:
            for sample in self.dataset:
                pos = sample.pop(POSITION_KEY)
                t = sample[self.column]
                while True:
                    take = min(len(t), self.seq_len - have)
                    tokens.append(t[:take])
                    docs.append(torch.full((take,), doc, dtype=torch.int32, device=t.device))
                    have += take
                    t = t[take:]
                    if not len(t):
                        done.append(pos)
                    if have < self.seq_len:
                        break
                    item = {"input_ids": torch.cat(tokens)}
                    if self.document_ids or self.varlen:
                        doc_ids = torch.cat(docs)
                    if self.document_ids:
                        item["document_ids"] = doc_ids
                    if self.varlen:
                        item.update(_varlen_fields(doc_ids))
                    given = torch.stack(done) if done else nothing.reshape(1, 5)
                    if in_worker:
                        if self.dataset._tracked:
                            item[POSITION_KEY] = given
                    else:
                        self.dataset._consumed(given)
                    yield item
                    tokens, docs, done, have, doc = [], [], [], 0, 0  # a cut document goes on as number 0
                    if not len(t):
                        break
                doc = doc + 1 if have else 0
        finally:
            self.dataset._deferred = False


def _varlen_fields(doc_ids: torch.Tensor) -> dict:
    """cu_seqlens and position_ids of one packed sequence from its document numbers (0, 1, ...
    in order, each a contiguous run)."""
    lengths = torch.bincount(doc_ids.to(torch.int64))
    cu = torch.zeros(len(lengths) + 1, dtype=torch.int32, device=doc_ids.device)
    torch.cumsum(lengths, 0, out=cu[1:])
    positions = (torch.arange(len(doc_ids), dtype=torch.int64, device=doc_ids.device)
                 - cu[doc_ids.to(torch.int64)].to(torch.int64))
    return {"cu_seqlens": cu, "position_ids": positions}


def collate_varlen(items: Sequence[dict]) -> dict:
    """Batches PackedTokens(varlen=True) items the way varlen attention takes them: the sequences
    flattened into one of batch × seq_len tokens ("input_ids", "position_ids", "document_ids"
    when present), "cu_seqlens" over all their documents (each item's shifted by the tokens
    before it), and "max_seqlen", the longest document. Use as DataLoader(collate_fn=...)."""
    items = list(items)
    if not items or "cu_seqlens" not in items[0]:
        raise ValueError("collate_varlen batches items of PackedTokens(varlen=True)")
    out: dict[str, Any] = {}
    for key in items[0]:
        if key != "cu_seqlens":
            out[key] = torch.cat([it[key] for it in items])
    cus, base = [torch.zeros(1, dtype=torch.int32, device=items[0]["cu_seqlens"].device)], 0
    for it in items:
        cus.append(it["cu_seqlens"][1:] + base)
        base += int(it["cu_seqlens"][-1])
    out["cu_seqlens"] = torch.cat(cus)
    out["max_seqlen"] = int(torch.diff(out["cu_seqlens"]).max())
    return out
