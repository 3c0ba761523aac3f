"""Form data for the attestation tests."""

from __future__ import annotations


def note_data(**fields: str) -> dict[str, str]:
    """A valid reproduction as the form posts it, with `fields` overriding."""
    data = {
        "kind": "reproduction",
        "outcome": "reproduced",
        "latency_value": "181.2",
        "latency_unit": "us",
        "gpu": "NVIDIA H100 80GB HBM3",
        "body": "Ran the submission with the SOL-ExecBench harness, 100 iterations.",
        "author_name": "Ada",
        "contact_email": "ada@example.org",
        "website": "",
    } | fields
    return {f"note-{name}": value for name, value in data.items()}


def report_data(**fields: str) -> dict[str, str]:
    data = {"category": "wrong_numbers", "body": "The latency is 10× the board's.", "contact": "", "website": ""}
    return {f"report-{name}": value for name, value in (data | fields).items()}
