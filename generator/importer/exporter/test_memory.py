"""memory.py's rules on a module whose bytes are counted by hand, and its build on the meta device."""

import unittest

import torch

import memory


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(10, 4)  # 40 embedding parameters, 10 rows
        self.proj = torch.nn.Linear(4, 64)  # 256 matrix-product parameters, 64 outputs; 64 biases
        self.norm = torch.nn.LayerNorm(4)  # 4 other, 4 biases
        self.conv = torch.nn.Conv2d(1, 2, 3, bias=False)  # 18 convolution parameters, 2 outputs
        self.head = torch.nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied, as language models tie their head: counted once


class MemoryRulesTest(unittest.TestCase):
    def test_each_kind_of_parameter_is_counted_once(self):
        with torch.device("meta"):
            model = Small()
        kinds = memory.parameter_kinds(model)
        counted = {kind: sum(n for n, _ in values) for kind, values in kinds.items()}
        self.assertEqual(counted, {"embedding": 40, "matmul": 256, "conv": 18, "bias": 68, "other": 4})

    def test_the_formats_bytes_follow_their_converters_rules(self):
        kinds = {"embedding": [(40, (10, 4))], "matmul": [(256, (64, 4))], "conv": [(18, (2, 1, 3, 3))],
                 "bias": [(68, (68,))], "other": [(4, (4,))]}
        weights = memory.weight_bytes(kinds)
        total = 40 + 256 + 18 + 68 + 4
        self.assertEqual(weights["fp32"], 4 * total)
        self.assertEqual(weights["fp16"], 2 * total)
        # int8: 1 byte each plus a float32 scale and an int8 zero point per output channel.
        self.assertEqual(weights["int8"], (40 + 5 * 10) + (256 + 5 * 64) + (18 + 5 * 2) + 4 * (68 + 4))
        # q4: matrix products in half a byte and a float32 scale per block of 32; the rest float32.
        self.assertEqual(weights["q4"], 128 + 8 * 4 + 4 * (40 + 18 + 68 + 4))
        self.assertEqual(weights["q4f16"], 128 + 8 * 2 + 2 * (40 + 18 + 68 + 4))
        # qdq8: every weight a byte and its scale and zero point; biases int32.
        self.assertEqual(weights["qdq8"], (40 + 5) + (256 + 5) + (18 + 5) + (4 + 5) + 4 * 68)
        # nncf_int8: 1 byte each plus a float16 scale and a uint8 zero point per output channel.
        self.assertEqual(weights["nncf_int8"], (40 + 3 * 10) + (256 + 3 * 64) + (18 + 3 * 2) + 4 * (68 + 4))
        # nncf_int4: the only matrix product is the last, which NNCF keeps in int8.
        self.assertEqual(weights["nncf_int4"], weights["nncf_int8"])

    def test_nncf_int4_keeps_the_last_matrix_product_in_int8(self):
        kinds = {"embedding": [(40, (10, 4))], "matmul": [(512, (4, 128)), (256, (2, 128))], "other": [(4, (4,))]}
        weights = memory.weight_bytes(kinds)
        # 4 bits and, per group of 128, a float16 scale and a 4-bit zero point; then the head
        # and the embedding in int8 with a float16 scale and a uint8 zero point per row.
        self.assertEqual(weights["nncf_int4"], (256 + 4 * 2.5) + (256 + 3 * 2) + (40 + 3 * 10) + 4 * 4)

    def test_a_default_configuration_builds_without_memory(self):
        result = memory.compute({"spec": {"model_type": "bert", "export": {"class": "BertModel"}}})
        self.assertEqual(result["parameters"]["total"], 109_482_240)  # bert-base-uncased's size
        self.assertEqual(result["weights"]["fp32"], 4 * 109_482_240)
        self.assertIn("defaults", result["source"])


if __name__ == "__main__":
    unittest.main()
