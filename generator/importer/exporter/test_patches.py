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

    def test_cummax_cummin(self):
        ints = torch.randint(0, 4, (3, 9), generator=self.gen)  # many ties: the indices must pick the last
        for x in (ints, self.randn(2, 7, 3)):
            for dim in (0, 1, -1):
                for mine, theirs in ((patches.cummax, torch.cummax), (patches.cummin, torch.cummin)):
                    got, want = mine(x, dim), theirs(x, dim)
                    self.assertTrue(torch.equal(got.values, want.values) and torch.equal(got.indices, want.indices),
                                    f"{theirs.__name__} over dim {dim} of {x.dtype}")

    def test_complex_rotary(self):
        """Llama 4's and DeepSeek-V2's rotary embedding, and a per-axis table joined with cat,
        in Complex parts against complex PyTorch."""
        xq, freqs = self.randn(1, 5, 2, 8), self.randn(1, 5, 4)

        def rotary(x, freqs):
            table = torch.polar(torch.ones_like(freqs), freqs) * 0.7
            table = torch.cat([table[..., :2], table[..., 2:]], -1).to(torch.complex64)
            rotated = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2)) * table[:, :, None, :]
            return torch.view_as_real(rotated).flatten(3)

        want = rotary(xq, freqs)
        with patches.applied(18):
            got = rotary(xq, freqs)
            self.assertEqual(patches.used(), {"complex_polar", "complex_view", "complex_as_real", "complex_cat"})
        torch.testing.assert_close(got, want)
        self.assertTrue(torch.cat([xq, xq]).is_contiguous())  # torch.cat is torch's again

    def test_complex_attributes(self):
        """A cached complex table becomes Complex parts inside the block and is restored after it."""
        class Rope:  # a plain helper object, as Z-Image's RopeEmbedder
            def __init__(self):
                self.table = [torch.polar(torch.ones(3), torch.arange(3.0))]

        module = torch.nn.Module()
        module.rope = Rope()
        module.angles = torch.polar(torch.ones(2), torch.ones(2))
        with self.assertRaises(ZeroDivisionError), patches.complex_attributes(module):
            self.assertIsInstance(module.angles, patches.Complex)
            torch.testing.assert_close(module.rope.table[0].imag, torch.sin(torch.arange(3.0)))
            1 / 0
        self.assertTrue(module.angles.is_complex() and module.rope.table[0].is_complex())

    def test_selective_scan(self):
        """The closed-form scan against transformers' own recurrence, and the legacy graph of it
        on a sequence length other than the one it was traced on."""
        import io

        import onnxruntime
        from transformers.models.mamba import modeling_mamba

        batch, channels, length, state = 2, 6, 9, 4
        x, dt, z = self.randn(batch, channels, length), self.randn(batch, channels, length), self.randn(batch, channels, length)
        A = -torch.rand(channels, state, generator=self.gen) * 2
        B, C = self.randn(batch, state, length), self.randn(batch, state, length)
        D, bias = self.randn(channels), self.randn(channels)
        options = dict(D=D, z=z, delta_bias=bias, delta_softplus=True, return_last_state=True)
        for got, want in zip(patches.selective_scan(x, dt, A, B, C, **options), modeling_mamba.mamba_selective_scan(x, dt, A, B, C, **options)):
            torch.testing.assert_close(got, want)
        torch.testing.assert_close(patches.selective_scan(x, dt.exp(), A, B, C), modeling_mamba.mamba_selective_scan(x, dt.exp(), A, B, C))

        class Scan(torch.nn.Module):
            def forward(self, x, dt, B, C):
                return patches.selective_scan(x, dt, A, B, C, D=D, delta_softplus=True)

        buffer, names = io.BytesIO(), ["x", "dt", "B", "C"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Scan(), (x, dt, B, C), buffer, dynamo=False, opset_version=18, input_names=names,
                              dynamic_axes={n: {2: "length"} for n in names})
        session = onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
        shorter = [t[:, :, :5].contiguous() for t in (x, dt, B, C)]
        got = session.run(None, {n: t.numpy() for n, t in zip(names, shorter)})[0]
        np.testing.assert_allclose(got, Scan()(*shorter).numpy(), rtol=1e-4, atol=1e-5)

    def test_rnn_scan(self):
        """RecurrentGemma's recurrence in closed form against its loop, with a document boundary
        inside the sequence and with an initial state."""
        from transformers.models.recurrent_gemma.modeling_recurrent_gemma import RecurrentGemmaRglru

        x, gate = self.randn(2, 7, 5), torch.rand(2, 7, 5, generator=self.gen)
        reset = torch.zeros(2, 7, 1, dtype=torch.bool)
        reset[:, 0], reset[1, 4] = True, True
        for reset, initial in ((reset, None), (torch.zeros_like(reset), self.randn(2, 5))):
            for got, want in zip(patches.rnn_scan(None, x, gate, reset, initial), RecurrentGemmaRglru._rnn_scan(None, x, gate, reset, initial)):
                torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)

    def test_rwkv_attention(self):
        """RWKV's WKV as a masked softmax against its loop: the output and the loop's final state."""
        from transformers.models.rwkv import modeling_rwkv

        decay, first = self.randn(5), self.randn(5)
        key, value = self.randn(2, 7, 5) * 3, self.randn(2, 7, 5)
        got, got_state = patches.rwkv_linear_attention_cpu(decay, first, key, value, return_state=True)
        want, want_state = modeling_rwkv.rwkv_linear_attention_cpu(decay, first, key, value, return_state=True)
        torch.testing.assert_close(got, want)
        for g, w in zip(got_state, want_state):
            torch.testing.assert_close(g, w)

    def test_unfold(self):
        """Sliding windows as a gather against `Tensor.unfold`: overlapping (BLT's, Inkling's),
        side by side (Idefics2's patches), a negative dimension, a window as long as the axis."""
        x = self.randn(2, 7, 9)
        for dimension, size, step in ((1, 3, 1), (2, 3, 3), (-1, 2, 1), (1, 7, 1), (2, 4, 2), (0, 1, 1)):
            torch.testing.assert_close(patches.unfold(x, dimension, size, step), x.unfold(dimension, size, step))
        with patches.applied(18):
            x.unfold(1, 3, 1)
            self.assertEqual(patches.used(), {"unfold"})
        self.assertIs(torch.Tensor.unfold, torch._C.TensorBase.unfold)

    def test_full_integer_dtype(self):
        """`torch.full` with an integer or boolean fill and no dtype: the dtype PyTorch infers,
        written out; every other call is PyTorch's own, uncounted."""
        with patches.applied(18):
            for fill, dtype in ((0, torch.int64), (True, torch.bool), (1.5, torch.float32)):
                self.assertEqual(torch.full((2, 3), fill).dtype, dtype)
            self.assertEqual(patches.used(), {"full_integer_dtype"})
            patches._called.clear()
            self.assertEqual(torch.full((2,), 3, dtype=torch.int32).dtype, torch.int32)
            self.assertEqual(patches.used(), set())

    def test_bool_scalar_as_int(self):
        """Fills given as Python bools (scatter, masked_fill, full_like), as ints or as logic on
        bool tensors, against PyTorch's own; and the legacy graph of them, run by ONNX Runtime
        (bool fills stop the legacy exporter at an internal assertion without the patch)."""
        import io

        import onnxruntime

        class Fills(torch.nn.Module):
            def forward(self, flags, index, x):
                return (flags.scatter(1, index, True), flags.masked_fill(x > 0, True), flags.masked_fill(x > 0, False),
                        x.masked_fill(x > 0, True), torch.full_like(flags, False), torch.full_like(x, fill_value=True))

        inputs = (torch.rand(2, 5, generator=self.gen) > 0.5, torch.tensor([[1], [3]]), self.randn(2, 5))
        want = Fills()(*inputs)
        with patches.applied(18):
            got = Fills()(*inputs)
            self.assertEqual(patches.used(), {"bool_scalar_as_int"})
        for g, w in zip(got, want):
            self.assertEqual(g.dtype, w.dtype)
            torch.testing.assert_close(g, w)
        buffer, names = io.BytesIO(), ["flags", "index", "x"]
        with patches.applied(18), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Fills(), inputs, buffer, dynamo=False, opset_version=18, input_names=names)
        session = onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
        for g, w in zip(session.run(None, {n: t.numpy() for n, t in zip(names, inputs)}), want):
            np.testing.assert_array_equal(g, w.numpy())

    def test_mimi_conv1d_padding(self):
        """Mimi's convolutions padded in integers against their buffer arithmetic, causal or not,
        strided and dilated, on every length up to three strides; and the dynamo graph of one,
        traced on one length, on others (a floor division ONNX's Div would truncate shows here)."""
        import io

        import onnxruntime
        from transformers import MimiConfig
        from transformers.models.mimi.modeling_mimi import MimiConv1d

        for causal, pad_mode in ((True, "constant"), (False, "reflect")):
            config = MimiConfig(use_causal_conv=causal, pad_mode=pad_mode)
            for kernel, stride, dilation in ((7, 1, 1), (4, 2, 1), (8, 4, 1), (3, 1, 3), (5, 5, 1)):
                conv = MimiConv1d(config, 3, 2, kernel, stride=stride, dilation=dilation).eval()
                for length in range(1, 3 * stride + kernel + 2):
                    x = self.randn(2, 3, length)
                    with torch.no_grad():
                        want = MimiConv1d.forward(conv, x)
                        with patches.applied(18):
                            got = conv(x)
                            self.assertEqual(patches.used(), {"mimi_conv1d_padding"})
                    torch.testing.assert_close(got, want, msg=f"causal {causal}, kernel {kernel}, stride {stride}, length {length}")

        conv = MimiConv1d(MimiConfig(), 3, 2, 8, stride=4).eval()
        buffer = io.BytesIO()
        with torch.no_grad(), patches.applied(18), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            length = torch.export.Dim("length", min=2)
            program = torch.onnx.export(conv, (self.randn(1, 3, 37),), dynamo=True, dynamic_shapes=({2: length},),
                                        input_names=["x"], opset_version=18, external_data=False, verbose=False)
        buffer.write(program.model_proto.SerializeToString())
        session = onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
        for length in (9, 30, 37, 41):
            x = self.randn(1, 3, length)
            np.testing.assert_allclose(session.run(None, {"x": x.numpy()})[0], conv(x).detach().numpy(), rtol=1e-5, atol=1e-6)

    def test_symbolics(self):
        """The legacy-exporter symbolics (integer `|` and `|=`, rad2deg, deg2rad), run by ONNX
        Runtime, against PyTorch."""
        import io

        import onnxruntime

        class Ops(torch.nn.Module):
            def forward(self, ids, angles):
                mask = ids | (ids + 1)
                mask |= torch.ones_like(ids)
                return mask, torch.rad2deg(angles), torch.deg2rad(angles), (ids > 2) | (ids < 1)

        inputs = (torch.randint(0, 5, (2, 6), generator=self.gen), self.randn(2, 3))
        buffer = io.BytesIO()
        with patches.applied(18), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Ops(), inputs, buffer, dynamo=False, opset_version=18, input_names=["ids", "angles"])
            self.assertEqual(patches.used(), {"integer_or", "integer_or_in_place", "rad2deg", "deg2rad"})
        session = onnxruntime.InferenceSession(buffer.getvalue(), providers=["CPUExecutionProvider"])
        got = session.run(None, {"ids": inputs[0].numpy(), "angles": inputs[1].numpy()})
        for g, w in zip(got, Ops()(*inputs)):
            np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)

    def test_applied_restores_torch(self):
        before = (torch.isin, torch.diff, torch.linalg.solve_triangular, torch.nn.functional.rms_norm, torch.rms_norm)
        with self.assertRaises(ZeroDivisionError), patches.applied(18):
            torch.isin(torch.tensor([1, 2]), torch.tensor([2]))
            self.assertEqual(patches.used(), {"isin"})
            1 / 0
        self.assertEqual(before, (torch.isin, torch.diff, torch.linalg.solve_triangular, torch.nn.functional.rms_norm, torch.rms_norm))

    def test_applied_restores_the_exporter(self):
        """After a patched export, an op torch.onnx has no symbolic for fails as it did before
        (not with the empty registry entry `unregister_custom_op_symbolic` leaves behind)."""
        import io

        class Degrees(torch.nn.Module):
            def forward(self, x):
                return torch.rad2deg(x)

        with patches.applied(18):
            pass
        with self.assertRaisesRegex(Exception, "aten::rad2deg' to ONNX opset version 18 is not supported"), \
                warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(Degrees(), (self.randn(3),), io.BytesIO(), dynamo=False, opset_version=18)

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
