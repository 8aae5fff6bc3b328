"""transformersjs_formats.py on a one-MatMul graph and on one without a MatMul weight: the
formats it makes run in ONNX Runtime and stay near float32, and a graph with nothing to
quantize gets the quantizer's error, not a float32 copy under the format's name."""

import json
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = Path(__file__).resolve().parent


def graph(with_weight: bool) -> onnx.ModelProto:
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 64])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 64])
    if with_weight:
        weight = np.random.default_rng(0).standard_normal((64, 64)).astype(np.float32)
        nodes = [helper.make_node("MatMul", ["x", "w"], ["y"])]
        inits = [numpy_helper.from_array(weight, "w")]
    else:
        nodes, inits = [helper.make_node("Relu", ["x"], ["y"])], []
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y], inits), opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 9
    return model


class TransformersJsFormats(unittest.TestCase):
    def run_script(self, with_weight: bool) -> tuple[Path, dict]:
        fixture = Path(self.enterContext(tempfile.TemporaryDirectory())) / "m"
        fixture.mkdir()
        onnx.save(graph(with_weight), str(fixture / "model.onnx"))
        (fixture / "meta.json").write_text(json.dumps({"cache_key": "k1"}))
        jobs = fixture.parent / "jobs.json"
        jobs.write_text(json.dumps({"key": "script-1", "dirs": [str(fixture)]}))
        done = subprocess.run([sys.executable, str(HERE / "transformersjs_formats.py"), str(jobs)],
                              capture_output=True, text=True, check=True)
        self.assertEqual(json.loads(done.stdout.splitlines()[-1])["dir"], str(fixture))
        return fixture, json.loads((fixture / "transformersjs.json").read_text())

    def test_both_formats_run_near_float32(self):
        import onnxruntime as ort

        fixture, record = self.run_script(with_weight=True)
        self.assertEqual((record["key"], record["fixture_key"]), ("script-1", "k1"))
        x = np.random.default_rng(1).standard_normal((2, 64)).astype(np.float32)
        run = lambda name: ort.InferenceSession(str(fixture / name), providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
        reference = run("model.onnx")
        for name, op in (("bnb4", "MatMulBnb4"), ("q2", "MatMulNBits"), ("q2f16", "MatMulNBits")):
            self.assertEqual(record[name]["file"], f"model.{name}.onnx", record[name])
            ops = {n.op_type for n in onnx.load(str(fixture / record[name]["file"])).graph.node}
            self.assertIn(op, ops)
            if name == "q2f16":
                # float16 inside, float32 at the edges (keep_io_types): Casts at the inputs.
                self.assertIn("Cast", ops)
            got = run(record[name]["file"])
            cosine = float((got * reference).sum() / np.linalg.norm(got) / np.linalg.norm(reference))
            self.assertGreater(cosine, 0.8, name)

    def test_a_graph_without_matmul_weights_gets_the_quantizers_error(self):
        fixture, record = self.run_script(with_weight=False)
        # q2f16 converts q2, so it gives q2's reason (which the runtime reads as does-not-apply).
        self.assertIn("no q2 model to convert", record["q2f16"]["error"])
        for name in ("bnb4", "q2", "q2f16"):
            self.assertIn("quantized no node", record[name]["error"])
            self.assertFalse((fixture / f"model.{name}.onnx").exists())


if __name__ == "__main__":
    unittest.main()
