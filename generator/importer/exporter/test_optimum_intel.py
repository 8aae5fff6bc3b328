"""optimum_intel.py's fitting of position_ids, on real OpenVINO models in OpenVINO's runtime venv
(`bash tests/setup.sh openvino`; the exporter's venv, where the unit tests run, has no
openvino): an IR that takes position_ids the fixture lacks computes them as 0..length, and one
that lacks those the fixture feeds takes them unread; what it computes is otherwise unchanged."""

import os
import subprocess
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
CACHE = Path(os.environ.get("HWMATRIX_CACHE", Path.home() / ".cache" / "hwmatrix"))
OPENVINO_PYTHON = CACHE / "venv-openvino-runtime" / "bin" / "python"

SCRIPT = r'''
import numpy as np
import openvino as ov
from openvino import opset13 as ops

import optimum_intel

def model(with_positions):
    ids = ops.parameter([-1, -1], ov.Type.i64, name="input_ids")
    ids.output(0).get_tensor().set_names({"input_ids"})
    params = [ids]
    out = ops.convert(ids, "f32")
    if with_positions:
        pos = ops.parameter([-1, -1], ov.Type.i64, name="position_ids")
        pos.output(0).get_tensor().set_names({"position_ids"})
        params.append(pos)
        out = ops.add(out, ops.multiply(ops.convert(pos, "f32"), ops.constant(np.float32(1000))))
    return ov.Model([out], params, "m")

ids = np.array([[5, 6, 7], [8, 9, 10]], dtype=np.int64)
m = model(True)
note = optimum_intel.fit_position_ids(ov, m, {"input_ids"})
print(sorted(n for p in m.inputs for n in p.get_names()), note)
print(ov.Core().compile_model(m, "CPU")({"input_ids": ids})[0].tolist())
m = model(False)
note = optimum_intel.fit_position_ids(ov, m, {"input_ids", "position_ids"})
print(sorted(n for p in m.inputs for n in p.get_names()), note)
print(ov.Core().compile_model(m, "CPU")({"input_ids": ids, "position_ids": ids})[0].tolist())
m = model(True)
print(repr(optimum_intel.fit_position_ids(ov, m, {"input_ids", "position_ids"})))
'''


@unittest.skipUnless(OPENVINO_PYTHON.is_file(), f"no OpenVINO runtime venv at {OPENVINO_PYTHON} (bash tests/setup.sh openvino)")
class FitPositionIds(unittest.TestCase):
    def test_position_ids_fitted_to_the_fixture(self):
        run = subprocess.run([str(OPENVINO_PYTHON), "-c", SCRIPT], cwd=HERE, capture_output=True, text=True,
                             env={**os.environ, "PYTHONPATH": str(HERE)})
        self.assertEqual(run.returncode, 0, run.stderr)
        lines = run.stdout.strip().splitlines()
        self.assertEqual(lines[0], "['input_ids'] ; its position_ids computed as 0..length, which the fixture does not feed")
        # input_ids + 1000 * position: the positions are 0, 1, 2 in each row.
        self.assertEqual(lines[1], "[[5.0, 1006.0, 2007.0], [8.0, 1009.0, 2010.0]]")
        self.assertEqual(lines[2], "['input_ids', 'position_ids'] ; position_ids, which the fixture feeds, taken and not read")
        self.assertEqual(lines[3], "[[5.0, 6.0, 7.0], [8.0, 9.0, 10.0]]")
        # Where both take them, nothing is fitted.
        self.assertEqual(lines[4], "''")


if __name__ == "__main__":
    unittest.main()
