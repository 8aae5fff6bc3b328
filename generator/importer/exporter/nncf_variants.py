"""NNCF's weight formats of a fixture, as optimum-intel ships them: OpenVINO IR with int8 or int4
weights, for the openvino platform's OpenVINO-runtime engine.

Runs in the OpenVINO runtime's venv (<cache>/venv-openvino-runtime: openvino and nncf, no torch),
not the exporter's: `gen fixtures` calls it after the export, with the fixtures whose variants are
missing or were made by another version of this script (`key`).

    python nncf_variants.py JOBS.json

JOBS.json: {"key": "...", "dirs": ["<fixture>", ...]}. For each fixture it reads model.onnx with
OpenVINO's ONNX frontend (as `optimum-cli export openvino` converts a model), compresses its
weights with `nncf.compress_weights` and writes `model.nncf_int8.xml`/`.bin` and
`model.nncf_int4.xml`/`.bin` beside it, and `nncf.json`: how each was made, what it compressed,
or NNCF's whole error. One JSON line per fixture goes to standard output (progress); the
libraries' own logging goes to standard error.
"""

from __future__ import annotations

import json
import logging
import os
import re
import sys
import traceback
from pathlib import Path

# optimum-intel's `--weight-format int8` and `int4` (OVWeightQuantizationConfig's defaults: bits 8,
# asymmetric; bits 4, asymmetric, group size 128, ratio 1.0: every ratio-defining layer in int4,
# embeddings and the last layer in the int8 backup). A tiny fixture's channels are often not a
# multiple of 128: NNCF's ADJUST fallback then takes the largest power of two (at least 32) that
# divides them, and a weight with none stays in the int8 backup; `nncf.json` counts each.
FORMATS = {
    "nncf_int8": {"mode": "INT8_ASYM"},
    "nncf_int4": {"mode": "INT4_ASYM", "group_size": 128, "ratio": 1.0},
}

# What a compressed weight is stored as (its zero points are constants of the same type).
INT4_TYPES = {"u4", "i4"}
INT8_TYPES = {"u8", "i8"}


def compressed_weights(model) -> dict:
    """The compressed weight constants of a model, by width, and the int4 group sizes used."""
    int4 = int8 = 0
    groups: set[int] = set()
    for op in model.get_ops():
        if op.get_type_name() != "Constant" or op.get_friendly_name().endswith("zero_point"):
            continue
        kind = op.get_element_type().get_type_name()
        if kind in INT4_TYPES:
            int4 += 1
            shape = list(op.get_output_shape(0))
            if len(shape) == 3:
                groups.add(int(shape[-1]))
        elif kind in INT8_TYPES:
            int8 += 1
    return {"int4": int4, "int8": int8, "int4_group_sizes": sorted(groups)}


def stable_names(model) -> None:
    """Names each node OpenVINO named itself (`Convert_6175`: its type and a counter of
    every node this process made) by its place in this model instead, so the same
    fixture makes the same IR in whichever process and order `gen fixtures` runs it:
    the IR's bytes are what its checks' evidence is of (content.json)."""
    for index, op in enumerate(model.get_ordered_ops()):
        if re.fullmatch(re.escape(op.get_type_name()) + r"_\d+", op.get_friendly_name()):
            op.set_friendly_name(f"{op.get_type_name()}_{index}")


def compress(nncf, model, onnx_path: Path, name: str, settings: dict) -> dict:
    """One format of `model` (read from `onnx_path`; compressed in place: pass a copy)."""
    import openvino as ov

    kwargs = {"mode": getattr(nncf.CompressWeightsMode, settings["mode"])}
    if "group_size" in settings:
        kwargs["group_size"] = settings["group_size"]
        kwargs["ratio"] = settings["ratio"]
        kwargs["advanced_parameters"] = nncf.AdvancedCompressionParameters(
            group_size_fallback_mode=nncf.GroupSizeFallbackMode.ADJUST
        )
    compressed = nncf.compress_weights(model, **kwargs)
    counts = compressed_weights(compressed)
    wanted = counts["int4"] if name == "nncf_int4" else counts["int8"]
    method = "nncf.compress_weights(" + ", ".join(f"{k}={v}" for k, v in settings.items())
    method += ", group_size_fallback_mode=ADJUST)" if "group_size" in settings else ")"
    if wanted == 0:
        # Nothing in the format's width: the check would check nothing of it.
        return {"error": f"NNCF compressed no weight to {name[5:]} ({counts})", "method": method}
    xml = onnx_path.parent / f"model.{name}.xml"
    stable_names(compressed)
    # The rest of the graph stays float32 (optimum-intel saves a weight-compressed model so).
    ov.save_model(compressed, str(xml), compress_to_fp16=False)
    return {
        "file": xml.name,
        "method": method,
        "weights": counts,
        "bytes": xml.stat().st_size + xml.with_suffix(".bin").stat().st_size,
    }


def main() -> int:
    jobs = json.loads(Path(sys.argv[1]).read_text())
    # Standard output carries our lines only: the libraries print progress and tables there.
    out = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    import nncf
    import openvino as ov

    nncf.set_log_level(logging.WARNING)
    core = ov.Core()
    versions = {"openvino": ov.get_version(), "nncf": nncf.__version__}
    for fixture in map(Path, jobs["dirs"]):
        meta = json.loads((fixture / "meta.json").read_text())
        record = {"key": jobs["key"], "fixture_key": meta.get("cache_key"), "versions": versions}
        model = None
        for name, settings in FORMATS.items():
            try:
                # Read once per fixture (the ONNX frontend's conversion is most of a tiny model's time).
                if model is None:
                    model = core.read_model(str(fixture / "model.onnx"))
                record[name] = compress(nncf, model.clone(), fixture / "model.onnx", name, settings)
            except Exception as e:  # noqa: BLE001 - the record keeps NNCF's or OpenVINO's whole error
                record[name] = {"error": "".join(traceback.format_exception_only(e)).strip()}
                traceback.print_exc()
        (fixture / "nncf.json").write_text(json.dumps(record, indent=1, sort_keys=True) + "\n")
        out.write(json.dumps({"dir": str(fixture), "errors": [n for n in FORMATS if "error" in record[n]]}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
