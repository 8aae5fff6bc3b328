"""Each minimal reproduction of repros.py still fails as the architectures it stands for do:
one that exports now means the torch upgrade fixed it (retry those architectures' export with
`gen derive --model ...`, and drop the reproduction)."""

from __future__ import annotations

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import repros  # noqa: E402


class ReproTest(unittest.TestCase):
    def test_each_reproduction_still_fails_the_same_way(self):
        for repro in repros.REPROS:
            with self.subTest(repro.name):
                error = repros.reproduce(repro)
                self.assertIn(repro.error, error, f"{repro.name} no longer fails with {repro.error!r}: {error or 'it exports and matches'}")
                self.assertTrue(error)


if __name__ == "__main__":
    unittest.main()
