"""decoding.py's perplexity on logits whose probabilities are known by hand."""

import unittest

import numpy as np

from decoding import perplexity


class Perplexity(unittest.TestCase):
    def test_uniform_logits_give_the_vocabulary_size(self):
        # Every token equally likely among 50: a perplexity of 50, whatever the text.
        self.assertAlmostEqual(perplexity(np.zeros((6, 50)), [3, 1, 4, 1, 5, 9]), 50.0, places=9)

    def test_each_position_scores_the_next_token(self):
        # Position i puts e^2 of the weight on token i + 1 of the text, 1 on the other two:
        # each next token's probability is e^2 / (e^2 + 2).
        text = [0, 1, 2, 0]
        logits = np.zeros((4, 3))
        for i, token in enumerate(text[1:]):
            logits[i, token] = 2.0
        expected = (np.exp(2.0) + 2) / np.exp(2.0)
        self.assertAlmostEqual(perplexity(logits, text), expected, places=9)

    def test_a_non_finite_logit_gives_no_perplexity(self):
        logits = np.zeros((3, 4))
        logits[1, 2] = np.nan
        self.assertIsNone(perplexity(logits, [0, 1, 2]))


if __name__ == "__main__":
    unittest.main()
