"""A model exported as the components deployments run (issue 19, deliverable 3).

Where a model's whole forward pass cannot be exported (a vision-language model merges its image
features into the text embeddings with a data-dependent scatter), transformers.js,
onnxruntime-genai and optimum export its parts instead: the vision encoder with its projector,
the token embedding, and the language model on `inputs_embeds`. A spec lists them under
`components`, each by the submodule that computes it (`visual`, `language_model.embed_tokens`,
`language_model`).

Each component's inputs and reference outputs are what that submodule really receives and
returns while the whole tiny model runs on the spec's inputs (forward hooks), so the components
chain exactly as in the model: the language model's `inputs_embeds` are the text embeddings with
the image features already merged, its `position_ids` the model's own multimodal positions.

- `derive` (for `gen import`): each component's declared inputs, outputs and two shapes.
- `export` (for `gen fixtures`): `<out_dir>/<component>/`, each a whole fixture (meta.json,
  model.onnx, model.pt, the precision variants, inputs and reference outputs of both shapes,
  sampled linear layers), built by the same steps as a whole model's (export.py), and
  `<out_dir>/meta.json` naming the components.

The fixture key of a model with components covers this file too (hwmatrix_specs'
`fixture_key`), so editing it rebuilds those fixtures only.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import os
import shutil
from pathlib import Path

import torch

import export
# The dtypes a fixture carries and the constant-output rule are the whole-model derive's own.
from registry import DTYPES, _is_constant


def submodule(model, path: str):
    """The submodule at a dotted attribute path (`language_model.embed_tokens`)."""
    module = model
    for part in path.split("."):
        if not hasattr(module, part):
            raise AttributeError(f"{type(module).__name__} has no submodule {part!r} (component module {path!r}); "
                                 f"it has {[n for n, _ in module.named_children()]}")
        module = getattr(module, part)
    return module


def call_arguments(module, args, kwargs) -> tuple[dict[str, torch.Tensor], dict, dict[str, int]]:
    """A captured call's arguments by parameter name: the tensors, which become the component's
    graph inputs (a list of tensors, Qwen3-VL's `deepstack_visual_embeds`, as one input per
    element, `<name>_<i>`, with its length in the third value), and the other values (flags,
    None), which are replayed as they were."""
    signature = inspect.signature(module.forward)
    parameters = signature.parameters
    bound = signature.bind_partial(*args, **kwargs)
    named = {}
    for name, value in bound.arguments.items():
        kind = parameters[name].kind
        if kind == inspect.Parameter.VAR_KEYWORD:
            named.update(value)
        elif kind == inspect.Parameter.VAR_POSITIONAL:
            if value:
                raise TypeError(f"{type(module).__name__}.forward got {len(value)} extra positional arguments")
        else:
            named[name] = value
    tensors, others, lists = {}, {}, {}
    for name, value in named.items():
        if isinstance(value, torch.Tensor):
            tensors[name] = value
        elif isinstance(value, (list, tuple)) and value and all(isinstance(v, torch.Tensor) for v in value):
            lists[name] = len(value)
            tensors.update({f"{name}_{i}": v for i, v in enumerate(value)})
        else:
            others[name] = value
    unfeedable = {k: type(v).__name__ for k, v in others.items() if v is not None and not isinstance(v, (bool, int, float, str))}
    if unfeedable:
        raise TypeError(f"{type(module).__name__}.forward takes arguments a graph cannot be fed: {unfeedable}")
    return tensors, others, lists


def flat_outputs(out) -> dict[str, torch.Tensor]:
    """A component's outputs by name: a model output's tensors (export.model_outputs), a plain
    tensor as `output`, a tuple's tensors as `output_<i>`."""
    if isinstance(out, torch.Tensor):
        return {"output": out}
    if hasattr(out, "items"):
        return export.model_outputs(out)
    if isinstance(out, (tuple, list)):
        return {f"output_{i}": t for i, t in enumerate(out) if isinstance(t, torch.Tensor)}
    raise TypeError(f"the component returned a {type(out).__name__}, not tensors")


# Where a captured call's other arguments keep the lengths of its tensor-list arguments.
LISTS = "__tensor_lists__"


@contextlib.contextmanager
def capture(model, components: list[dict]):
    """The first call of each component's submodule during one forward pass:
    {name: (tensors, others, outputs)}."""
    calls, handles = {}, []
    for component in components:
        module = submodule(model, component["module"])

        def hook(module, args, kwargs, out, name=component["name"]):
            if name not in calls:
                tensors, others, lists = call_arguments(module, args, kwargs)
                calls[name] = ({k: v.detach().clone() for k, v in tensors.items()}, {**others, LISTS: lists},
                               {k: v.detach().clone() for k, v in flat_outputs(out).items()})

        handles.append(module.register_forward_hook(hook, with_kwargs=True))
    try:
        yield calls
    finally:
        for handle in handles:
            handle.remove()


def run_shapes(model, spec: dict, config, seed: int) -> list[dict]:
    """Each shape's captured component calls, the whole model run on the spec's inputs."""
    runs = []
    for index, shape in enumerate(spec["shapes"]):
        inputs = export.build_inputs(spec, shape, config, seed + index, index, model)
        with torch.no_grad(), capture(model, spec["components"]) as calls:
            model(**inputs, return_dict=True)
        missing = [c["name"] for c in spec["components"] if c["name"] not in calls]
        if missing:
            raise RuntimeError(f"the model's forward pass never called the module of component {', '.join(missing)} "
                               f"on shape {index + 1}")
        runs.append(calls)
    return runs


def axis_names(tensor: str, sizes: list[list[int]], spec: dict) -> list[str]:
    """Each dimension's axis name. A tensor the whole model takes too (attention_mask) keeps its
    declared axes; a dimension that varies between the two shapes is named after the model's
    axis that varies alike (`sequence`), which a static-shape engine fixes by name; any other is
    `<tensor>_<dim>`."""
    shapes = spec["shapes"]
    same = next((i["axes"] for i in spec["inputs"] if i["name"] == tensor and len(i["axes"]) == len(sizes[0])), None)
    if same and all(shapes[k].get(a) == sizes[k][d] for k in range(2) for d, a in enumerate(same)):
        return list(same)
    names = []
    for dim in range(len(sizes[0])):
        alike = [a for a in shapes[0] if shapes[0][a] == sizes[0][dim] and shapes[1].get(a) == sizes[1][dim]]
        varies = sizes[0][dim] != sizes[1][dim]
        names.append(alike[0] if varies and len(alike) == 1 and alike[0] not in names else f"{tensor}_{dim}")
    return names


def describe(tensors: list[dict[str, torch.Tensor]], spec: dict, input_names=()) -> tuple[list[dict], list[dict]]:
    """Declared tensors ({name, dtype, axes}) and each shape's sizes of their axes."""
    declared, sized = [], [dict(), dict()]
    for name, first in tensors[0].items():
        if first.dtype not in DTYPES:
            raise TypeError(f"tensor {name} is {first.dtype}, which no fixture carries")
        sizes = [list(t[name].shape) for t in tensors]
        axes = axis_names(export.output_name(name, input_names), sizes, spec)
        declared.append({"name": export.output_name(name, input_names), "dtype": DTYPES[first.dtype], "axes": axes})
        for index in range(2):
            for axis, size in zip(axes, sizes[index]):
                sized[index][axis] = int(size)
    return declared, sized


def informative(name: str, outputs: list[dict[str, torch.Tensor]], again: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """The outputs a reference can check an engine on; raises when none is, or one is broken."""
    kept = {}
    for key in outputs[0]:
        values = [o[key] for o in outputs]
        if any(v.is_floating_point() and not torch.isfinite(v).all() for v in values):
            raise RuntimeError(f"component {name}: output {key} is not finite (NaN or inf)")
        if not torch.equal(again[key], values[-1]):
            raise RuntimeError(f"component {name}: output {key} differs between two runs on the same inputs")
        if not any(_is_constant(v) for v in values):
            kept[key] = values[0]
    if not kept:
        raise RuntimeError(f"component {name}: every output is constant ({', '.join(outputs[0])}): a reference a constant matches checks nothing")
    return kept


def derive(spec: dict, seed: int = 0) -> list[dict]:
    """The `components` of a spec's imported fields: name, module, inputs, outputs, shapes."""
    model, config = export.build_model(spec, seed)
    runs = run_shapes(model, spec, config, seed)
    again = run_shapes(model, spec, config, seed)[-1]
    derived = []
    for component in spec["components"]:
        name = component["name"]
        fixed = component.get("fixed_inputs") or []
        inputs = [{k: v for k, v in run[name][0].items() if k not in fixed} for run in runs]
        outputs = [run[name][2] for run in runs]
        kept = informative(name, outputs, again[name][2])
        outputs = [{k: o[k] for k in kept} for o in outputs]
        declared_inputs, input_sizes = describe(inputs, spec)
        declared_outputs, output_sizes = describe(outputs, spec, input_names=inputs[0])
        shapes = [dict(sorted({**input_sizes[i], **output_sizes[i]}.items())) for i in range(2)]
        derived.append({"name": name, "module": component["module"], **({"fixed_inputs": fixed} if fixed else {}), "inputs": declared_inputs,
                        "outputs": declared_outputs, "shapes": shapes})
    return derived


def derive_imported(model_type: str, imported: dict, chosen: list[dict]) -> dict:
    """The fields `derive` adds to what registry.derive just measured: `components`, or, when
    the harness cannot measure one, `known_issue` at the reference stage (our gap) with the error."""
    spec = {"model_type": model_type, "export": {"class": imported["export_class"]}, "tiny_config": imported["tiny_config"],
            "inputs": imported["inputs"], "shapes": imported["shapes"], "components": chosen}
    try:
        return {"components": derive(spec)}
    except Exception as error:  # noqa: BLE001 - the error is the record
        return {"known_issue": f"running the tiny model: measuring its components: {export._error_line(error)}"}


class ComponentCall(torch.nn.Module):
    """Calls a component's submodule with its graph inputs by name (a tensor-list argument
    gathered back from its `<name>_<i>` inputs) and the captured other arguments, and returns the
    declared outputs in order."""

    def __init__(self, module, input_names, output_names, others):
        super().__init__()
        self.module = module
        self.input_names = input_names
        self.output_names = output_names
        self.lists = others.get(LISTS, {})
        self.others = {k: v for k, v in others.items() if k != LISTS}

    def forward(self, *args):
        named = dict(zip(self.input_names, args))
        for name, count in self.lists.items():
            named[name] = [named.pop(f"{name}_{i}") for i in range(count)]
        out = flat_outputs(self.module(**named, **self.others))
        return tuple(out[export.output_key(n, self.input_names)] for n in self.output_names)


def export_component(model, component: dict, runs: list[dict], tmp: Path, job: dict, spec: dict) -> dict:
    """One component's fixture folder in `tmp`, as export.export builds a whole model's."""
    name = component["name"]
    module = submodule(model, component["module"])
    input_names = [i["name"] for i in component["inputs"]]
    output_names = [o["name"] for o in component["outputs"]]
    fixed_names = component.get("fixed_inputs") or []
    shapes_meta, examples = [], []
    for index, run in enumerate(runs):
        tensors, others, outputs = run[name]
        # Fixed inputs are data of the fixture, baked into the graph as constants (Qwen2-VL's
        # grid_thw sizes the vision tower's Python loops, which no exporter keeps symbolic).
        fixed = {k: tensors.pop(k) for k in fixed_names}
        others = {**others, **fixed}
        if list(tensors) != input_names:
            raise RuntimeError(f"component {name} is called with {list(tensors)}, the spec declares {input_names}: "
                               "run `gen import` again to derive its inputs")
        suffix = "" if index == 0 else str(index + 1)
        outputs = {n: outputs[export.output_key(n, input_names)] for n in output_names}
        shapes_meta.append({
            "axes": component["shapes"][index],
            **({"fixed_inputs": {k: v.tolist() for k, v in fixed.items()}} if fixed else {}),
            "inputs": export.save_npy_dir(tmp / f"inputs{suffix}", tensors),
            "outputs": export.save_npy_dir(tmp / f"outputs{suffix}", outputs),
        })
        examples.append((tuple(tensors.values()), others))
    # The graph is traced with the export shape's other arguments, which both shapes must share.
    same = lambda a, b: torch.equal(a, b) if isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) else a == b
    if examples[0][1].keys() != examples[1][1].keys() or not all(same(v, examples[1][1][k]) for k, v in examples[0][1].items()):
        raise RuntimeError(f"component {name} is called with other flags on the two shapes: {examples[0][1]} and {examples[1][1]}")
    wrapper = ComponentCall(module, input_names, output_names, examples[0][1]).eval()
    with torch.no_grad(), export.capture_linear_layers(module) as captured:
        wrapper(*examples[0][0])
    linear = export.save_linear_layers(tmp / "linear", captured)
    axes = export.dynamic_axes({**component, "export": {}})
    verify = lambda: export.verify_with_onnxruntime(tmp, 2, job.get("tolerance") or export.DEFAULT_TOLERANCE)
    exporter, errors = export.export_onnx(wrapper, examples[0][0], input_names, output_names, axes, tmp / "model.onnx", spec, verify,
                                          second_example=examples[1][0])
    fields = export.fixture_fields(spec, job, "tiny-random", (exporter, errors), wrapper, examples[0][0], tmp, linear, shapes_meta)
    return {**fields, "component": name, "module": component["module"]}


def export_model(job: dict) -> None:
    """`<out_dir>/<component>/` for each component and `<out_dir>/meta.json`, renamed into place
    together only when every component exported (a failed one is the model's export error)."""
    spec = job["spec"]
    seed = int(job.get("seed", 0))
    out_dir = Path(job["out_dir"])
    tmp = out_dir.with_name(f"{out_dir.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    model, config = export.build_model(spec, seed)
    runs = run_shapes(model, spec, config, seed)
    versions = export.library_versions()
    names = []
    for component in spec["components"]:
        folder = tmp / component["name"]
        folder.mkdir()
        try:
            meta = export_component(model, component, runs, folder, job, spec)
        except Exception as error:
            raise RuntimeError(f"component {component['name']} ({component['module']}): {export._error_line(error)}") from error
        meta["versions"] = versions
        (folder / "meta.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        names.append(component["name"])
    top = {
        "model_type": spec["model_type"],
        "source": "tiny-random",
        "class": spec["export"]["class"],
        "seed": seed,
        "cache_key": job.get("cache_key"),
        "components": names,
        "config": export.config_json(config),
        "versions": versions,
    }
    (tmp / "meta.json").write_text(json.dumps(top, indent=2, sort_keys=True) + "\n")
    shutil.rmtree(out_dir, ignore_errors=True)
    tmp.rename(out_dir)
