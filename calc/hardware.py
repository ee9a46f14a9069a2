"""Accelerator presets: memory, peak throughput, bandwidths, with the source of each figure.

Capacities are what the device exposes: the total that ``nvidia-smi`` prints as
``Memory-Usage … / N MiB`` (``torch.cuda.mem_get_info()[1]``; ``rocm-smi``'s "VRAM Total
Memory" on AMD). HBM is sized in binary units, so an "80 GB" H100 SXM shows
81,559 MiB (85.5 x 10^9 B, 79.6 GiB) and an "80 GB" A100 81,920 MiB (80 GiB): the
marketed GB is neither 10^9 B nor exactly 2^30 B. The engine's ``nvidia_smi_bytes``
estimate is compared with this total, the figure ``nvidia-smi`` really shows; reading
the marketed "80 GB" as 80 x 10^9 B made every verdict about 7% too harsh. Link speeds,
by contrast, are decimal (900 GB/s = 900 x 10^9 B/s). The label keeps the marketed name.

Peak throughputs are the *dense* tensor-core figures. Datasheets print the
2:4-sparsity figure first (twice the dense one, marked with an asterisk); the
papers that report MFU divide by the dense figure (312 TFLOP/s for the A100 in
Narayanan et al. 2021 and Korthikanti et al. 2022, 989.4 TFLOP/s for the H100
in Llama 3 Table 4), and so does this module.

Provenance: the NVIDIA and AMD datasheet PDFs themselves were not available to
this project. Every figure below comes from a secondary page that quotes the
datasheet (named in each preset's ``source``) or from an MLPerf system
description; see the reference notes, Sec. 7. Network (scale-out) figures are
not here: they belong to the communication module.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError

__all__ = ["GPU", "GPUS", "PEAK_DTYPES", "gpu"]

PEAK_DTYPES: tuple[str, ...] = ("bf16", "fp16", "fp8")
"""Data types [`GPU.peak_flops`][calc.hardware.GPU.peak_flops] knows. fp16 runs at the bf16 rate on every preset."""


@dataclass(frozen=True)
class GPU:
    """One accelerator's published figures.

    Attributes:
        name: Stable identifier used in URLs and the API (``"h100-sxm"``).
        label: Human label, with the marketed capacity.
        memory_bytes: Device memory as exposed: the total ``nvidia-smi`` reports (MiB x 2^20), each
            sourced in the preset's ``source``.
        bf16_flops: Dense BF16 peak, FLOP/s (no sparsity). FP16 is the same on every preset.
        fp8_flops: Dense FP8 peak, FLOP/s (0 where the chip has no FP8 tensor cores).
        hbm_bytes_per_s: Memory bandwidth, bytes/s.
        scaleup_bytes_per_s: Per-GPU scale-up (NVLink / Infinity Fabric) bandwidth, bytes/s, both
            directions summed as marketed.
        gpus_per_node: GPUs in one server (node) of the standard configuration.
        source: Where the figures are published.
        memory_type: HBM generation (``"HBM3"``...), for labels; empty when unknown.
        tdp_watts: Maximum board power in watts (0 when unknown).
        scaleup_domain_gpus: GPUs that reach each other over the scale-up link: 8 on an NVSwitch
            baseboard, 2 for PCIe cards joined by an NVLink bridge, 72 for a GB200 NVL72 rack. 0 means
            "same as ``gpus_per_node``"; read it through [`scaleup_gpus`][calc.hardware.GPU.scaleup_gpus].
    """

    name: str
    label: str
    memory_bytes: int
    bf16_flops: int
    fp8_flops: int
    hbm_bytes_per_s: int
    scaleup_bytes_per_s: int
    gpus_per_node: int
    source: str
    memory_type: str = ""
    tdp_watts: int = 0
    scaleup_domain_gpus: int = 0

    @property
    def scaleup_gpus(self) -> int:
        """GPUs in one scale-up (NVLink / Infinity Fabric) domain.

        Examples:
            >>> gpu("h100-sxm").scaleup_gpus, gpu("h100-pcie").scaleup_gpus, gpu("gb200").scaleup_gpus
            (8, 2, 72)
        """
        return self.scaleup_domain_gpus or self.gpus_per_node

    def peak_flops(self, dtype: str = "bf16") -> int:
        """Dense tensor-core peak for a data type, FLOP/s.

        Args:
            dtype: One of [`PEAK_DTYPES`][calc.hardware.PEAK_DTYPES].

        Returns:
            The peak in FLOP/s.

        Raises:
            CalcError: For an unknown data type (``unknown-name``) or FP8 on a chip without it
                (``unsupported``).

        Examples:
            >>> gpu("h100-sxm").peak_flops("fp8")
            1978900000000000
            >>> gpu("a100-80").peak_flops("fp8")
            Traceback (most recent call last):
            ...
            calc.errors.CalcError: dtype has no FP8 tensor cores on the A100 80 GB (got 'fp8')
        """
        if dtype in ("bf16", "fp16"):
            return self.bf16_flops
        if dtype == "fp8":
            if not self.fp8_flops:
                raise CalcError("dtype", f"has no FP8 tensor cores on the {self.label}", dtype, code="unsupported")
            return self.fp8_flops
        raise CalcError("dtype", f"must be one of {', '.join(PEAK_DTYPES)}", dtype, code="unknown-name")


_T = 10**12
_G = 10**9
_MIB = 2**20

GPUS: dict[str, GPU] = {
    g.name: g
    for g in (
        GPU(
            "a100-40",
            "A100 40 GB",
            40_960 * _MIB,
            312 * _T,
            0,
            1_555 * _G,
            600 * _G,
            8,
            "NVIDIA A100 datasheet via glennklockwood.com/garden/processors/A100 (SXM4: 40 GB HBM2, 1.555 TB/s, "
            "300+300 GB/s NVLink, 400 W; BF16 312 dense / 624 sparse); 312 TFLOP/s as used by "
            "Narayanan et al. 2021 and Korthikanti et al. 2022"
            "; capacity 40,960 MiB as nvidia-smi totals it (modal-labs/modal-client PR 2797, its list of "
            "nvidia-smi totals)",
            memory_type="HBM2",
            tdp_watts=400,
        ),
        GPU(
            "a100-80",
            "A100 80 GB",
            81_920 * _MIB,
            312 * _T,
            0,
            2_039 * _G,
            600 * _G,
            8,
            "NVIDIA A100 datasheet via glennklockwood.com/garden/processors/A100 (SXM4 80 GB HBM2e, 2.039 TB/s; "
            "otherwise as the 40 GB part)"
            "; capacity 81,920 MiB in nvidia-smi (modal-labs/modal-client PR 2797; NVIDIA A800-SXM4-80GB, the "
            "same board, in dexmal/dexbotic issue 41)",
            memory_type="HBM2e",
            tdp_watts=400,
        ),
        GPU(
            "h100-sxm",
            "H100 SXM 80 GB",
            81_559 * _MIB,
            989_400 * _G,
            1_978_900 * _G,
            3_350 * _G,
            900 * _G,
            8,
            "NVIDIA H100 datasheet via glennklockwood.com/garden/processors/h100 (SXM5: 80 GB HBM3, 3.35 TB/s, "
            "900 GB/s NVLink, 700 W; BF16 989.4 dense, FP8 1978.9 dense); 989.4 TFLOP/s as in Llama 3 Table 4 MFU"
            "; capacity 81,559 MiB in nvidia-smi (NVIDIA/nccl issue 1264, an 8x H100 80GB HBM3 server; "
            "modal-labs/modal-client PR 2797)",
            memory_type="HBM3",
            tdp_watts=700,
        ),
        GPU(
            "h100-pcie",
            "H100 PCIe 80 GB",
            81_559 * _MIB,
            756_500 * _G,
            1_513_000 * _G,
            2_000 * _G,
            600 * _G,
            8,
            "NVIDIA H100 datasheet, PCIe form factor, via archive-lib.hpctech.co.jp/gpuproduct/nvidia-h100.html "
            "(BF16 1,513 and FP8 3,026 TFLOP/s with sparsity, halved here; 80 GB HBM2e, 2,000 GB/s; NVLink bridge "
            "600 GB/s between pairs) and the NVIDIA H100 PCIe product brief PB-11133-001 (350 W)"
            '; capacity 81,559 MiB in nvidia-smi ("NVIDIA H100 PCIe … / 81559MiB" in public nvidia-smi logs, '
            "350 W cap)",
            memory_type="HBM2e",
            tdp_watts=350,
            scaleup_domain_gpus=2,
        ),
        GPU(
            "h200",
            "H200 SXM 141 GB",
            143_771 * _MIB,
            989_400 * _G,
            1_978_900 * _G,
            4_800 * _G,
            900 * _G,
            8,
            "MLCommons inference v4.1 H200-SXM-141GBx8 system description (141 GB, 900 GB/s NVLink); 4.8 TB/s "
            "HBM3e and the H100 SXM compute figures from the NVIDIA H200 datasheet as quoted by news and wiki pages; "
            "700 W as the H100 SXM"
            '; capacity 143,771 MiB in nvidia-smi ("NVIDIA H200 … 700W | 0MiB / 143771MiB" in public 8x H200 '
            "logs)",
            memory_type="HBM3e",
            tdp_watts=700,
        ),
        GPU(
            "b200",
            "B200 180 GB",
            183_359 * _MIB,
            2_250 * _T,
            4_500 * _T,
            8_000 * _G,
            1_800 * _G,
            8,
            "NVIDIA HGX B200 (1000 W) via glennklockwood.com/garden/processors/B200 (BF16 2250 dense, FP8 4500 dense, "
            "8 TB/s, 2 x 900 GB/s NVLink 5); MLPerf B200-SXM-180GB (180 GB usable of 192 GB physical)"
            "; capacity 183,359 MiB in nvidia-smi (NVIDIA/TensorRT-LLM issue 10278, 8x B200, driver 580.95.05)",
            memory_type="HBM3e",
            tdp_watts=1000,
        ),
        GPU(
            "gb200",
            "GB200 NVL72 186 GB",
            189_471 * _MIB,
            2_500 * _T,
            5_000 * _T,
            8_000 * _G,
            1_800 * _G,
            4,
            "NVIDIA GB200 NVL72 (72 Blackwell GPUs and 36 Grace CPUs in one NVLink domain; 18 compute trays of "
            "4 GPUs; per GPU BF16 2.5 PFLOP/s and FP8 5 PFLOP/s dense, i.e. the rack's 180 and 360 PFLOP/s over 72; "
            "8 TB/s HBM3e; NVLink 5 at 1.8 TB/s; 1200 W) via nvidia.com/en-us/data-center/gb200-nvl72 (13.4 TB HBM3e "
            "over 72 GPUs, 576 TB/s); capacity 189,471 MiB in nvidia-smi ('NVIDIA GB200 … 1200W | … / 189471MiB')",
            memory_type="HBM3e",
            tdp_watts=1200,
            scaleup_domain_gpus=72,
        ),
        GPU(
            "mi300x",
            "MI300X 192 GB",
            206_141_652_992,
            1_307_400 * _G,
            2_614_900 * _G,
            5_300 * _G,
            896 * _G,
            8,
            "AMD Instinct MI300X spec table via alpharomercoma/MI300X-vs-H200 METHODOLOGY.md (BF16 1307.4 dense, "
            "FP8 2614.9 dense, 192 GB HBM3, 5.3 TB/s, Infinity Fabric 896 GB/s); 750 W via jaredwatkins.com"
            '; capacity 206,141,652,992 B (196,592 MiB), rocm-smi "VRAM Total Memory" on 8x MI300X (ROCm issue '
            "4750)",
            memory_type="HBM3",
            tdp_watts=750,
        ),
    )
}
"""Accelerator presets by name."""


def gpu(name: str) -> GPU:
    """Look up a preset by name.

    Args:
        name: A key of [`GPUS`][calc.hardware.GPUS].

    Returns:
        The preset.

    Raises:
        CalcError: For an unknown name, listing the known ones.

    Examples:
        >>> gpu("h100-sxm").memory_bytes  # 81,559 MiB, as nvidia-smi shows it
        85520809984
        >>> gpu("gb200").scaleup_gpus
        72
        >>> gpu("tpu")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: gpu must be one of a100-40, a100-80, b200, gb200, h100-pcie, ..., mi300x (got 'tpu')
    """
    try:
        return GPUS[name]
    except KeyError:
        raise CalcError("gpu", f"must be one of {', '.join(sorted(GPUS))}", name, code="unknown-name") from None
