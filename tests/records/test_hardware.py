"""Hardware classes: what a rerun queue serves and what evidence is decided per."""

from __future__ import annotations

import pytest

from records.sources.hardware import hardware_class, hardware_class_of


@pytest.mark.parametrize(
    ("product", "expected"),
    [
        ("NVIDIA H100 80GB HBM3", "nvidia-h100"),
        ("NVIDIA H100 PCIe", "nvidia-h100"),
        ("NVIDIA H200", "nvidia-h200"),
        ("NVIDIA H20", "nvidia-h20"),
        ("NVIDIA GH200 480GB", "nvidia-gh200"),
        ("NVIDIA B200", "nvidia-b200"),
        ("NVIDIA A800-SXM4-80GB", "nvidia-a800"),
        ("Tesla T4", "nvidia-t4"),
        ("AMD Instinct MI300X", "amd-mi300x"),
        ("CPU", "cpu"),
        ("Some New Accelerator 9", "some-new-accelerator-9"),
    ],
)
def test_products_map_to_one_class_per_model(product: str, expected: str) -> None:
    assert hardware_class_of(product) == expected


def test_an_explicit_class_wins_over_the_product() -> None:
    assert hardware_class({"vendor": "intel", "product": "Intel(R) Xeon(R) Platinum 8480C", "class": "cpu"}) == "cpu"
    assert hardware_class({"vendor": "nvidia", "product": "NVIDIA H100 80GB HBM3"}) == "nvidia-h100"
