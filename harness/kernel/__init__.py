"""The kernel's process (`python -m harness.kernel`): one solution served, the kernel under test or the reference.

Untrusted code runs here, so this side imports only itself and the wire (harness.wire), never the parent, the
jail or the judge: tests/harness/test_layout.py says so.
"""
