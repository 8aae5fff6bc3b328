"""checkpoints.py's range evidence on a module whose activations are known by hand."""

import math
import unittest

import torch

import checkpoints


class Scaled(torch.nn.Module):
    """x -> 300 x (a linear layer) -> RMSNorm: the norm's input is 300 times the input."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(2, 2, bias=False)
        self.up.weight.data = torch.eye(2) * 300
        self.norm = torch.nn.RMSNorm(2)

    def forward(self, input_ids):  # named as a language model's input, as checkpoints.py calls it
        return self.norm(self.up(input_ids))


class RangesTest(unittest.TestCase):
    def test_outputs_and_the_squares_a_norm_sums_are_measured(self):
        seen = dict(checkpoints.largest_activations(Scaled(), torch.tensor([[1.0, -2.0]])))
        self.assertEqual(seen["up"], 600.0)
        # The norm's input reaches 600: its sum of squares needs 360,000, beyond float16's 65504.
        self.assertEqual(seen["norm:input²"], 360000.0)
        self.assertGreater(seen["norm:input²"], checkpoints.FLOAT16_MAX)
        self.assertAlmostEqual(seen["norm"], math.sqrt(2 * 4 / 5), places=3)

    def test_a_non_finite_output_is_infinite_and_runs_merge_by_their_largest(self):
        self.assertEqual(checkpoints.largest(torch.tensor([1.0, float("nan")])), math.inf)
        self.assertIsNone(checkpoints.largest(torch.tensor([1, 2])))
        merged = checkpoints.widest([[("a", 1.0), ("b", 5.0)], [("b", 2.0), ("a", 3.0), ("c", 0.5)]])
        self.assertEqual(merged, [("a", 3.0), ("b", 5.0), ("c", 0.5)])


if __name__ == "__main__":
    unittest.main()
