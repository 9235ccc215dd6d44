"""Draw the experiment pages' figures: run each experiment at a small size, one at a time, through the CLI.

Usage: ``python docs/_hooks/make_figures.py [NAME ...]`` (all of ``SIZES`` by default), from the repository
root, with ``OCOKIT_DATA`` set for the experiments that need data. For each experiment it runs
``ocokit run NAME --T T --seeds S --out TMP [--option k=v ...]`` and writes ``docs/figures/NAME.png`` (shrunk
to a small palette PNG) and ``docs/figures/NAME.json`` (the size used and the claims as measured), which the
experiment pages show.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

FIGURES = Path(__file__).resolve().parents[1] / "figures"
MAX_BYTES = 150_000

# name: (T, seeds, options). Small sizes: each run takes seconds to a few minutes on a 2-core machine.
SIZES: dict[str, tuple[int, int, dict[str, str]]] = {
    "time-varying-regression": (1000, 3, {}),
    "online-qp": (1000, 3, {}),
    "online-lp": (1000, 3, {}),
    "job-scheduling": (576, 2, {}),
    "gradual-variation": (4000, 2, {"horizons": "3"}),
    "simplex-mirror-prox": (4000, 2, {"horizons": "3", "dims": "4,16,64"}),
    "strongly-convex-sets": (1000, 2, {"points": "4"}),
    "memory-predictions-horizon": (20, 40, {"literal_seeds": "5"}),
    "memory-predictions-window": (20, 20, {"literal_seeds": "5"}),
    "matrix-completion-movielens": (1000, 3, {}),  # the default run: 9 minutes
    "matrix-completion-filmtrust": (200, 3, {}),  # the default run: 4.5 minutes
}


def shrink(source: Path, target: Path) -> None:
    """Save ``source`` as a palette PNG no wider than 1000 px (and smaller until it fits ``MAX_BYTES``)."""
    from PIL import Image

    image = Image.open(source).convert("RGB")
    width = min(1000, image.width)
    while True:
        scaled = image.resize((width, round(image.height * width / image.width)), Image.LANCZOS)
        scaled.quantize(colors=64, method=Image.Quantize.MEDIANCUT).save(target, optimize=True)
        if target.stat().st_size <= MAX_BYTES or width < 400:
            return
        width = int(width * 0.85)


def draw(name: str) -> None:
    T, seeds, options = SIZES[name]
    with tempfile.TemporaryDirectory() as tmp:
        command = ["ocokit", "run", name, "--T", str(T), "--seeds", str(seeds)]
        for key, value in options.items():
            command += ["--option", f"{key}={value}"]
        print(" ".join(command), flush=True)
        subprocess.run([*command, "--out", tmp], check=True, env=os.environ.copy())
        summary = json.loads((Path(tmp) / "summary.json").read_text())
        shrink(Path(tmp) / summary["figure"], FIGURES / f"{name}.png")  # the first figure drawn
    record = {
        "T": T,
        "seeds": seeds,
        "options": options,
        "claims": [
            {"statement": c["statement"], "measured": c["measured"], "holds": bool(c["holds"])}
            for c in summary.get("claims", [])
        ],
    }
    (FIGURES / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")


if __name__ == "__main__":
    for experiment in sys.argv[1:] or list(SIZES):
        draw(experiment)
