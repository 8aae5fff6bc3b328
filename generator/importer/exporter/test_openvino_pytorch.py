"""openvino_pytorch.py's naming of the converted model's inputs and outputs, on stand-ins for
OpenVINO's ports (the exporter's venv, where the unit tests run, has no openvino)."""

import unittest

import openvino_pytorch


class Tensor:
    def __init__(self, names):
        self.names = set(names)

    def set_names(self, names):
        self.names = set(names)


class Port:
    def __init__(self, *names):
        self.tensor = Tensor(names)

    def get_tensor(self):
        return self.tensor


class Model:
    def __init__(self, inputs, outputs):
        self.inputs, self.outputs = inputs, outputs


META = {
    "inputs": [{"name": "input_ids"}, {"name": "attention_mask"}],
    "outputs": [{"name": "last_hidden_state"}],
}


class NamePorts(unittest.TestCase):
    def test_ports_take_the_spec_names_in_order(self):
        # The PyTorch frontend names inputs by TorchScript's arguments and outputs by value numbers.
        model = Model([Port("input_ids.1"), Port("attention_mask.1")], [Port("231", "hidden_states.1")])
        openvino_pytorch.name_ports(model, META)
        self.assertEqual([p.tensor.names for p in model.inputs], [{"input_ids"}, {"attention_mask"}])
        self.assertEqual([p.tensor.names for p in model.outputs], [{"last_hidden_state"}])

    def test_a_count_that_differs_is_the_conversion_error(self):
        model = Model([Port("input_ids.1")], [Port("231")])
        with self.assertRaisesRegex(ValueError, r"the converted model has 1 inputs, the fixture 2"):
            openvino_pytorch.name_ports(model, META)


if __name__ == "__main__":
    unittest.main()
