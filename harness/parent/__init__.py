"""The parent's process: `python -m harness run` and the rerun worker.

It reads and checks the files, builds the job, starts the judge's, the kernel's and the reference's sandboxes
(harness.jail), watches them, and assembles the result (statistics, environment). It never imports torch.
"""
