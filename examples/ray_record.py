"""Record a SAEV dataset on a Ray cluster with Ray Data: one slice per actor,
joined as a union.

The inputs (image files, or text files) are listed in the order ``modelbin
acts record`` walks them and cut into contiguous slices. Ray Data runs the
slices through a pool of recorder actors (``map_batches`` with
``ActorPoolStrategy(size=N)``, one slice per call); each writes its slice as
one SAEV dataset under ``ROOT/slices/NNNNN/`` (its ``data`` names the slice's files).
The driver then writes ``ROOT/union.json``, the union of the slices in
order, and prints its path last. Train on it as on one dataset:
``modelbin sae train ROOT/union.json --layer -1 ...``.

    python examples/ray_record.py -m VIT_DIR --images DIR -o ROOT --workers 4
    python examples/ray_record.py -m MODEL.tllm texts/ -o ROOT --tokens-per-text 128
    python examples/ray_record.py --address auto -m /shared/vit --images /shared/imgs -o /shared/acts

The union holds the vectors a one-process ``acts record`` writes over the
same inputs, vector for vector, in the same order: an image is recorded
alone, so the slices change nothing. Text is cut into windows over the
files concatenated, and a window does not cross a slice, so the same holds
for text when each slice's tokens fill whole windows.

Faults: a slice is written into ``<HASH>.partial/`` and renamed into place
when complete, so a recorder killed mid-slice leaves nothing that reads as
a dataset. Ray restarts it and retries the slice (``--retries`` bounds
that); a run that fails still leaves its complete slices, and
``ROOT/slices.json`` lists each slice's files and its dataset, or null where
it is missing. Running the same command again records only the missing
slices.

The recorders read the files themselves, by path, from a file system every
node sees: the dataset's image list keeps each file's path and SHA-256, and
the recorder must decode and resize exactly as ``acts record`` does, so it
is given paths rather than arrays decoded by ``ray.data.read_images``.
See docs/scaling.md.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import ray

import modelbin

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png")
TEXT_EXTENSIONS = (".txt", ".text", ".md", ".rst", ".jsonl", ".ndjson")
PLAN = "slices.json"


def list_files(inputs: Sequence[str], extensions: Sequence[str]) -> List[str]:
    """The files of ``inputs`` in the order ``acts record`` takes them:
    files as given, directories walked depth first in sorted order (the
    order of the paths compared component by component)."""
    files: List[str] = []
    for given in inputs:
        if not os.path.isdir(given):
            files.append(given)
            continue
        found = []
        for folder, _, names in os.walk(given, followlinks=True):
            found += [os.path.join(folder, n) for n in names
                      if n.lower().endswith(tuple(extensions))]
        files += sorted(found, key=lambda p: Path(p).parts)
    return files


def cut(files: List[str], slices: int) -> List[List[str]]:
    """``files`` in ``slices`` contiguous runs of near-equal length."""
    slices = max(1, min(slices, len(files)))
    bounds = [len(files) * i // slices for i in range(slices + 1)]
    return [files[a:b] for a, b in zip(bounds, bounds[1:])]


class Recorder:
    """Records the slices of a batch, each as one SAEV dataset under its
    own root (one actor per worker; the weights are memory-mapped)."""

    def __init__(self, model: str, root: str, images: bool, settings: Dict[str, Any]) -> None:
        self.model, self.root, self.images, self.settings = model, root, images, settings

    def __call__(self, batch: Dict[str, np.ndarray]) -> Dict[str, np.ndarray]:
        paths, existing, seconds = [], [], []
        for index, files in zip(batch["slice"], batch["files"]):
            out = slice_root(self.root, int(index))
            files = json.loads(files)
            if self.images:
                done = modelbin.acts.record(self.model, images=files, out=out,
                                            progress=False, **self.settings)
            else:
                done = modelbin.acts.record(self.model, files, out=out, progress=False,
                                            **self.settings)
            paths.append(str(done))
            existing.append(bool(done.summary["existing"]))
            seconds.append(float(done.summary["seconds"]))
        return {"slice": batch["slice"], "path": np.array(paths),
                "existing": np.array(existing), "seconds": np.array(seconds)}


def slice_root(root: str, index: int) -> str:
    return os.path.join(root, "slices", f"{index:05d}")


def complete(root: str, index: int) -> Optional[str]:
    """The slice's dataset when it is complete (it opens and verifies)."""
    folder = Path(slice_root(root, index))
    if not folder.is_dir():
        return None
    for child in sorted(folder.iterdir()):
        if child.is_dir() and not child.name.endswith(".partial") and \
                (child / "metadata.json").is_file():
            try:
                modelbin.saev.Dataset(child)
            except ValueError:
                continue
            return str(child)
    return None


def write_plan(root: str, plan: Dict[str, Any]) -> None:
    """``ROOT/slices.json``, replaced as a whole."""
    partial = os.path.join(root, PLAN + ".partial")
    with open(partial, "w", encoding="utf-8") as f:
        json.dump(plan, f, indent=1)
        f.write("\n")
    os.replace(partial, os.path.join(root, PLAN))


def record(model: str, inputs: Sequence[str], root: str, *, images: bool,
           workers: int = 2, slices: Optional[int] = None,
           settings: Optional[Dict[str, Any]] = None,
           retries: Optional[int] = None, log=print) -> str:
    """Records ``inputs`` in slices on the Ray instance ``ray.init`` joined
    and writes their union; returns the path of ``ROOT/union.json``.
    Raises when a slice fails, leaving ``ROOT/slices.json`` to say which
    are missing."""
    settings = dict(settings or {})
    files = list_files(inputs, IMAGE_EXTENSIONS if images else TEXT_EXTENSIONS)
    if not files:
        raise ValueError(f"no {'image' if images else 'text'} files in {list(inputs)}")
    runs = cut(files, slices or workers)
    os.makedirs(root, exist_ok=True)
    plan = {"model": os.path.abspath(model), "images": images, "settings": settings,
            "slices": [{"files": run, "dataset": None} for run in runs]}
    plan_file = os.path.join(root, PLAN)
    if os.path.exists(plan_file):
        with open(plan_file, encoding="utf-8") as f:
            before = json.load(f)
        if {k: v for k, v in before.items() if k != "slices"} != \
                {k: v for k, v in plan.items() if k != "slices"} or \
                [s["files"] for s in before["slices"]] != runs:
            raise ValueError(f"{root} holds a recording of other inputs or settings "
                             f"({plan_file}); record into another directory")
    for index, entry in enumerate(plan["slices"]):
        entry["dataset"] = complete(root, index)
    missing = [i for i, s in enumerate(plan["slices"]) if s["dataset"] is None]
    write_plan(root, plan)
    for index, entry in enumerate(plan["slices"]):
        if entry["dataset"] is not None:
            log(f"slice {index}: already recorded ({entry['dataset']})")
    failure: Optional[BaseException] = None
    if missing:
        items = [{"slice": i, "files": json.dumps(runs[i])} for i in missing]
        remote: Dict[str, Any] = {}
        if retries is not None:
            remote = {"max_restarts": retries, "max_task_retries": retries}
        # Half a CPU per actor leaves room for Ray Data's own tasks: actors
        # that take every CPU starve them and the pipeline never starts.
        recorded = ray.data.from_items(items).map_batches(
            Recorder, fn_constructor_kwargs={"model": model, "root": os.path.abspath(root),
                                             "images": images, "settings": settings},
            compute=ray.data.ActorPoolStrategy(size=min(workers, len(missing))),
            num_cpus=0.5, batch_size=1, batch_format="numpy", **remote)
        try:
            for row in recorded.iter_rows():
                index = int(row["slice"])
                log(f"slice {index}: recorded in {row['seconds']:.2f} s ({row['path']})")
        except Exception as e:  # the pipeline's failure: say what is missing
            failure = e
    for index, entry in enumerate(plan["slices"]):
        entry["dataset"] = complete(root, index)
    write_plan(root, plan)
    still = [i for i, s in enumerate(plan["slices"]) if s["dataset"] is None]
    if still:
        raise RuntimeError(f"slices {still} of {len(runs)} are missing (see {plan_file}); "
                           f"run the same command again to record them") from failure
    return modelbin.saev.write_union(root, [s["dataset"] for s in plan["slices"]])


def main(argv: Optional[Sequence[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("-m", "--model", required=True)
    parser.add_argument("files", nargs="*", help="text files or directories")
    parser.add_argument("--images", nargs="+", help="image files or directories")
    parser.add_argument("-o", "--out", required=True, help="the root of the slices and union")
    parser.add_argument("--layers", default="-1", help="comma-separated blocks (-1 the last)")
    parser.add_argument("--tokens-per-text", type=int)
    parser.add_argument("--workers", type=int, default=2, help="recorder actors")
    parser.add_argument("--slices", type=int, help="slices (default: one per worker)")
    parser.add_argument("--retries", type=int,
                        help="restarts of a failed recorder (default: Ray Data's, unbounded)")
    parser.add_argument("--address", help="a Ray cluster to join (default: a local one)")
    args = parser.parse_args(argv)
    if bool(args.images) == bool(args.files):
        parser.error("give text files or --images, one of them")
    settings: Dict[str, Any] = {"layers": [int(x) for x in args.layers.split(",")]}
    if args.tokens_per_text is not None:
        settings["tokens_per_text"] = args.tokens_per_text
    if args.address:
        ray.init(address=args.address, include_dashboard=False, log_to_driver=False)
    else:
        ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False)
    try:
        union = record(args.model, args.images or args.files, args.out,
                       images=bool(args.images), workers=args.workers, slices=args.slices,
                       settings=settings, retries=args.retries)
    except (RuntimeError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        sys.exit(1)
    print(union)


if __name__ == "__main__":
    main()
