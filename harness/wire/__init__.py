"""What passes between the harness's processes, and the few helpers every side needs.

The kernel's process imports only this and its own subpackage: nothing here imports another harness subpackage.
"""
