"""Unit tests of the generation exporter's helpers that need no real model.

    python -m unittest discover -s runtime/exporter -p 'test_*.py'   (tests/run.sh runs it)
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


if __name__ == "__main__":
    unittest.main()
