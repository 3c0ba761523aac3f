"""Hardware classes: what a rerun queue serves and what evidence is decided per."""

from __future__ import annotations

import pytest

from records.hardware import (
    CLASSES,
    HARDWARE_CLASSES,
    UnknownHardwareClassError,
    hardware_class,
    hardware_class_named,
    hardware_class_of,
)


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
        # A CPU's class names its model, as a GPU's names the product: speedups move between CPU models as they
        # do between GPUs. A run that names no model is of the class "cpu".
        ("CPU", "cpu"),
        ("Intel(R) Xeon(R) Processor", "cpu-intel-xeon"),
        ("AMD EPYC 7B13 64-Core Processor", "cpu-amd-epyc-7b13"),
        ("Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz", "cpu-intel-xeon-platinum-8481c"),
        ("AMD EPYC (family 25, model 17)", "cpu-amd-epyc-family-25-model-17"),
        ("Some New Accelerator 9", "some-new-accelerator-9"),
    ],
)
def test_products_map_to_one_class_per_model(product: str, expected: str) -> None:
    assert hardware_class_of(product) == expected


def test_an_explicit_class_wins_over_the_product() -> None:
    assert hardware_class({"vendor": "intel", "product": "Intel(R) Xeon(R) Platinum 8480C", "class": "cpu"}) == "cpu"
    assert hardware_class({"vendor": "nvidia", "product": "NVIDIA H100 80GB HBM3"}) == "nvidia-h100"


def test_the_registry_names_each_class_once_with_its_queue_and_device() -> None:
    assert len(CLASSES) == len(HARDWARE_CLASSES)
    assert hardware_class_named("cpu").device == "cpu"
    h100 = hardware_class_named("nvidia-h100")
    assert (h100.vendor, h100.device, h100.queue, h100.architecture) == (
        "nvidia",
        "cuda",
        "reruns.nvidia-h100",
        "sm_90",
    )
    # Every product a class matches is classed as that class.
    for hardware in HARDWARE_CLASSES:
        for product in hardware.products:
            assert hardware_class_of(product) == hardware.name


def test_an_unknown_class_is_refused_with_the_list_of_classes() -> None:
    with pytest.raises(UnknownHardwareClassError) as refused:
        hardware_class_named("nvidia-h1OO")
    assert "'nvidia-h1OO' is not a hardware class" in str(refused.value)
    assert "cpu, nvidia-gb200, nvidia-b200" in str(refused.value)


def test_a_cpu_models_class_is_a_class_of_its_own_that_a_worker_can_serve() -> None:
    epyc = hardware_class_named("cpu-amd-epyc-7b13")
    assert (epyc.name, epyc.vendor, epyc.device) == ("cpu-amd-epyc-7b13", "amd", "cpu")
    assert epyc.queue == "reruns.cpu-amd-epyc-7b13"
    assert hardware_class_named("cpu-amd-epyc-7b13") != hardware_class_named("cpu-intel-xeon-platinum-8481c")
    # Names a queue and a Redis user: nothing but a CPU model's slug passes.
    for hostile in ("cpu-", "cpu-a b", "cpu-x:y", "cpu-" + "x" * 80, "cpu--x", "cpu-a\tb"):
        with pytest.raises(UnknownHardwareClassError):
            hardware_class_named(hostile)
