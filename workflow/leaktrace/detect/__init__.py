"""Membership / leakage detectors. One module per method; ``registry`` lists them."""
