"""``convledger-conformance diff``: the store under test against the reference, frame by frame.

A disagreement is a lead, not a verdict: the spec decides which side is right.
"""
