"""optimum_graph.py's first-step cache: a decoder exported with its cache (optimum's
`-with-past` graph, as transformers.js ships it) is fed an empty past of the graph's own
layout, and a size the first step does not fix is refused with its name."""

import unittest

from onnx import TensorProto, helper

import optimum_graph


def cache_input(dims: list) -> object:
    return helper.make_tensor_value_info("past_key_values.0.key", TensorProto.FLOAT, dims)


class EmptyCache(unittest.TestCase):
    def test_the_past_is_empty_in_the_graphs_layout(self):
        tensor = optimum_graph._empty_cache("past_key_values.0.key",
                                            cache_input(["batch_size", 2, "past_sequence_length", 8]), 3)
        self.assertEqual(tuple(tensor.shape), (3, 2, 0, 8))
        self.assertEqual(str(tensor.dtype), "torch.float32")

    def test_a_size_the_first_step_does_not_fix_is_refused(self):
        with self.assertRaisesRegex(ValueError, "past_key_values.0.key has a size 'num_heads'"):
            optimum_graph._empty_cache("past_key_values.0.key", cache_input(["batch_size", "num_heads", "past_sequence_length", 8]), 3)


if __name__ == "__main__":
    unittest.main()
