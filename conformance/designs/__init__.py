"""Design review: runs, counterexamples and the comparison report of the designs in `model.designs`."""
