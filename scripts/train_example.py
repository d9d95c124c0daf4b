# SPDX-License-Identifier: Apache-2.0
"""An example training loop fed by onecopy: a bag-of-tokens classifier trained on token
sequences served by onecopyd (or read in-process without a daemon). Epoch 2 changes the filter
to `quality > 0.8`; nothing is rewritten, the next scan just reads fewer rows.

    python scripts/train_example.py [OPTIONS] DATASET... [OPTIONS]    (--help lists them)

scripts/run.sh parses its arguments with parse_args below (under system python3, before any
install or build), so this module imports only the standard library before main() runs.
"""

import argparse
import sys
import time

# What the model reads (its inputs) and the Arrow types each must have.
MODEL_INPUTS = {"tokens": "a list of integer token ids below 50,257", "label": "an integer class in 0..4"}
RUN_SH_EPILOG = """\
scripts/run.sh starts onecopyd on a private socket, trains through it and stops it. DATASET
(anywhere among the options; several, or a shell glob's files, are one dataset) is a directory,
glob or file of Vortex files, or s3://bucket/prefix/ (with the usual AWS_* variables,
AWS_ENDPOINT_URL for S3-compatible stores). Without one, the sample dataset (token sequences, a
label and a quality score) is written to scripts/.sample/tokens with vortex-data on first use.
The first run installs the packages and builds onecopy (scripts/bootstrap.sh)."""


def dataset_url(url: str) -> str:
    """@url as onecopy lists it: an s3:// bucket or prefix (not a .vortex object, not a glob)
    means every .vortex object under it, which onecopy spells with a trailing '/'."""
    if url.startswith("s3://") and not url.endswith(("/", ".vortex")) and not any(c in url[5:] for c in "*?["):
        return url + "/"
    return url


def column_map(text: str) -> dict:
    """--columns 'tokens=ids,label=cls' as {"tokens": "ids", "label": "cls"}: each model input
    not named reads the dataset column of its own name."""
    out = {k: k for k in MODEL_INPUTS}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, eq, col = item.partition("=")
        if not eq or not col.strip():
            raise argparse.ArgumentTypeError(f"{item!r} is not INPUT=COLUMN (for example tokens=input_ids)")
        if key.strip() not in MODEL_INPUTS:
            raise argparse.ArgumentTypeError(f"{key.strip()!r} is not a model input; the inputs are "
                                             f"{', '.join(MODEL_INPUTS)}")
        out[key.strip()] = col.strip()
    return out


def at_least(minimum: int):
    """An argparse type: an integer of at least @minimum."""
    def parse(text: str) -> int:
        value = int(text)
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{value} is less than {minimum}")
        return value
    parse.__name__ = "integer"  # argparse names the type so in its error
    return parse


def parse_args(argv=None, run_sh: bool = False) -> argparse.Namespace:
    """The command line, datasets anywhere among the options. run_sh: as scripts/run.sh takes it
    (its name and text; no --socket, run.sh starts its own daemon and passes it to main();
    DATASET optional)."""
    ap = argparse.ArgumentParser(
        allow_abbrev=False, prog="scripts/run.sh" if run_sh else None,
        usage="scripts/run.sh [-h] [DATASET ...] [OPTIONS]" if run_sh else None,
        description=__doc__.split("\n\n")[0], epilog=RUN_SH_EPILOG if run_sh else None,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("urls", nargs="*", metavar="DATASET",
                    help="Vortex files, directories, globs or s3:// URLs" + (" (default: the sample)" if run_sh else ""))
    if not run_sh:
        ap.add_argument("--socket", help="onecopyd's socket (default: $ONECOPY_SOCKET, else in-process)")
    ap.add_argument("--columns", type=column_map, default=column_map(""), metavar="INPUT=COLUMN,...",
                    help="map the model's inputs (tokens: list of token ids, label: class 0..4) to "
                         "the dataset's columns, e.g. tokens=input_ids,label=target (default: same names)")
    ap.add_argument("--epochs", type=at_least(1), default=2, help="epochs to train (default 2)")
    ap.add_argument("--workers", type=at_least(0), default=2, help="DataLoader workers (default 2)")
    ap.add_argument("--batch-rows", type=at_least(1), default=512, help="rows per batch (default 512)")
    ap.add_argument("--filter-from-epoch-2", default="quality > 0.8", metavar="FILTER",
                    help="SQL filter from the second epoch on, '' for none (default: 'quality > 0.8')")
    args = ap.parse_intermixed_args(argv)
    if not args.urls and not run_sh:
        ap.error("give at least one DATASET")
    args.urls = [dataset_url(u) for u in args.urls]
    return args


def check_columns(schema, columns: dict) -> None:
    """Exits with a message naming what the dataset has and what the model needs when a mapped
    column is missing or of the wrong type, before any batch is read."""
    import pyarrow as pa

    def fits(name: str, t) -> bool:
        if name == "tokens":
            return (pa.types.is_list(t) or pa.types.is_large_list(t)) and pa.types.is_integer(t.value_type)
        return pa.types.is_integer(t)

    problems = []
    for name, col in columns.items():
        if col not in schema.names:
            problems.append(f"{name}: no column {col!r}")
        elif not fits(name, schema.field(col).type):
            problems.append(f"{name}: column {col!r} is {schema.field(col).type}")
    if not problems:
        return
    found = ", ".join(f"{f.name} ({f.type})" for f in schema)
    needs = "; ".join(f"{k}: {v}" for k, v in MODEL_INPUTS.items())
    sys.exit(f"the dataset does not have the columns the model needs ({'; '.join(problems)}).\n"
             f"  found: {found}\n"
             f"  needs: {needs}\n"
             f"  map them to your columns with --columns tokens=<column>,label=<column>")


def check_filter(file, text: str) -> None:
    """Exits with the filter's error when --filter-from-epoch-2 does not bind to the dataset's
    columns: an empty scan of the first file binds it, reading no rows."""
    import pyarrow as pa

    import onecopy

    try:
        file.scan(filter=text, row_range=(0, 0)).read_all()
    except (onecopy.OnecopyError, pa.ArrowException, OSError) as e:
        sys.exit(f"--filter-from-epoch-2 {text!r} does not fit this dataset: {e}\n"
                 f"  give a filter on its columns, or --filter-from-epoch-2 '' to read every row in every epoch")


def main() -> None:
    args = parse_args()
    import torch
    import torch.nn.functional as F
    from tqdm import tqdm

    import onecopy
    import onecopy.torch as oct

    torch.manual_seed(0)
    want = args.columns
    try:
        ds = oct.Dataset(args.urls, columns=list(dict.fromkeys(want.values())), batch_rows=args.batch_rows,
                         shuffle=True, seed=0, socket=args.socket if args.socket else None)
        first_file = onecopy.open(ds.urls[0], daemon=ds.socket or False)
        schema = first_file.schema
    except onecopy.OnecopyError as e:
        sys.exit(f"cannot read the dataset {' '.join(args.urls)}: {e}")
    where = f"onecopyd at {ds.socket}" if ds.socket else "in-process (no daemon)"
    print(f"dataset: {len(ds.urls)} files, read {where}")
    # The model's columns and the filter, checked on the first file before the loader starts.
    check_columns(schema, want)
    if args.epochs > 1 and args.filter_from_epoch_2:
        check_filter(first_file, args.filter_from_epoch_2)
    loader = oct.DataLoader(ds, num_workers=args.workers, batch_size=None)
    embed = torch.nn.EmbeddingBag(50_257, 64, mode="mean", sparse=True)
    head = torch.nn.Linear(64, 5)
    opt_sparse = torch.optim.SGD(embed.parameters(), lr=2.0)
    opt = torch.optim.SGD(head.parameters(), lr=0.5)

    samples = tokens = nbytes = 0
    # Steady-state steps (each epoch's first batch, the loader's start-up, is reported apart):
    # time waiting for the next batch, and the whole step's time.
    waited = stepped = 0.0
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
        asked = t0  # when the loop last asked the loader for a batch
        for batch in bar:
            got = time.perf_counter()
            steady = first is not None
            if not steady:
                first = got - t0
            toks, offsets = batch[want["tokens"]], batch[want["tokens"] + ".offsets"]
            label = batch[want["label"]].long()
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
            done = time.perf_counter()
            if steady:
                waited += got - asked
                stepped += done - asked
            asked = done
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
    print(end_line(samples / elapsed, waited, stepped))


def end_line(rate: float, waited: float, stepped: float) -> str:
    """The run's verdict: samples/s, the loader's share of the step time (the model waiting for
    the next batch) and which side bound the run."""
    if stepped <= 0:
        return f"{rate:,.0f} samples/s; loader share of step time: n/a (one batch per epoch)"
    share = waited / stepped
    who = (f"loader (the model waited {share:.0%} of each step)" if share >= 0.5
           else f"model (the loader kept up: the model waited {share:.0%} of each step)")
    return f"{rate:,.0f} samples/s; loader share of step time {share:.0%}; bound by: {who}"


if __name__ == "__main__":
    main()
