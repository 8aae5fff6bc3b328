"""Each export patch against the function it replaces, in PyTorch (patches.py): a patch that
changed what a model computes would fail here before any fixture is exported with it."""

from __future__ import annotations

import sys
import unittest
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import patches  # noqa: E402


class PatchEquivalenceTest(unittest.TestCase):
    def setUp(self):
        self.gen = torch.Generator().manual_seed(0)

    def randn(self, *shape):
        return torch.randn(*shape, generator=self.gen)

    def test_rms_norm(self):
        x, w = self.randn(2, 5, 16), self.randn(16)
        for eps in (None, 1e-6):
            torch.testing.assert_close(patches.rms_norm(x, (16,), w, eps), torch.nn.functional.rms_norm(x, (16,), w, eps))
        torch.testing.assert_close(patches.rms_norm(x, (5, 16)), torch.nn.functional.rms_norm(x, (5, 16)))

    def test_isin(self):
        ids = torch.randint(0, 10, (3, 7), generator=self.gen)
        for test in (torch.tensor([1, 4, 9]), torch.tensor(4), [2, 3]):
            for invert in (False, True):
                self.assertTrue(torch.equal(patches.isin(ids, test, invert=invert), torch.isin(ids, torch.as_tensor(test), invert=invert)))

    def test_diff(self):
        x = self.randn(3, 6, 4)
        for dim in (0, 1, -1):
            for n in (1, 2):
                torch.testing.assert_close(patches.diff(x, n, dim), torch.diff(x, n, dim))
        pre, post = self.randn(3, 1, 4), self.randn(3, 2, 4)
        torch.testing.assert_close(patches.diff(x, dim=1, prepend=pre, append=post), torch.diff(x, dim=1, prepend=pre, append=post))
        mask = torch.rand(4, 9, generator=self.gen) > 0.5
        self.assertTrue(torch.equal(patches.diff(mask), torch.diff(mask)))

    def test_solve_triangular(self):
        a = self.randn(2, 3, 8, 8) + 8 * torch.eye(8)
        b = self.randn(2, 3, 8, 5)
        for upper in (False, True):
            for unit in (False, True):
                tri = a.triu() if upper else a.tril()
                torch.testing.assert_close(
                    patches.solve_triangular(tri, b, upper=upper, unitriangular=unit),
                    torch.linalg.solve_triangular(tri, b, upper=upper, unitriangular=unit), rtol=1e-4, atol=1e-5)

    def test_applied_restores_torch(self):
        before = (torch.isin, torch.diff, torch.linalg.solve_triangular, torch.nn.functional.rms_norm, torch.rms_norm)
        with self.assertRaises(ZeroDivisionError), patches.applied(18):
            torch.isin(torch.tensor([1, 2]), torch.tensor([2]))
            self.assertEqual(patches.used(), {"isin"})
            1 / 0
        self.assertEqual(before, (torch.isin, torch.diff, torch.linalg.solve_triangular, torch.nn.functional.rms_norm, torch.rms_norm))

    def test_antialiased_resize(self):
        """The legacy exporter's Resize with antialias, run by ONNX Runtime, against PyTorch."""
        import tempfile

        import onnxruntime

        for mode, size in [("bilinear", (5, 3)), ("bicubic", (5, 3)), ("bilinear", (20, 15))]:
            class Resize(torch.nn.Module):
                def forward(self, x):
                    return torch.nn.functional.interpolate(x, size=size, mode=mode, align_corners=False, antialias=True)

            x = self.randn(1, 2, 16, 11)
            with tempfile.TemporaryDirectory() as tmp, patches.applied(18), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the legacy exporter's deprecation notice
                path = f"{tmp}/resize.onnx"
                torch.onnx.export(Resize(), (x,), path, dynamo=False, opset_version=18, input_names=["x"])
                got = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"]).run(None, {"x": x.numpy()})[0]
            np.testing.assert_allclose(got, Resize()(x).numpy(), rtol=1e-4, atol=1e-5, err_msg=f"{mode} to {size}")


if __name__ == "__main__":
    unittest.main()
