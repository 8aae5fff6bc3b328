"""Unit tests of the generation exporter's helpers that need no real model.

    python -m unittest discover -s generator/importer/exporter -p 'test_*.py'   (tests/run.sh runs it)
"""

from __future__ import annotations

import sys
import types
import unittest
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import generation  # noqa: E402


class FeedAxesTest(unittest.TestCase):
    def test_token_ids_and_mask(self):
        self.assertEqual(generation.feed_axes("input_ids", torch.zeros(2, 6), torch.zeros(2, 1)), ["batch", "sequence"])
        self.assertEqual(generation.feed_axes("attention_mask", torch.zeros(2, 6), torch.zeros(2, 7)), ["batch", "total_sequence"])

    def test_embeddings_keep_their_width_fixed(self):
        self.assertEqual(generation.feed_axes("inputs_embeds", torch.zeros(2, 6, 32), torch.zeros(2, 1, 32)), ["batch", "sequence", ""])

    def test_multimodal_rope_positions_have_the_batch_second(self):
        self.assertEqual(generation.feed_axes("position_ids", torch.zeros(3, 2, 6), torch.zeros(3, 2, 1)), ["", "batch", "sequence"])

    def test_a_feed_that_changes_in_two_axes_is_refused(self):
        # a 4-D mask a model made itself: [batch, 1, query, key] grows in two axes
        with self.assertRaisesRegex(RuntimeError, "not one sequence axis"):
            generation.feed_axes("attention_mask", torch.zeros(2, 1, 6, 6), torch.zeros(2, 1, 1, 7))


class SpecialTokensTest(unittest.TestCase):
    def test_image_tokens_of_the_config_and_its_text_config_but_not_padding(self):
        text = types.SimpleNamespace(pad_token_id=0, eos_token_id=2, boi_token_index=9)
        config = types.SimpleNamespace(image_token_id=7, video_token_id=[8], pad_token_id=0, vision_config=None)
        config.get_text_config = lambda: text
        self.assertEqual(generation.special_token_ids(config), frozenset({7, 8, 9}))

    def test_prompts_leave_the_avoided_ids_out(self):
        config = types.SimpleNamespace(vocab_size=6, pad_token_id=0)
        config.get_text_config = lambda: config
        ids, mask, pad = generation.prompts(config, seed=0, left=True, avoid=frozenset({3, 4}))
        kept = ids[mask.bool()]
        self.assertTrue(((kept == 5)).all(), ids)
        self.assertEqual(mask.sum(dim=1).tolist(), list(generation.PROMPT_LENGTHS))


class DeclaredCacheTest(unittest.TestCase):
    AXES = ["batch", "", "past_sequence", ""]

    def flat(self, layers=2, parts=("key", "value")):
        return [{"name": f"past_key_values.{i}.{p}", "dtype": "float32", "axes": self.AXES} for i in range(layers) for p in parts]

    def test_layers_with_the_same_tensors_are_one_group(self):
        groups = generation.grouped_cache(self.flat())
        self.assertEqual(groups, [{"layers": [0, 1], "tensors": [{"name": "key", "dtype": "float32", "axes": self.AXES},
                                                                 {"name": "value", "dtype": "float32", "axes": self.AXES}]}])
        self.assertEqual(set(generation.flat_declared(groups)), {t["name"] for t in self.flat()})

    def test_an_encoder_decoders_two_caches_keep_their_parts_in_the_name(self):
        flat = self.flat(parts=("decoder.key", "decoder.value")) + self.flat(parts=("encoder.key", "encoder.value"))
        groups = generation.grouped_cache(flat)
        self.assertEqual([t["name"] for t in groups[0]["tensors"]], ["decoder.key", "decoder.value", "encoder.key", "encoder.value"])
        generation.check_declared(groups, flat)  # the same cache passes

    def test_the_model_must_hold_the_declared_cache(self):
        declared = generation.grouped_cache(self.flat())
        with self.assertRaisesRegex(RuntimeError, r"past_key_values.2.key: in the model's cache, not declared"):
            generation.check_declared(declared, self.flat(layers=3))
        moved = [dict(t, axes=["batch", "past_sequence", "", ""]) for t in self.flat()]
        with self.assertRaisesRegex(RuntimeError, r"declared float32 \['batch', '', 'past_sequence', ''\], the model's is float32 \['batch', 'past_sequence', '', ''\]"):
            generation.check_declared(declared, moved)
        with self.assertRaisesRegex(RuntimeError, "the spec declares no cache"):
            generation.check_declared(None, self.flat())


class StateCacheTest(unittest.TestCase):
    def test_states_kept_by_index_are_named_like_keys_and_values(self):
        self.assertEqual(generation.tensor_name("keys"), "key")
        self.assertEqual(generation.tensor_name("conv_states.0"), "conv_state")
        self.assertEqual(generation.tensor_name("recurrent_states.1"), "recurrent_state.1")

    def test_a_layer_keeps_its_states_in_dicts(self):
        layer = types.SimpleNamespace(conv_states={0: torch.zeros(2, 8, 4)}, recurrent_states={0: torch.zeros(2, 8, 16)},
                                      has_previous_state={0: True}, _private=torch.zeros(1))
        cache = types.SimpleNamespace(layers=[layer])
        layout = generation.cache_layout(cache)
        self.assertEqual(layout, [["conv_states.0", "recurrent_states.0"]])
        self.assertEqual(generation.cache_names(layout, "past_key_values"), ["past_key_values.0.conv_state", "past_key_values.0.recurrent_state"])
        self.assertEqual([t.shape[-1] for t in generation.flat_cache(cache, layout)], [4, 16])

    def test_a_state_keeps_its_size_and_a_key_grows(self):
        before = [torch.zeros(2, 4, 6, 8), torch.zeros(2, 8, 4)]
        after = [torch.zeros(2, 4, 7, 8), torch.zeros(2, 8, 4)]
        self.assertEqual(generation.grown_axes(before, after), [2, None])
        with self.assertRaisesRegex(RuntimeError, "neither a cache that grows"):
            generation.grown_axes([torch.zeros(2, 4)], [torch.zeros(3, 5)])

    def test_a_feed_of_the_prefill_only_is_named_by_the_prompts_width(self):
        width = max(generation.PROMPT_LENGTHS)
        self.assertEqual(generation.prompt_axes("attention_mask", torch.zeros(2, width), width), ["batch", "sequence"])
        with self.assertRaisesRegex(RuntimeError, "no axis of the prompt"):
            generation.prompt_axes("attention_mask", torch.zeros(2, width + 1), width)


class GraphCheckTest(unittest.TestCase):
    def test_each_graph_is_checked_on_the_steps_the_graphs_so_far_can_run(self):
        seq2seq = {"prologue": [{"graph": "encoder"}], "steps": [{"graph": "decoder"}] + [{"graph": "decoder_with_past"}] * 7}
        self.assertEqual(generation.steps_checking(seq2seq, {"encoder"}, "encoder"), 0, "no step runs without a decoder")
        self.assertEqual(generation.steps_checking(seq2seq, {"encoder", "decoder"}, "decoder"), 1)
        self.assertEqual(generation.steps_checking(seq2seq, {"encoder", "decoder", "decoder_with_past"}, "decoder_with_past"), 8)
        merged = {"prologue": [], "steps": [{"graph": "decoder"}] * 8}
        self.assertEqual(generation.steps_checking(merged, {"decoder"}, "decoder"), 8)


if __name__ == "__main__":
    unittest.main()
