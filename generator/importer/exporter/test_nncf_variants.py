"""nncf_variants.py's count of what NNCF compressed, on stand-ins for OpenVINO's ops (the
exporter's venv, where the unit tests run, has neither openvino nor nncf)."""

import unittest

import nncf_variants


class Type:
    def __init__(self, name):
        self.name = name

    def get_type_name(self):
        return self.name


class Op:
    def __init__(self, kind, name, element_type="f32", shape=()):
        self.kind, self.name, self.element_type, self.shape = kind, name, element_type, shape

    def get_type_name(self):
        return self.kind

    def get_friendly_name(self):
        return self.name

    def get_element_type(self):
        return Type(self.element_type)

    def get_output_shape(self, index):
        return self.shape


class Model:
    def __init__(self, ops):
        self.ops = ops

    def get_ops(self):
        return self.ops


class CompressedWeights(unittest.TestCase):
    def test_counts_weights_not_zero_points_nor_other_constants(self):
        model = Model([
            Op("Constant", "q_proj", "u4", (64, 2, 32)),
            Op("Constant", "q_proj/zero_point", "u4", (64, 2, 1)),
            Op("Constant", "k_proj", "u4", (64, 1, 64)),
            Op("Constant", "embed_tokens", "u8", (1024, 64)),
            Op("Constant", "embed_tokens/zero_point", "u8", (1024, 1)),
            Op("Constant", "shape", "i64", (3,)),
            Op("MatMul", "matmul", "f32", (1, 8, 64)),
        ])
        self.assertEqual(
            nncf_variants.compressed_weights(model),
            {"int4": 2, "int8": 1, "int4_group_sizes": [32, 64]},
        )


if __name__ == "__main__":
    unittest.main()
