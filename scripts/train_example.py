# SPDX-License-Identifier: Apache-2.0
"""An example training loop fed by onecopy: a bag-of-tokens classifier trained on token
sequences served by onecopyd (or read in-process without a daemon). Epoch 2 changes the filter
to `quality > 0.8`; nothing is rewritten, the next scan just reads fewer rows.

    python scripts/train_example.py DATASET... [--socket PATH] [--epochs N] [--workers W]
"""

import argparse
import time

import torch
import torch.nn.functional as F
from tqdm import tqdm

import onecopy
import onecopy.torch as oct


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("urls", nargs="+", help="Vortex files, directories, globs or s3:// URLs")
    ap.add_argument("--socket", help="onecopyd's socket (default: $ONECOPY_SOCKET, else in-process)")
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--workers", type=int, default=2, help="DataLoader workers")
    ap.add_argument("--batch-rows", type=int, default=512)
    ap.add_argument("--filter-from-epoch-2", default="quality > 0.8")
    args = ap.parse_args()

    torch.manual_seed(0)
    ds = oct.Dataset(args.urls, columns=["tokens", "label"], batch_rows=args.batch_rows, shuffle=True, seed=0,
                     socket=args.socket if args.socket else None)
    where = f"onecopyd at {ds.socket}" if ds.socket else "in-process (no daemon)"
    print(f"dataset: {len(ds.urls)} files, read {where}")
    loader = oct.DataLoader(ds, num_workers=args.workers, batch_size=None)
    embed = torch.nn.EmbeddingBag(50_257, 64, mode="mean", sparse=True)
    head = torch.nn.Linear(64, 5)
    opt_sparse = torch.optim.SGD(embed.parameters(), lr=2.0)
    opt = torch.optim.SGD(head.parameters(), lr=0.5)

    samples = tokens = nbytes = 0
    start = time.perf_counter()
    for epoch in range(args.epochs):
        if epoch == 1 and args.filter_from_epoch_2:
            ds.set_filter(args.filter_from_epoch_2)
        ds.set_epoch(epoch)
        total = None if ds.filter else len(ds)
        desc = f"epoch {epoch}" + (f" [{ds.filter}]" if ds.filter else "")
        t0 = time.perf_counter()
        first = None
        seen = correct = 0
        bar = tqdm(loader, total=total, desc=desc, unit="batch", dynamic_ncols=True, mininterval=1.0)
        for batch in bar:
            if first is None:
                first = time.perf_counter() - t0
            toks, offsets, label = batch["tokens"], batch["tokens.offsets"], batch["label"].long()
            logits = head(embed(toks.long(), offsets[:-1].long()))
            loss = F.cross_entropy(logits, label)
            opt.zero_grad()
            opt_sparse.zero_grad()
            loss.backward()
            opt.step()
            opt_sparse.step()
            n = len(label)
            samples += n
            tokens += len(toks)
            nbytes += toks.numel() * toks.element_size() + offsets.numel() * 4 + n * 4
            seen += n
            correct += int((logits.argmax(1) == label).sum())
            bar.set_postfix(loss=f"{loss.item():.3f}", acc=f"{correct / seen:.2f}", refresh=False)
        bar.close()
        print(f"epoch {epoch}: {seen:,} samples, accuracy {correct / max(seen, 1):.3f}, "
              f"first batch after {1e3 * (first or 0):.0f} ms")
    elapsed = time.perf_counter() - start
    print(f"trained on {samples:,} samples ({tokens:,} tokens, {nbytes / 1e6:.1f} MB of tensors) in {elapsed:.2f} s: "
          f"{samples / elapsed:,.0f} samples/s, {tokens / elapsed / 1e6:.2f} M tokens/s, "
          f"{nbytes / elapsed / 1e9:.3f} GB/s")
    if ds.socket:
        s = onecopy.Client(ds.socket).status()
        print(f"onecopyd: {s['batches_delivered']:,} batches, {s['bytes_delivered'] / 1e6:.1f} MB delivered, "
              f"{s['bytes_in_place'] / 1e6:.1f} MB of it decoded in place, "
              f"copies per delivered byte {s['copies_per_byte']:.2f} "
              f"({s['bytes_copied_after_decode'] / 1e6:.1f} MB after decode), errors {s['errors']}")


if __name__ == "__main__":
    main()
