"""The judge's process (`python -m harness.judge`): inputs, measurement, correctness, each case's result.

It runs in a sandbox of its own and reaches the two processes it serves only through the wire (harness.wire).
"""
