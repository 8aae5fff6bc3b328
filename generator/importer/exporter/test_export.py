"""Unit tests of the exporter's input fills and fixture helpers that need no real model.

    python -m unittest discover -s generator/importer/exporter -p 'test_*.py'   (tests/run.sh runs it)
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
import types
import unittest
import unittest.mock
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import export  # noqa: E402
import registry  # noqa: E402


class AudioTower(torch.nn.Module):
    """Stands in for an audio-language model's audio path: one feature row per 4 frames."""

    config = types.SimpleNamespace(audio_token_id=7, vocab_size=50)

    def get_audio_features(self, input_features, input_features_mask):
        frames = input_features.shape[-1]
        return {"pooler_output": torch.zeros(input_features.shape[0], frames // 4, 3)}


AUDIO_PROMPT = {"inputs": [
    {"name": "input_ids", "dtype": "int64", "axes": ["batch", "sequence"], "fill": "audio-text-tokens"},
    {"name": "input_features", "dtype": "float32", "axes": ["batch", "mel_bins", "frames"], "fill": "normal"},
    {"name": "input_features_mask", "dtype": "int64", "axes": ["batch", "frames"], "fill": "ones"},
    {"name": "attention_mask", "dtype": "int64", "axes": ["batch", "sequence"], "fill": "mask"},
]}


class AudioPromptTest(unittest.TestCase):
    def test_placeholders_fill_the_prefix_the_mask_keeps(self):
        model = AudioTower()
        shape = {"batch": 2, "sequence": 13, "mel_bins": 8, "frames": 16}
        inputs = export.build_inputs(AUDIO_PROMPT, shape, model.config, seed=0, shape_index=1, model=model)
        ids, mask = inputs["input_ids"], inputs["attention_mask"]
        # 16 frames make 4 audio feature rows, so 4 placeholders at positions 1..4 of every row.
        self.assertTrue((ids[:, 1:5] == 7).all(), ids)
        self.assertFalse((ids[:, 5:] == 7).any(), "the placeholder id must not appear in the text")
        self.assertFalse((ids[:, 0] == 7).any())
        # The second shape pads the mask, never over the placeholders.
        self.assertTrue((mask[:, :5] == 1).all(), mask)
        self.assertLess(int(mask.sum()), mask.numel(), "the second shape's mask pads something")
        # `ones` is never padded, unlike `mask`.
        self.assertTrue((inputs["input_features_mask"] == 1).all())

    def test_a_sequence_too_short_for_the_clip_is_refused(self):
        model = AudioTower()
        shape = {"batch": 1, "sequence": 4, "mel_bins": 8, "frames": 16}
        with self.assertRaisesRegex(ValueError, "must exceed the 4 audio tokens"):
            export.build_inputs(AUDIO_PROMPT, shape, model.config, seed=0, shape_index=0, model=model)

    def test_a_config_without_an_audio_token_is_refused(self):
        model = AudioTower()
        model.config = types.SimpleNamespace(vocab_size=50)
        shape = {"batch": 1, "sequence": 12, "mel_bins": 8, "frames": 16}
        with self.assertRaisesRegex(ValueError, "audio token id"):
            export.build_inputs(AUDIO_PROMPT, shape, model.config, seed=0, shape_index=0, model=model)


class OutputsTest(unittest.TestCase):
    def test_nested_outputs_are_flattened_by_field(self):
        out = {"logits": torch.ones(1), "language_model_outputs": {"last_hidden_state": torch.zeros(2), "note": "text"},
               "hidden_states": (torch.ones(1), torch.ones(2))}
        flat = export.model_outputs(out)
        self.assertEqual(sorted(flat), ["hidden_states_0", "hidden_states_1", "language_model_outputs_last_hidden_state", "logits"])


class LinearLayersTest(unittest.TestCase):
    def test_evenly_picks_first_and_last_and_never_divides_by_zero(self):
        self.assertEqual(export.evenly(10, 3), [0, 4, 9])
        self.assertEqual(export.evenly(10, 1), [0])
        self.assertEqual(export.evenly(2, 5), [0, 1])

    def test_saved_layers_stay_within_the_byte_budget(self):
        # 24 layers of 128 x 128 weights are 1.5 MiB of weights alone: fewer are kept, still spread.
        captured = [(f"layer{i}", torch.randn(32, 128), torch.randn(128, 128), "linear") for i in range(24)]
        with tempfile.TemporaryDirectory() as folder:
            saved = export.save_linear_layers(Path(folder), captured)
            size = sum(f.stat().st_size for f in Path(folder).rglob("*.npy"))
        self.assertLess(len(saved["layers"]), 24)
        self.assertLessEqual(size, export.LINEAR_MAX_BYTES + 4096 * len(saved["layers"]))  # npy headers
        names = [layer["name"] for layer in saved["layers"]]
        self.assertEqual((names[0], names[-1]), ("layer0", "layer23"))


class ReadyTest(unittest.TestCase):
    def test_frozen_and_attention_kwargs_given_an_empty_dict(self):
        class Spreads(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.linear = torch.nn.Linear(2, 2)

            def forward(self, x, cross_attention_kwargs=None):
                return self.linear(x) * len({**cross_attention_kwargs})

        model = export.ready(Spreads())
        self.assertFalse(model.training)
        self.assertFalse(any(p.requires_grad for p in model.parameters()))
        self.assertEqual(model(torch.ones(1, 2)).abs().sum().item(), 0.0)


class LayoutTest(unittest.TestCase):
    def test_text_alone_only_for_a_model_without_a_tower(self):
        tower = types.SimpleNamespace(sub_configs={"vision_config": object}, vision_config=types.SimpleNamespace())
        bare = types.SimpleNamespace(sub_configs={}, vocab_size=10)
        self.assertTrue(registry._has_tower(tower))
        self.assertFalse(registry._has_tower(bare))
        names = lambda config: [[i["name"] for i in inputs] for inputs, _ in
                                registry.candidate_layouts("vision_language", ["input_ids", "attention_mask"], config)]
        self.assertIn(["input_ids", "attention_mask"], names(bare))
        self.assertNotIn(["input_ids", "attention_mask"], names(tower))


class ImageTokenTest(unittest.TestCase):
    def test_feature_rows_and_maps(self):
        rows = {"pooler_output": torch.zeros(1, 4, 32)}
        self.assertEqual(export._feature_rows(rows), 4)
        # GLM-Image: one [channels, height, width] map per image of a 2 x 2 token grid.
        maps = {"pooler_output": [torch.zeros(64, 2, 2)]}
        self.assertEqual(export._feature_rows(maps, merged_grid=(2, 2)), 4)
        self.assertEqual(export._feature_rows(maps), 128)  # without the grid, read as rows

    def test_a_nested_vision_language_config_is_found(self):
        vision = types.SimpleNamespace(image_size=20)
        inner = types.SimpleNamespace(vision_config=vision, image_token_id=9)
        outer = types.SimpleNamespace(sub_configs={"encoder": None}, encoder=inner)
        self.assertIs(export.vision_owner(outer), inner)
        self.assertEqual(export.image_placeholder_id(outer), 9)
        self.assertIs(export.vision_owner(inner), inner)


class DrawnWeightsTest(unittest.TestCase):
    def model(self):
        model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
        torch.nn.init.zeros_(model[1].weight)
        return model

    def test_a_zero_weight_is_drawn_the_same_way_every_time(self):
        first, second = self.model(), self.model()
        export.draw_weights(first, ["1.weight"])
        export.draw_weights(second, ["1.weight"])
        self.assertTrue(first[1].weight.any())
        self.assertTrue(torch.equal(first[1].weight, second[1].weight))
        self.assertLess(float(first[1].weight.abs().max()), 10 * export.DRAWN_STD)

    def test_a_name_that_is_not_a_zero_parameter_is_refused(self):
        with self.assertRaisesRegex(ValueError, r"not a parameter of Sequential \(its zero parameters: \['1.weight'\]\)"):
            export.draw_weights(self.model(), ["2.weight"])
        with self.assertRaisesRegex(ValueError, "does not initialize to zero"):
            export.draw_weights(self.model(), ["0.weight"])


class MissingLibraryTest(unittest.TestCase):
    def test_the_libraries_requires_backends_found_absent_are_named(self):
        from transformers.utils import import_utils

        if import_utils.BACKENDS_MAPPING["natten"][0]():
            self.skipTest("natten is installed here")

        class NeedsNatten:
            def __init__(self):
                import_utils.requires_backends(self, ["torch", "natten"])

        # Not assertRaises: it clears the traceback's frames, whose locals name the backends.
        try:
            NeedsNatten()
            self.fail("requires_backends did not raise")
        except ImportError as error:
            raised = error
        self.assertEqual(registry.missing_libraries(raised), ["natten"])
        issue = registry._stopped_running(raised)
        self.assertEqual((issue["stage"], issue["missing_libraries"]), ("reference", ["natten"]))
        # Words alone never decide: the same message raised elsewhere is our harness's.
        other = ImportError(str(raised))
        self.assertEqual(registry.missing_libraries(other), [])
        self.assertNotIn("missing_libraries", registry._stopped_running(other))


class RecipeTest(unittest.TestCase):
    def names(self, export_section, second=(1,)):
        return [a.name for a in export.recipe({"export": export_section}, second)]

    def test_order_choice_and_the_recorded_attempt(self):
        self.assertEqual(self.names({})[:3], ["legacy", "dynamo on shape 2", "dynamo"])
        self.assertTrue(all("dynamo" in n for n in self.names({"exporter": "dynamo"})))
        self.assertNotIn("dynamo on shape 2", self.names({}, second=None))
        hinted = self.names({"attempt": "dynamo, patched"})
        self.assertEqual(hinted[0], "dynamo, patched")
        self.assertEqual(sorted(hinted), sorted(self.names({})))
        # Draft export stays last even where it made the last fixture: it is the slowest.
        self.assertEqual(self.names({"attempt": "dynamo draft export, patched"}), self.names({}))
        # A graph that runs at the export shape only, where no other attempt passed both: alone.
        self.assertEqual(self.names({"attempt": "legacy at opset 18, patched", "shape_only": True}), ["legacy at opset 18, patched"])
        # ... unless the recipe no longer has that attempt: then all of them.
        self.assertEqual(self.names({"attempt": "gone", "shape_only": True}), self.names({}))

    def test_late_attempts_only_where_they_can_get_further(self):
        draft = next(a for a in export.RECIPE if a.draft)
        patched_dynamo = next(a for a in export.RECIPE if a.dynamo and a.patched and not a.draft and not a.batched_experts)
        batched = [a for a in export.RECIPE if a.batched_experts]
        self.assertTrue(export.worth_trying(draft, {}, set(), False))  # a recipe of draft alone
        self.assertFalse(export.worth_trying(draft, {"dynamo": "ConversionError: no ONNX function"}, set(), False))
        self.assertTrue(export.worth_trying(draft, {"dynamo": "x (cause: GuardOnDataDependentSymNode: y)"}, set(), False))
        self.assertFalse(export.worth_trying(patched_dynamo, {"legacy": "x"}, set(), False))
        self.assertTrue(export.worth_trying(patched_dynamo, {"legacy": "x"}, {"isin"}, False))
        self.assertTrue(batched)
        self.assertFalse(any(export.worth_trying(a, {"legacy": "x"}, set(), False) for a in batched))
        self.assertTrue(all(export.worth_trying(a, {"legacy": "x"}, set(), True) for a in batched))


class BakedLength(torch.nn.Module):
    """Scales by its input's length read as a Python int: every exporter bakes the length in.
    Its forward takes *args, as export.NamedOutputs's does."""

    def forward(self, *args):
        return args[0] * int(args[0].shape[1])


class ExportShapeOnlyTest(unittest.TestCase):
    def test_a_graph_that_passed_only_the_export_shape_is_kept_with_its_failure(self):
        """No attempt passes both shapes: the first graph that passed the export shape is the
        fixture, its second-shape failure recorded; a graph that failed the export shape (dynamo
        traced on the second one) is never kept."""
        import warnings

        model = BakedLength().eval()
        shapes = [torch.randn(1, 3, generator=torch.Generator().manual_seed(0)), torch.randn(2, 5, generator=torch.Generator().manual_seed(1))]
        with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tmp = Path(tmp)
            for suffix, x in zip(("", "2"), shapes):
                export.save_npy_dir(tmp / f"inputs{suffix}", {"x": x})
                export.save_npy_dir(tmp / f"outputs{suffix}", {"y": model(x)})
            made, errors = export.export_onnx(
                model, (shapes[0],), ["x"], ["y"], {"x": {0: "batch", 1: "sequence"}, "y": {0: "batch", 1: "sequence"}},
                # Dynamo traced on the second shape first: its graph fails the export shape.
                tmp / "model.onnx", {"export": {"attempt": "dynamo on shape 2"}}, lambda: export.verify_with_onnxruntime(tmp, 2, export.DEFAULT_TOLERANCE),
                second_example=(shapes[1],))
            self.assertEqual(made["name"], "legacy")
            self.assertIn("differs from PyTorch on shape 2", made["export_shape_only"])
            self.assertNotIn("legacy", errors)
            self.assertIn("on shape 1", errors["dynamo on shape 2"])
            self.assertEqual(sorted(p.name for p in tmp.glob("*.onnx")), ["model.onnx"])
            export.verify_with_onnxruntime(tmp, 1, export.DEFAULT_TOLERANCE)  # the kept graph passes the export shape
            with self.assertRaises(export.OtherShapeFailure):
                export.verify_with_onnxruntime(tmp, 2, export.DEFAULT_TOLERANCE)

class BatchedExpertsTest(unittest.TestCase):
    def test_batched_experts_compute_what_the_eager_loop_does_and_are_restored(self):
        """The batched-experts attempts export transformers' `batched_mm` experts; the graph is
        checked against the eager loop's references, so the two must agree, and the model must
        go back to the eager loop afterwards."""
        import transformers

        config = transformers.AutoConfig.for_model(
            "qwen2_moe", vocab_size=64, hidden_size=16, intermediate_size=32, moe_intermediate_size=8,
            shared_expert_intermediate_size=8, num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
            num_experts=4, num_experts_per_tok=2)
        torch.manual_seed(0)
        model = export.ready(export.instantiate(transformers.Qwen2MoeModel, config))
        self.assertTrue(export.expert_modules(model))
        self.assertEqual([], export.expert_modules(torch.nn.Linear(2, 2)))
        ids = torch.randint(3, 64, (2, 7), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            eager = model(input_ids=ids).last_hidden_state
            with export.experts_batched(model):
                self.assertEqual({"batched_mm"}, {m.config._experts_implementation for m in export.expert_modules(model)})
                batched = model(input_ids=ids).last_hidden_state
        self.assertEqual({"eager"}, {m.config._experts_implementation for m in export.expert_modules(model)})
        torch.testing.assert_close(batched, eager, atol=1e-5, rtol=1e-4)


class OnnxExportModeTest(unittest.TestCase):
    def test_longformer_computes_the_same_in_its_onnx_export_mode_and_is_restored(self):
        """Patched attempts trace Longformer in transformers' ONNX-export mode (its attention
        chunks by `unfold`); the graph is checked against the default mode's references, so the
        two must agree, and the config must go back to its default afterwards."""
        import transformers

        config = transformers.AutoConfig.for_model(
            "longformer", vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
            num_attention_heads=2, attention_window=8)
        torch.manual_seed(0)
        model = export.ready(export.instantiate(transformers.LongformerModel, config))
        ids = torch.randint(3, 64, (2, 13), generator=torch.Generator().manual_seed(0))
        with torch.no_grad():
            default = model(input_ids=ids).last_hidden_state
            with export.onnx_export_mode(model):
                self.assertTrue(model.config.onnx_export)
                chunked = model(input_ids=ids).last_hidden_state
        self.assertFalse(model.config.onnx_export)
        torch.testing.assert_close(chunked, default, atol=0, rtol=0)
        with export.onnx_export_mode(torch.nn.Sequential(torch.nn.Linear(2, 2))):
            pass  # a model without a config goes through unchanged (no module's `.config` is read)


class QuantizerSpeedupTest(unittest.TestCase):
    def test_the_speedups_write_the_same_qdq_graph(self):
        """`_rewiring_only_consumers` and `_calibrating_at_graph_end` change how long ONNX Runtime's
        QDQ quantizer takes, never what it writes."""
        import warnings

        import numpy as np

        model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.LayerNorm(16), torch.nn.Linear(16, 4)).eval()
        x = torch.randn(2, 8, generator=torch.Generator().manual_seed(0))
        written = []
        for speedup in (False, True):
            with tempfile.TemporaryDirectory() as tmp, warnings.catch_warnings():
                warnings.simplefilter("ignore")
                tmp = Path(tmp)
                (tmp / "inputs").mkdir()
                np.save(tmp / "inputs" / "x.npy", x.numpy())
                torch.onnx.export(model, (x,), str(tmp / "model.onnx"), dynamo=False, input_names=["x"], opset_version=17)
                with contextlib.ExitStack() as stack:
                    if not speedup:
                        for name in ("_rewiring_only_consumers", "_calibrating_at_graph_end"):
                            stack.enter_context(unittest.mock.patch.object(export, name, contextlib.nullcontext))
                    export.variant_qdq8(tmp, tmp / "model.qdq8.onnx")
                written.append((tmp / "model.qdq8.onnx").read_bytes())
        self.assertEqual(written[0], written[1])


class HalvesRotated(torch.nn.Module):
    """A rotary embedding's rotate_half between two linear layers and a softmax."""

    def __init__(self):
        super().__init__()
        self.inner, self.outer = torch.nn.Linear(8, 16), torch.nn.Linear(16, 4)

    def forward(self, x):
        h = self.inner(x)
        first, second = h[..., :8], h[..., 8:]
        return self.outer(torch.cat((-second, first), dim=-1).softmax(-1))


def graph_up_to_value_names(model) -> tuple:
    """A graph's nodes (op, attributes, inputs and outputs), weights and outputs, with each value
    named by the order it first appears in: two exports of one module compare equal where they
    compute the same, whatever torch.export numbered their values."""
    from onnx import numpy_helper

    names: dict[str, str] = {}

    def name(value: str) -> str:
        return names.setdefault(value, f"v{len(names)}") if value else ""

    graph = model.graph
    for value in graph.input:
        name(value.name)
    nodes = [(n.op_type, n.domain, tuple(map(name, n.input)), tuple(map(name, n.output)),
              tuple(a.SerializeToString() for a in n.attribute)) for n in graph.node]
    weights = sorted((names.get(t.name, ""), numpy_helper.to_array(t).tobytes(), tuple(t.dims), t.data_type) for t in graph.initializer)
    return nodes, weights, tuple(name(o.name) for o in graph.output)


class DynamoSpeedupsTest(unittest.TestCase):
    def test_the_speedups_export_the_same_graph(self):
        """`dynamo_speedups` changes how long a dynamo export takes, never the graph."""
        import warnings

        import onnx

        model = HalvesRotated().eval()
        x = torch.randn(2, 3, 8, generator=torch.Generator().manual_seed(0))
        graphs = []
        for speedup in (False, True):
            with export.dynamo_speedups() if speedup else contextlib.nullcontext(), warnings.catch_warnings():
                warnings.simplefilter("ignore")
                batch = torch.export.Dim.AUTO
                program = torch.onnx.export(model, (x,), dynamo=True, dynamic_shapes=({0: batch},), opset_version=18, external_data=False)
            graphs.append(onnx.load_from_string(program.model_proto.SerializeToString()))
        self.assertEqual(graph_up_to_value_names(graphs[0]), graph_up_to_value_names(graphs[1]))

    def test_the_matcher_still_finds_patterns_of_several_output_nodes(self):
        """The one such rule (SlicesSplit: two Slices of one tensor's halves, without steps, which
        torch.onnx's Slices always have) still fires, and only where it did."""
        import onnx
        import onnx_ir as ir
        import onnxscript.optimizer
        from onnx import TensorProto, helper

        def constant(name, value):
            return helper.make_node("Constant", [], [name], value=helper.make_tensor(name, TensorProto.INT64, [1], [value]))

        graph = helper.make_graph(
            [constant("zero", 0), constant("half", 8), constant("end", 16), constant("last", -1),
             helper.make_node("Relu", ["x"], ["h"]),
             # The second half's Slice first: the unpatched matcher tries the candidates for
             # the pattern's second Slice in graph order and stops at the first that matches
             # in structure, the first half's Slice itself, whose check then fails.
             helper.make_node("Slice", ["h", "half", "end", "last"], ["second"]),
             helper.make_node("Slice", ["h", "zero", "half", "last"], ["first"]),
             helper.make_node("Neg", ["second"], ["negated"]),
             helper.make_node("Concat", ["negated", "first"], ["y"], axis=-1)],
            "halves", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 16])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 16])])
        source = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
        optimized = []
        for speedup in (False, True):
            model = ir.serde.deserialize_model(source)
            with export._rules_tried_at_their_op() if speedup else contextlib.nullcontext():
                onnxscript.optimizer.optimize_ir(model)
            optimized.append(onnx.load_from_string(ir.serde.serialize_model(model).SerializeToString()))
        self.assertIn("Split", [n.op_type for n in optimized[1].graph.node])
        self.assertEqual(graph_up_to_value_names(optimized[0]), graph_up_to_value_names(optimized[1]))

    def test_each_export_gets_its_own_copy_of_the_registry_built_once(self):
        """The registry of torchlib's translations is built once per opset, and an export that
        registered a translation in its registry would not find it in the next one's."""
        from torch.onnx._internal.exporter import _registration

        fresh = _registration.ONNXRegistry.from_torchlib(opset_version=18)
        with export._torchlib_registry_built_once():
            first = _registration.ONNXRegistry.from_torchlib(opset_version=18)
            first.functions.pop("aten::add.Tensor")
            first.functions["aten::mul.Tensor"].clear()
            second = _registration.ONNXRegistry().from_torchlib(opset_version=18)
        self.assertEqual(second.opset_version, 18)
        self.assertEqual({k: len(v) for k, v in second.functions.items()}, {k: len(v) for k, v in fresh.functions.items()})


if __name__ == "__main__":
    unittest.main()
