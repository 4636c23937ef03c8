#!/usr/bin/env python3
"""Attention benchmark: every mxattn family beside PyTorch SDPA's flash, cuDNN
and memory-efficient backends, measured in one process and one run.

    MXATTN_LIB=build/libmxattn.so python3 bench/attention.py            # full grid
    MXATTN_LIB=build/libmxattn.so python3 bench/attention.py --quick    # a subset
    MXATTN_LIB=build/libmxattn.so python3 bench/attention.py --suite shapes   # a model's shapes
    python3 bench/attention.py --suite shapes --list     # its rows; needs neither torch nor a GPU

Writes results.json, results.md and chart.png to
bench/results/<device>-<date>/ (or --out DIR).  See bench/README.md.
"""
import argparse
import contextlib
import datetime
import itertools
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
import traceback
import zlib

REPO_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(REPO_DIR, "python"))

try:  # --list needs no torch: it only prints the rows a run would measure
    import torch  # noqa: E402
    import torch.nn.functional as F  # noqa: E402
    from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402
except ImportError:
    torch = None

import mxattn  # noqa: E402  (imports without torch or the library)
from clock_log import ClockLog  # noqa: E402  (bench/, beside this script)

SDPA_NAMES = ("sdpa-flash", "sdpa-cudnn", "sdpa-efficient")
SDPA_BACKENDS = {
    "sdpa-flash": SDPBackend.FLASH_ATTENTION,
    "sdpa-cudnn": SDPBackend.CUDNN_ATTENTION,
    "sdpa-efficient": SDPBackend.EFFICIENT_ATTENTION,
} if torch else dict.fromkeys(SDPA_NAMES)
RATIO_BASELINE = "sdpa-cudnn"
REFERENCE_HEADS = 4        # the fp32 reference covers batch 0, heads [0, 4)
DEFAULT_L2_BYTES = 60 << 20
WARMUP_MS, REP_MS = 25, 100  # per measurement: keeps each config near 1 s
DEFAULT_ROUNDS = 3           # interleaved timing rounds per config (REP_MS is split over them)
MIN_REPS = 5                 # slow calls get a longer rep time rather than one sample


# --- arguments and environment ----------------------------------------------------

MMA_F16 = "f16[variant=mma]"
SUITE_GROUPS = ("headdims", "short", "cross", "gqa", "decode")
SUITE_FAMILIES = ["f16", "int8-fp8"]
SUITE_BASELINES = ["sdpa-cudnn", "sdpa-flash"]


def int_list(text):
    return [int(x) for x in text.split(",") if x]


def name_list(text):
    return [x.strip() for x in text.split(",") if x.strip()]


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="a small subset: D 64,128; N 1024,4096")
    parser.add_argument("--suite", choices=("shapes",), default=None,
                        help="shapes: the shapes models have (issue 35), in groups "
                             f"{','.join(SUITE_GROUPS)}: head dims, short and many small "
                             "problems, cross-attention, grouped-query prefill, decode; "
                             "--dims, --seqs, --causal, --batch, --heads, --heads-kv do not apply")
    parser.add_argument("--groups", type=name_list, default=None,
                        help=f"with --suite: the groups to run (default all: {','.join(SUITE_GROUPS)})")
    parser.add_argument("--list", action="store_true",
                        help="print the rows (problems) a run would measure and exit; "
                             "needs neither torch nor a GPU")
    parser.add_argument("--families", type=name_list, default=None,
                        help="mxattn families, comma-separated; FAMILY[knobs] pins a "
                             "configuration, e.g. 'f16[variant=mma]' (default: all, and "
                             f"{MMA_F16}: the mma.sync kernel beside the Hopper one; "
                             f"with --suite: {','.join(SUITE_FAMILIES)})")
    parser.add_argument("--extra", type=name_list, default=[],
                        help="more FAMILY[knobs] rows, added to --families (e.g. a tile under test)")
    parser.add_argument("--baselines", type=name_list, default=None,
                        help="SDPA backends (default: sdpa-flash,sdpa-cudnn,sdpa-efficient; "
                             f"with --suite: {','.join(SUITE_BASELINES)})")
    parser.add_argument("--dims", type=int_list, default=None, help="head dims (default 64,128,80)")
    parser.add_argument("--seqs", type=int_list, default=None,
                        help="sequence lengths (default 1024,4096,16384)")
    parser.add_argument("--causal", choices=("both", "yes", "no"), default="both")
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--heads", type=int, default=32)
    parser.add_argument("--heads-kv", type=int, default=None, help="default: --heads")
    parser.add_argument("--dtype", choices=("bf16", "fp16"), default="bf16")
    parser.add_argument("--seed", type=int, default=None,
                        help="draw each row's inputs from this seed and the row's label, so two runs "
                             "(two builds in an A/B) see the same inputs and their accuracy columns "
                             "compare exactly (default: fresh inputs each run)")
    parser.add_argument("--rounds", type=int, default=DEFAULT_ROUNDS,
                        help="timing rounds per config; each round times every implementation "
                             "once, in a rotated order, and a row reports the median of its "
                             f"rounds (default {DEFAULT_ROUNDS}; 1: one timing each, in order)")
    parser.add_argument("--rep-ms", type=float, default=REP_MS,
                        help=f"timing per config in ms, split over its rounds (default {REP_MS}); runs at "
                             "the board's power limit drift by a few percent between calls, and a longer "
                             "rep with more rounds narrows a row's median")
    parser.add_argument("--settle-ms", type=float, default=0,
                        help="before each timing, the implementation's own untimed load for this "
                             "long, so that each is timed in its sustained state under the power "
                             "limit (default 0: timed right after the previous row)")
    parser.add_argument("--tuned-db", default=None,
                        help="a database `mxattn tune` filled (or a shipped one): each mxattn "
                             "family F is timed twice, as F pinned to the heuristic default (the "
                             "first of mxattn.candidates) and as 'F tuned' with the library's "
                             "choice, the database's winner for the problem's bucket where it has "
                             "one (the default where not)")
    parser.add_argument("--clocks", action="store_true",
                        help="sample the SM clock, power and temperature with nvidia-smi while "
                             "timing (bench/clock_log.py); each row gets their means over its "
                             "own timed calls (sm_mhz, power_w, temp_c)")
    parser.add_argument("--out", default=None,
                        help="output folder (default bench/results/<device>-<date>)")
    args = parser.parse_args()
    if args.suite:
        if args.dims is not None or args.seqs is not None or args.quick:
            parser.error("--suite sets its own shapes: drop --dims, --seqs and --quick")
        args.groups = args.groups or list(SUITE_GROUPS)
        unknown = [g for g in args.groups if g not in SUITE_GROUPS]
        if unknown:
            parser.error(f"unknown groups {unknown}; choose from {list(SUITE_GROUPS)}")
    elif args.groups:
        parser.error("--groups needs --suite")
    if args.families is None:
        args.families = list(SUITE_FAMILIES) if args.suite else list(mxattn.FAMILIES) + [MMA_F16]
    if args.baselines is None:
        args.baselines = list(SUITE_BASELINES) if args.suite else list(SDPA_NAMES)
    if args.dims is None:
        args.dims = [64, 128] if args.quick else [64, 128, 80]
    if args.seqs is None:
        args.seqs = [1024, 4096] if args.quick else [1024, 4096, 16384]
    args.heads_kv = args.heads_kv or args.heads
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")
    if args.rep_ms <= 0:
        parser.error("--rep-ms must be positive")
    if args.settle_ms < 0:
        parser.error("--settle-ms must not be negative")
    args.families += [name for name in args.extra if name not in args.families]
    if args.tuned_db:
        if not os.path.isfile(args.tuned_db):
            parser.error(f"--tuned-db {args.tuned_db}: no such file")
        # Before the library's context exists: it opens $MXATTN_CACHE on first use.
        os.environ["MXATTN_CACHE"] = os.path.abspath(args.tuned_db)
        global PIN_DEFAULTS
        PIN_DEFAULTS = True
        args.families = [n for f in args.families
                         for n in ((f, f + TUNED_SUFFIX) if family_and_config(f)[1] is None else (f,))]
    unknown = [b for b in args.baselines if b not in SDPA_NAMES]
    if unknown:
        parser.error(f"unknown baselines {unknown}; choose from {list(SDPA_NAMES)}")
    return args


def device_slug(name):
    """"NVIDIA H200" -> "h200", as in shared/anchors."""
    slug = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")
    return re.sub(r"^nvidia-", "", slug) or "gpu"


def driver_version():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0]
    except Exception:
        return "unknown"


def environment(args):
    props = torch.cuda.get_device_properties(0)
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    command = "python3 " + " ".join(shlex.quote(a) for a in sys.argv)
    if os.environ.get("MXATTN_LIB"):
        command = f"MXATTN_LIB={shlex.quote(os.environ['MXATTN_LIB'])} {command}"
    return {
        "device": f"{props.name} ({props.multi_processor_count} SMs, "
                  f"sm_{props.major}{props.minor}, driver {driver_version()})",
        "device_name": props.name,
        "date": datetime.date.today().isoformat(),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version(),
        "triton": triton_version,
        "mxattn": mxattn.version(),
        "mxattn_lib": mxattn.library_path(),
        "command": command,
        "timer": timer_name(args.rounds, args.rep_ms, args.settle_ms),
    }


# --- timing -------------------------------------------------------------------------

def _triton_do_bench():
    try:
        from triton.testing import do_bench
        return do_bench
    except ImportError:
        return None


def timer_name(rounds, rep_ms=REP_MS, settle_ms=0):
    timer = "triton.testing.do_bench" if _triton_do_bench() else "CUDA events"
    settled = f", each after {settle_ms:g} ms of its own untimed load" if settle_ms > 0 else ""
    return (f"{timer} median (warmup {WARMUP_MS} ms, rep {rep_ms / rounds:g} ms{settled}) in each of "
            f"{rounds} interleaved rounds; the median of the rounds")


def median_ms(fn, input_sets, rep_ms=REP_MS, settle_ms=0):
    """Median time of fn(q, k, v) in ms, cycling through the input sets so
    that each call reads inputs that are not already in L2; with settle_ms,
    after that long of fn's own untimed load (_settle says why)."""
    sets = itertools.cycle(input_sets)

    def step():
        fn(*next(sets))

    _settle(step, settle_ms)
    estimate_ms = _estimate_ms(step)
    rep_ms = max(rep_ms, MIN_REPS * estimate_ms)
    do_bench = _triton_do_bench()
    if do_bench:
        try:
            return do_bench(step, warmup=WARMUP_MS, rep=rep_ms, return_mode="median")
        except TypeError:  # a triton without return_mode
            pass
    return _events_median_ms(step, estimate_ms, rep_ms)


def _settle(step, settle_ms):
    """Calls step back to back for settle_ms of wall time.  Why: under the
    board's power limit the clock a kernel gets depends on the load before
    it, and a row timed right after another row (or after input sets were
    made) runs partly in the power controller's transient.  On the H200 at
    D=128 N=4096 cuDNN's rows read 1780-1800 MHz that way where, held for
    seconds, it runs at ~1650 (bench/NOTES.md, 2026-11-30).
    Settling times each implementation in its own sustained state, as
    `mxattn tune --settle-ms` times candidates."""
    if settle_ms <= 0:
        return
    torch.cuda.synchronize()
    begin = time.perf_counter()
    while (time.perf_counter() - begin) * 1e3 < settle_ms:
        for _ in range(4):   # a few launches ahead, not the whole settle queued
            step()
        torch.cuda.synchronize()


def _estimate_ms(step):
    """Wall time of one call, from two synchronized calls."""
    torch.cuda.synchronize()
    begin = time.perf_counter()
    for _ in range(2):
        step()
    torch.cuda.synchronize()
    return max((time.perf_counter() - begin) * 1e3 / 2, 1e-3)


def _events_median_ms(step, estimate_ms, rep_ms):
    for _ in range(max(1, int(WARMUP_MS / estimate_ms))):
        step()
    reps = min(max(MIN_REPS, int(rep_ms / estimate_ms)), 1000)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for start, end in zip(starts, ends):
        start.record()
        step()
        end.record()
    torch.cuda.synchronize()
    times = sorted(s.elapsed_time(e) for s, e in zip(starts, ends))
    return times[len(times) // 2]


# --- the problems and the implementations ----------------------------------------------

def configs(args):
    if args.suite:
        yield from suite_configs(args.groups, args.dtype)
        return
    causal_modes = {"both": (False, True), "yes": (True,), "no": (False,)}[args.causal]
    for head_dim in args.dims:
        for seq_len in args.seqs:
            for causal in causal_modes:
                yield dict(batch=args.batch, heads=args.heads, heads_kv=args.heads_kv,
                           seq_len=seq_len, seq_q=seq_len, seq_k=seq_len, head_dim=head_dim,
                           causal=causal, alignment="top-left", dtype=args.dtype)


# Cross-attention as diffusion models run it: the image's 64x64 latent
# (4096 tokens) attends to the text encoder's tokens (77 for CLIP), batch 2
# for classifier-free guidance's conditional and unconditional halves, 16
# heads (SDXL has 10 and 20 at D=64, Stable Diffusion 3 24; 16 lies between).
CROSS_BATCH, CROSS_HEADS = 2, 16


def suite_configs(groups, dtype="bf16"):
    """The rows of --suite shapes (issue 35), group by group.  causal is
    False, or True with alignment "top-left" (SDPA's is_causal) or
    "bottom-right" (FlashAttention's: the last query sees every key).
    Bottom-right only where Nq > 1: at Nq = 1 it is no mask at all."""
    def row(group, batch, heads, heads_kv, seq_q, seq_k, head_dim, causal=False,
            alignment="top-left"):
        return dict(group=group, suite=True, batch=batch, heads=heads, heads_kv=heads_kv,
                    seq_len=seq_q if seq_q == seq_k else None, seq_q=seq_q, seq_k=seq_k,
                    head_dim=head_dim, causal=causal, alignment=alignment, dtype=dtype)
    both = (False, True)
    if "headdims" in groups:
        for d in (32, 80, 96, 160, 192, 256):
            for n in (4096, 16384):
                for causal in both:
                    yield row("headdims", 4, 32, 32, n, n, d, causal)
    if "short" in groups:
        for d in (64, 128):
            for causal in both:
                yield row("short", 4, 32, 32, 1024, 1024, d, causal)
        for d in (64, 128):
            for causal in both:
                yield row("short", 32, 16, 16, 512, 512, d, causal)
    if "cross" in groups:
        for d in (64, 128):
            for nk in (77, 256, 1024):
                yield row("cross", CROSS_BATCH, CROSS_HEADS, CROSS_HEADS, 4096, nk, d)
    if "gqa" in groups:
        # Hkv = 32 is the same shape as MHA: the ratio the grouped rows are held to.
        for causal in both:
            for heads_kv in (32, 8, 4, 1):
                yield row("gqa", 4, 32, heads_kv, 4096, 4096, 128, causal)
    if "decode" in groups:
        for heads_kv in (8, 32):
            for nk in (8192, 32768):
                for nq in (1, 4, 16):
                    yield row("decode", 16, 32, heads_kv, nq, nk, 128, causal=nq > 1,
                              alignment="bottom-right")


def config_label(cfg):
    """A config's (or a row's) label; the suite's carry their whole shape."""
    if not cfg.get("group"):
        return f"D{cfg['head_dim']} N{cfg['seq_len']}{' causal' if cfg['causal'] else ''}"
    heads = f"H{cfg['heads']}" + (f"/{cfg['heads_kv']}" if cfg["heads_kv"] != cfg["heads"] else "")
    seqs = f"N{cfg['seq_len']}" if cfg["seq_len"] else f"Nq{cfg['seq_q']} Nk{cfg['seq_k']}"
    alignment = cfg.get("alignment") or cfg.get("causal_alignment")
    mask = "" if not cfg["causal"] else " causal" if alignment == "top-left" else " causal-br"
    return f"{cfg['group']} B{cfg['batch']} {heads} D{cfg['head_dim']} {seqs}{mask}"


def torch_dtype(cfg):
    return torch.bfloat16 if cfg["dtype"] == "bf16" else torch.float16


def make_input_sets(cfg, l2_bytes, seed=None):
    """Enough [B, H, N, D] input sets that together they exceed L2 twice over
    (at least two), within a quarter of free memory (at least one).  Two sets
    of the largest decode row (B16 Hkv32 Nk32768: 4.3 GB of K and V each) are
    9 GB: no shape is multiplied beyond the two that keep L2 cold."""
    dtype = torch_dtype(cfg)
    generator = None
    if seed is not None:
        generator = torch.Generator(device="cuda")
        generator.manual_seed(seed * 1000003 + zlib.crc32(config_label(cfg).encode()))

    def tensor(heads, seq):
        return torch.randn(cfg["batch"], heads, seq, cfg["head_dim"], dtype=dtype, device="cuda",
                           generator=generator)
    torch.cuda.empty_cache()  # the last config's cached blocks would count as used
    element = torch.finfo(dtype).bits // 8
    set_bytes = (cfg["heads"] * cfg["seq_q"] + 2 * cfg["heads_kv"] * cfg["seq_k"]) * \
        cfg["batch"] * cfg["head_dim"] * element
    free_bytes, _ = torch.cuda.mem_get_info()
    wanted = max(2, math.ceil(2 * l2_bytes / set_bytes))
    count = max(1, min(wanted, 16, int(free_bytes / 4 // set_bytes)))
    return [(tensor(cfg["heads"], cfg["seq_q"]), tensor(cfg["heads_kv"], cfg["seq_k"]),
             tensor(cfg["heads_kv"], cfg["seq_k"]))
            for _ in range(count)]


def needs_mask(cfg):
    """True where SDPA has no flag for the mask: bottom-right causal with
    Nq != Nk (with Nq == Nk it is is_causal's top-left)."""
    return cfg["causal"] and cfg["alignment"] == "bottom-right" and cfg["seq_q"] != cfg["seq_k"]


def bottom_right_mask(cfg, device="cuda"):
    """SDPA's boolean attn_mask for bottom-right causal: query i sees key j
    where j <= i + Nk - Nq."""
    return torch.ones(cfg["seq_q"], cfg["seq_k"], dtype=torch.bool, device=device).tril(
        diagonal=cfg["seq_k"] - cfg["seq_q"])


class NotApplicable(RuntimeError):
    """An SDPA backend that cannot run a row's problem (a head dim, a mask):
    the row says so instead of failing."""


def family_and_config(name):
    """"f16" -> ("f16", None, {}); "f16[variant=mma]" -> ("f16", "variant=mma", {}):
    a row for a pinned kernel configuration beside the library's choice.
    v_terms=N inside the brackets is a problem option, not a knob: it goes
    to the keyword arguments ("int8-fp8[v_terms=2]" -> (.., None, {"v_terms": 2}))."""
    if not (name.endswith("]") and "[" in name):
        return name, None, {}
    family, inside = name[:-1].split("[", 1)
    knobs, options = [], {}
    for item in inside.split():
        if item.startswith("v_terms="):
            options["v_terms"] = int(item.split("=", 1)[1])
        else:
            knobs.append(item)
    return family, " ".join(knobs) or None, options


TUNED_SUFFIX = " tuned"   # --tuned-db: the row of the library's own choice
PIN_DEFAULTS = False      # --tuned-db: plain family rows run the heuristic default
_default_configs = {}


def resolve(name, inputs, cfg):
    """A row's (family, config, options).  'F tuned' takes the library's
    choice; with --tuned-db a plain 'F' is pinned to the heuristic default
    (what a plan builds where the database has no row), asked once a shape."""
    tuned = name.endswith(TUNED_SUFFIX)
    family, config, options = family_and_config(name[:-len(TUNED_SUFFIX)] if tuned else name)
    if PIN_DEFAULTS and not tuned and config is None:
        q, k, v = inputs
        key = (family, tuple(q.shape), tuple(k.shape), cfg["causal"], cfg["alignment"],
               tuple(sorted(options.items())))
        if key not in _default_configs:
            _default_configs[key] = mxattn.candidates(q, k, v, family=family, causal=cfg["causal"],
                                                      causal_alignment=cfg["alignment"], limit=1,
                                                      **options)[0]
        config = _default_configs[key]
    return family, config, options


def mxattn_impl(name, cfg, inputs):
    family, config, options = resolve(name, inputs, cfg)
    causal, alignment = cfg["causal"], cfg["alignment"]

    def run(q, k, v):
        return mxattn.attention(q, k, v, family=family, causal=causal, config=config,
                                causal_alignment=alignment, **options)
    return contextlib.nullcontext, run


def sdpa_impl(name, cfg):
    backend = SDPA_BACKENDS[name]
    mask = bottom_right_mask(cfg) if needs_mask(cfg) else None
    causal = cfg["causal"] and mask is None

    def call(q, k, v):
        grouped = k.shape[1] != q.shape[1]  # enable_gqa only when needed: not every backend has it
        if grouped:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal,
                                                  enable_gqa=True)
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)

    def run(q, k, v):
        try:
            return call(q, k, v)
        except RuntimeError as error:
            # "No available kernel": this backend does not take the problem
            # (flash takes no attn_mask; cuDNN lacks some head dims), and
            # cuDNN's frontend may refuse a graph only when it builds it.
            refused = ("No available kernel", "NOT_SUPPORTED", "cuDNN Frontend error")
            if not cfg.get("suite") or not any(text in str(error) for text in refused):
                raise
            why = "a boolean attn_mask (bottom-right causal, Nq < Nk)" if mask is not None \
                else "this problem"
            raise NotApplicable(f"n/a: {name} does not run {why}: "
                                f"{str(error).strip().splitlines()[0]}") from error
    return (lambda: sdpa_kernel(backend)), run


def reference_slice(q, k, v, cfg):
    """float32 SDPA (math backend) on batch 0, heads [0, REFERENCE_HEADS), one
    head at a time: the full fp32 reference at N=16384 costs more memory and
    time than a few heads, which measure the error as well."""
    group = q.shape[1] // k.shape[1]
    mask = bottom_right_mask(cfg) if needs_mask(cfg) else None
    causal = cfg["causal"] and mask is None
    outputs = []
    with sdpa_kernel(SDPBackend.MATH):
        for head in range(min(REFERENCE_HEADS, q.shape[1])):
            kv_head = head // group
            outputs.append(F.scaled_dot_product_attention(
                q[0:1, head:head + 1].float(), k[0:1, kv_head:kv_head + 1].float(),
                v[0:1, kv_head:kv_head + 1].float(), attn_mask=mask, is_causal=causal))
    return torch.cat(outputs, dim=1)


def accuracy(out, ref):
    """(cos, rel-L1) of out's reference slice against ref."""
    out = out[0:1, :ref.shape[1]].float()
    cos = F.cosine_similarity(out.flatten(), ref.flatten(), dim=0).item()
    rel_l1 = ((out - ref).abs().sum() / ref.abs().sum()).item()
    return round(cos, 6), round(rel_l1, 6)


def visible_pairs(cfg):
    """(query, key) pairs the mask lets through, per batch and head.  Causal
    with Nq = Nk counts half of N·N, as FlashAttention's and this bench's
    TOPS always have; otherwise the exact count: bottom-right with Nq < Nk
    sees far more than half (Nq=16, Nk=8192: 99.9%)."""
    nq, nk = cfg["seq_q"], cfg["seq_k"]
    if not cfg["causal"]:
        return nq * nk
    if nq == nk:
        return nq * nk / 2
    offset = nk - nq if cfg["alignment"] == "bottom-right" else 0
    return sum(min(max(i + offset + 1, 0), nk) for i in range(nq))


def tops(cfg, ms):
    flops = 4 * cfg["batch"] * cfg["heads"] * cfg["head_dim"] * visible_pairs(cfg)
    return flops / (ms * 1e-3) / 1e12


def kv_tbps(cfg, ms):
    """K and V bytes read per second, once each (TB/s): what decode is bound by."""
    element = 2  # bf16 and fp16
    kv_bytes = 2 * cfg["batch"] * cfg["heads_kv"] * cfg["seq_k"] * cfg["head_dim"] * element
    return kv_bytes / (ms * 1e-3) / 1e12


def copy_bandwidth_tbps(rep_ms):
    """Device copy bandwidth: bytes read + written per second by a torch copy
    of 1 GiB, the figure decode rows' K/V TB/s is held against."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = median_ms(lambda a, b: b.copy_(a), [(src, dst)], rep_ms)
    del src, dst
    torch.cuda.empty_cache()
    return round(2 * (1 << 30) / (ms * 1e-3) / 1e12, 3)


# --- one measurement -------------------------------------------------------------------

def base_row(name, cfg, input_sets):
    row = {
        "family": name, "kind": "sdpa" if name in SDPA_BACKENDS else "mxattn",
        "batch": cfg["batch"], "heads": cfg["heads"], "heads_kv": cfg["heads_kv"],
        "seq_len": cfg["seq_len"], "head_dim": cfg["head_dim"], "causal": cfg["causal"],
        "dtype": "bfloat16" if cfg["dtype"] == "bf16" else "float16",
        # Both are whole API calls: mxattn quantizes inside mxattn_run, SDPA
        # allocates its output as mxattn.attention does.
        "end_to_end": True, "kernel_ms": None,
        "ms": None, "tops": None, "ratio_vs_cudnn": None, "cos": None, "rel_l1": None,
        "accuracy_scope": f"batch 0, heads 0-{REFERENCE_HEADS - 1} vs fp32 SDPA math",
        "input_sets": len(input_sets), "first_call_s": None, "peak_mem_gb": None,
        "plan": None, "error": None,
        "sm_mhz": None, "power_w": None, "temp_c": None, "clock_samples": None,   # --clocks
    }
    if cfg.get("suite"):
        # seq_len stays Nq = Nk where they are equal (None where not), so that
        # readers of the plain grid's rows read these too.
        row.update(group=cfg["group"], seq_q=cfg["seq_q"], seq_k=cfg["seq_k"],
                   causal_alignment=cfg["alignment"] if cfg["causal"] else None,
                   kv_tbps=None, ratio_baseline=None)
    return row


class ContextBroken(RuntimeError):
    """A sticky CUDA error: every later CUDA call in this process fails."""


_peak_bytes = 0  # the largest torch.cuda.max_memory_allocated() seen by any measurement


def prepare(name, cfg, input_sets, reference):
    """One implementation's first call on one config (its plan, first-call
    time and accuracy): its row and a function that times it once."""
    row = base_row(name, cfg, input_sets)
    context, run = sdpa_impl(name, cfg) if name in SDPA_BACKENDS else mxattn_impl(name, cfg, input_sets[0])
    torch.cuda.reset_peak_memory_stats()
    with context():
        begin = time.perf_counter()
        out = run(*input_sets[0])  # for mxattn: makes the plan
        torch.cuda.synchronize()
        row["first_call_s"] = round(time.perf_counter() - begin, 3)
        if name not in SDPA_BACKENDS:
            row["plan"] = plan_info(name, input_sets[0], cfg)
        row["cos"], row["rel_l1"] = accuracy(out, reference)
        del out
    global _peak_bytes
    peak = torch.cuda.max_memory_allocated()
    _peak_bytes = max(_peak_bytes, peak)
    row["peak_mem_gb"] = round(peak / 2**30, 2)

    def time_once(rep_ms, settle_ms=0):
        with context():
            return median_ms(run, input_sets, rep_ms, settle_ms)
    return row, time_once


def finish(row, cfg, round_ms):
    """The row's time: the median of its rounds (each the median of its calls)."""
    row["round_ms"] = [round(ms, 4) for ms in round_ms]
    row["ms"] = statistics.median(round_ms)
    row["tops"] = tops(cfg, row["ms"])
    if cfg.get("group") == "decode":
        row["kv_tbps"] = round(kv_tbps(cfg, row["ms"]), 3)


def plan_info(name, inputs, cfg):
    """What mxattn chose; a failure here should not discard the timing."""
    try:
        family, config, options = resolve(name, inputs, cfg)
        return mxattn.plan_info(*inputs, family=family, causal=cfg["causal"], config=config,
                                causal_alignment=cfg["alignment"], **options)
    except Exception as error:
        return {"error": describe_error(error)}


def describe_error(error):
    text = str(error) if isinstance(error, NotApplicable) else f"{type(error).__name__}: {error}"
    return text if len(text) <= 600 else text[:600] + " ..."


def context_is_broken():
    """True after a sticky CUDA error (e.g. an illegal address), which fails
    every later call in the process."""
    try:
        torch.cuda.synchronize()
        torch.zeros(1, device="cuda").add_(1).item()
        return False
    except Exception:
        return True


def run_config(cfg, names, l2_bytes, rounds, clock_log=None, rep_ms=REP_MS, settle_ms=0, seed=None):
    """Rows for every implementation on cfg; failures become rows with error.

    The implementations are timed in interleaved rounds (A B C, B C A, ...)
    rather than one after the other: the GPU's clock and power state drift
    over a run, and timed in order the same kernel read up to 7% apart
    (H200, 2026-11-29; bench/NOTES.md), more than the differences the
    tuner's choices and these ratios are about.  With a clock_log, each row
    also gets the clock and power sampled during its own timed calls.  With
    settle_ms, each timing is preceded by that long of the same
    implementation's untimed load (_settle)."""
    rows, timers, spans = [], {}, {}
    input_sets = make_input_sets(cfg, l2_bytes, seed)
    reference = reference_slice(*input_sets[0], cfg)
    for name in names:
        prepared, error = guarded(name, cfg, lambda: prepare(name, cfg, input_sets, reference))
        if error:
            rows.append(dict(base_row(name, cfg, input_sets), error=error))
            continue
        row, timer = prepared
        rows.append(row)
        timers[name] = (row, timer, [])
    live = list(timers)
    for r in range(rounds):
        for name in live[r % len(live):] + live[:r % len(live)] if live else []:
            row, timer, round_ms = timers[name]
            if row["error"]:
                continue
            begin = time.time()
            ms, row["error"] = guarded(name, cfg, lambda: timer(rep_ms / rounds, settle_ms))
            spans.setdefault(name, []).append((begin, time.time()))
            if ms is not None:
                round_ms.append(ms)
    for name, (row, _, round_ms) in timers.items():
        if not row["error"] and round_ms:
            finish(row, cfg, round_ms)
        if clock_log and name in spans:
            row.update(clock_log.window(spans[name]) or {})
    for row in rows:
        print_progress(cfg, row)
    add_ratios(rows, fallback="sdpa-flash" if cfg.get("suite") else None)
    return rows


def guarded(name, cfg, step):
    """(step(), None), or (None, a description of its error) when it raises;
    raises ContextBroken after a sticky CUDA error."""
    try:
        return step(), None
    except Exception as error:
        text = describe_error(error)
        if isinstance(error, torch.cuda.OutOfMemoryError):
            torch.cuda.empty_cache()
        elif not isinstance(error, (mxattn.MxattnError, NotApplicable)):
            traceback.print_exc(file=sys.stdout)
        if context_is_broken():
            raise ContextBroken(f"the CUDA context is broken after {name} on {config_label(cfg)}: {text}")
        return None, text


def add_ratios(rows, fallback=None):
    """TOPS over SDPA cuDNN's on the same config, measured in the same run;
    where cuDNN did not run and fallback names a baseline (the suite's
    sdpa-flash), over that one's, and the rows' ratio_baseline says so."""
    baseline = next((r for r in rows if r["family"] == RATIO_BASELINE and r["tops"]), None)
    if baseline is None and fallback:
        baseline = next((r for r in rows if r["family"] == fallback and r["tops"]), None)
    # The baseline's own TOPS is rounded in the loop below: take it unrounded
    # first (decode's ~8 TOPS rounded to 0.1 moved the others' ratios by 1-2%).
    baseline_tops = baseline["tops"] if baseline else None
    for row in rows:
        if baseline and row["tops"]:
            row["ratio_vs_cudnn"] = round(row["tops"] / baseline_tops, 3)
            if "ratio_baseline" in row:
                row["ratio_baseline"] = baseline["family"]
        if row["tops"]:
            row["tops"] = round(row["tops"], 1)
            row["ms"] = round(row["ms"], 4)


def print_progress(cfg, row):
    if row["error"]:
        print(f"  {config_label(cfg):<22} {row['family']:<15} FAILED {row['error']}", flush=True)
    else:
        bandwidth = f"  K/V {row['kv_tbps']:.2f} TB/s" if row.get("kv_tbps") else ""
        print(f"  {config_label(cfg):<22} {row['family']:<15} {row['ms']:9.4f} ms "
              f"{row['tops']:7.1f} TOPS  cos {row['cos']:.5f}  rel-L1 {row['rel_l1']:.4f}"
              f"{bandwidth}", flush=True)


# --- reports -----------------------------------------------------------------------------

def write_json(out_dir, env, rows):
    with open(os.path.join(out_dir, "results.json"), "w") as f:
        json.dump(rows, f, indent=1)
    with open(os.path.join(out_dir, "environment.json"), "w") as f:
        json.dump(env, f, indent=1)


def fmt(value, spec):
    return "" if value is None else format(value, spec)


def write_markdown(out_dir, env, rows, peak_gb, wall_s):
    if env.get("suite"):
        write_suite_markdown(out_dir, env, rows, peak_gb, wall_s)
        return
    lines = [
        "# mxattn attention benchmark", "",
        f"- device: {env['device']}",
        f"- date: {env['date']}",
        f"- torch {env['torch']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}, "
        f"triton {env['triton']}, mxattn {env['mxattn']} ({env['mxattn_lib']})",
        f"- command: `{env['command']}`",
        f"- timer: {env['timer']}; inputs rotate among input sets larger than L2 together",
        "- ms: end to end (mxattn includes its quantization; no kernel-alone time is exposed)",
        "- TOPS = 4·B·H·N·N·D / t, halved for causal; vs cuDNN = TOPS / SDPA cuDNN's TOPS "
        "in this run",
        f"- accuracy: {REFERENCE_HEADS} heads of batch 0 against float32 SDPA (math backend)",
        f"- peak torch memory {peak_gb:.1f} GiB; run took {wall_s:.0f} s",
    ]
    clocks = any(r.get("sm_mhz") for r in rows)
    if clocks:
        lines.append("- MHz, W: nvidia-smi's SM clock and power draw, means over the row's own "
                     "timed calls (--clocks)")
    lines += ["", "| family | D | N | causal | ms | TOPS | vs cuDNN | cos | rel-L1 | "
              + ("MHz | W | " if clocks else "") + "note |",
              "|---|---|---|---|---|---|---|---|---|" + ("---|---|" if clocks else "") + "---|"]
    for r in rows:
        note = r["error"] or (r["plan"] or {}).get("config", "")
        note = note.replace("|", "\\|").replace("\n", " ")
        power = f"{fmt(r.get('sm_mhz'), 'd')} | {fmt(r.get('power_w'), '.0f')} | " if clocks else ""
        lines.append(f"| {r['family']} | {r['head_dim']} | {r['seq_len']} | "
                     f"{'yes' if r['causal'] else 'no'} | {fmt(r['ms'], '.4f')} | "
                     f"{fmt(r['tops'], '.1f')} | {fmt(r['ratio_vs_cudnn'], '.3f')} | "
                     f"{fmt(r['cos'], '.5f')} | {fmt(r['rel_l1'], '.4f')} | {power}{note} |")
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_suite_markdown(out_dir, env, rows, peak_gb, wall_s):
    """--suite's table: rows differ in B, heads, Nq, Nk and mask, so each
    carries its whole shape."""
    lines = [
        f"# mxattn attention benchmark: --suite {env['suite']} ({', '.join(env['groups'])})", "",
        f"- device: {env['device']}",
        f"- date: {env['date']}",
        f"- torch {env['torch']}, CUDA {env['cuda']}, cuDNN {env['cudnn']}, "
        f"triton {env['triton']}, mxattn {env['mxattn']} ({env['mxattn_lib']})",
        f"- command: `{env['command']}`",
        f"- timer: {env['timer']}; inputs rotate among input sets larger than L2 together",
        "- ms: end to end (mxattn includes its quantization; no kernel-alone time is exposed)",
        "- TOPS = 4·B·Hq·D·(visible query-key pairs) / t: Nq·Nk without a mask, N·N/2 for causal "
        "with Nq = Nk (as FlashAttention counts), and the exact count of visible pairs for "
        "bottom-right causal with Nq < Nk (the decode rows, where nearly every key is visible)",
        "- causal: top-left is SDPA's is_causal; bottom-right is FlashAttention's (query i sees "
        "keys j <= i + Nk - Nq). SDPA has no flag for it, so its backends get a boolean "
        "attn_mask there; a backend that takes no mask is n/a",
        "- vs cuDNN = TOPS / SDPA cuDNN's TOPS in this run; \"(flash)\": cuDNN did not run "
        "the row, the ratio is to SDPA flash",
        f"- K/V TB/s (decode rows) = 2·B·Hkv·Nk·D·2 bytes / t, each of K and V read once; "
        f"device copy bandwidth in this run: {fmt(env.get('copy_tbps'), '.2f')} TB/s "
        "(bytes read + written by a torch copy of 1 GiB)",
        f"- cross-attention: B{CROSS_BATCH} H{CROSS_HEADS}, a diffusion model's 64x64 latent "
        "(Nq = 4096) over text tokens (CLIP's 77)",
        "- grouped-query rows: SDPA gets K/V with Hkv heads and enable_gqa=True, never repeated "
        "K/V; Hkv = Hq is the same shape's MHA",
        f"- accuracy: {REFERENCE_HEADS} heads of batch 0 against float32 SDPA (math backend)",
        f"- peak torch memory {peak_gb:.1f} GiB; run took {wall_s:.0f} s",
    ]
    clocks = any(r.get("sm_mhz") for r in rows)
    if clocks:
        lines.append("- MHz, W: nvidia-smi's SM clock and power draw, means over the row's own "
                     "timed calls (--clocks)")
    lines += ["", "| group | family | B | Hq | Hkv | D | Nq | Nk | causal | ms | TOPS | vs cuDNN | "
              "K/V TB/s | cos | rel-L1 | " + ("MHz | W | " if clocks else "") + "note |",
              "|---" * (16 + (2 if clocks else 0)) + "|"]
    for r in rows:
        note = r["error"] or (r["plan"] or {}).get("config", "")
        note = note.replace("|", "\\|").replace("\n", " ")
        power = f"{fmt(r.get('sm_mhz'), 'd')} | {fmt(r.get('power_w'), '.0f')} | " if clocks else ""
        ratio = fmt(r["ratio_vs_cudnn"], ".3f")
        if ratio and r.get("ratio_baseline") not in (None, RATIO_BASELINE):
            ratio += f" ({r['ratio_baseline'].replace('sdpa-', '')})"
        causal = r.get("causal_alignment") or "no"
        lines.append(f"| {r.get('group', '')} | {r['family']} | {r['batch']} | {r['heads']} | "
                     f"{r['heads_kv']} | {r['head_dim']} | {r.get('seq_q', '')} | "
                     f"{r.get('seq_k', '')} | {causal} | {fmt(r['ms'], '.4f')} | "
                     f"{fmt(r['tops'], '.1f')} | {ratio} | {fmt(r.get('kv_tbps'), '.2f')} | "
                     f"{fmt(r['cos'], '.5f')} | {fmt(r['rel_l1'], '.4f')} | {power}{note} |")
    with open(os.path.join(out_dir, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def write_chart(out_dir, env, rows):
    if env.get("suite"):
        # Dozens of shapes of TOPS from 1 to 800 make no readable bar chart;
        # results.md's table is the suite's report.
        return
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not importable: no chart.png", flush=True)
        return
    labels = list(dict.fromkeys(config_label(r) for r in rows))
    names = list(dict.fromkeys(r["family"] for r in rows))
    value = {(config_label(r), r["family"]): r["tops"] or 0 for r in rows}
    width = 0.8 / max(1, len(names))
    fig, ax = plt.subplots(figsize=(max(10, 1.3 * len(labels)), 5.5))
    for i, name in enumerate(names):
        xs = [j + (i - (len(names) - 1) / 2) * width for j in range(len(labels))]
        ax.bar(xs, [value.get((label, name), 0) for label in labels], width, label=name)
    ax.set_xticks(range(len(labels)))
    ax.set_xticklabels(labels, rotation=45, ha="right")
    ax.set_ylabel("TOPS (end to end)")
    ax.set_title(f"Attention, B={rows[0]['batch']} H={rows[0]['heads']} {rows[0]['dtype']} — "
                 f"{env['device_name']}, {env['date']}")
    ax.legend(ncol=3, fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out_dir, "chart.png"), dpi=120)
    plt.close(fig)


def print_summary(rows):
    """TOPS per config (rows) and implementation (columns)."""
    labels = list(dict.fromkeys(config_label(r) for r in rows))
    names = list(dict.fromkeys(r["family"] for r in rows))
    cell = {(config_label(r), r["family"]): r for r in rows}
    width = max(12, max(len(n) for n in names) + 1)
    label_width = max([22] + [len(label) + 1 for label in labels])
    print("\nTOPS (x = ratio to sdpa-cudnn; - = failed)")
    print(f"{'config':<{label_width}}" + "".join(f"{n:>{width}}" for n in names))
    for label in labels:
        line = f"{label:<{label_width}}"
        for name in names:
            r = cell.get((label, name))
            if r is None or r["tops"] is None:
                text = "-"
            elif r["ratio_vs_cudnn"] is not None:
                text = f"{r['tops']:.0f} {r['ratio_vs_cudnn']:.2f}x"
            else:
                text = f"{r['tops']:.0f}"
            line += f"{text:>{width}}"
        print(line)
    sys.stdout.flush()


def nvidia_smi_id():
    """The GPU torch calls device 0, as nvidia-smi --id names it: its UUID
    where torch knows it (CUDA's device order need not be nvidia-smi's), else
    CUDA_VISIBLE_DEVICES' first entry, else 0."""
    uuid = getattr(torch.cuda.get_device_properties(0), "uuid", None)
    if uuid:
        text = str(uuid)
        return text if text.startswith("GPU-") else f"GPU-{text}"
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return visible or "0"


# --- main ----------------------------------------------------------------------------------

def list_configs(args):
    """--list: the rows a run would measure, one problem a line, and their count."""
    cfgs = list(configs(args))
    names = args.baselines + args.families
    for cfg in cfgs:
        print(f"{config_label(cfg):<44} B={cfg['batch']} Hq={cfg['heads']} Hkv={cfg['heads_kv']} "
              f"Nq={cfg['seq_q']} Nk={cfg['seq_k']} D={cfg['head_dim']} "
              f"causal={cfg['alignment'] if cfg['causal'] else 'none'}")
    print(f"{len(cfgs)} problems x {len(names)} implementations ({', '.join(names)}) = "
          f"{len(cfgs) * len(names)} rows")


def main():
    args = parse_args()
    if args.list:
        list_configs(args)
        return
    if torch is None:
        sys.exit("bench/attention.py needs PyTorch (only --list runs without it)")
    if not torch.cuda.is_available():
        sys.exit("bench/attention.py needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False  # an exact fp32 reference
    env = environment(args)
    out_dir = args.out or os.path.join(
        REPO_DIR, "bench", "results", f"{device_slug(env['device_name'])}-{env['date']}")
    os.makedirs(out_dir, exist_ok=True)
    l2_bytes = getattr(torch.cuda.get_device_properties(0), "L2_cache_size", 0) or DEFAULT_L2_BYTES
    names = args.baselines + args.families
    print(f"{env['device']}; torch {env['torch']}, CUDA {env['cuda']}; mxattn {env['mxattn']}",
          flush=True)
    print(f"timer: {env['timer']}; results to {out_dir}", flush=True)
    if args.suite:
        env.update(suite=args.suite, groups=args.groups)
        if "decode" in args.groups:
            env["copy_tbps"] = copy_bandwidth_tbps(args.rep_ms)
            print(f"device copy bandwidth (read + write, 1 GiB): {env['copy_tbps']:.2f} TB/s",
                  flush=True)
    # A `timeout` that stops the run still gets results.md: SIGTERM unwinds
    # through the finally below instead of killing the process outright.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    started = time.perf_counter()
    rows = []
    clock_log = ClockLog(gpu_id=nvidia_smi_id()).start() if args.clocks else None
    try:
        for cfg in configs(args):
            print(f"{config_label(cfg)} (B={cfg['batch']} H={cfg['heads']} "
                  f"Hkv={cfg['heads_kv']}):", flush=True)
            try:
                rows += run_config(cfg, names, l2_bytes, args.rounds, clock_log, args.rep_ms, args.settle_ms,
                                  args.seed)
            except ContextBroken as error:
                print(f"stopping: {error}", flush=True)
                break
            except Exception as error:  # e.g. out of memory for the inputs or reference
                print(f"  config failed: {describe_error(error)}", flush=True)
                rows.append(dict(base_row("(config)", cfg, []), error=describe_error(error)))
                torch.cuda.empty_cache()
            write_json(out_dir, env, rows)  # after every config: a crash keeps the rest
    finally:
        if clock_log:
            clock_log.stop()
            if not clock_log.samples:
                print(f"--clocks: no samples ({clock_log.error or 'nvidia-smi printed none'})", flush=True)
        wall_s = time.perf_counter() - started
        peak_gb = max(_peak_bytes, torch.cuda.max_memory_allocated()) / 2**30
        write_json(out_dir, env, rows)
        if rows:
            write_markdown(out_dir, env, rows, peak_gb, wall_s)
            write_chart(out_dir, env, rows)
        print(f"\nwrote {out_dir}/results.json, results.md, chart.png in {wall_s:.0f} s")
        print(f"peak memory allocated through torch: {peak_gb:.2f} GiB "
              "(mxattn's own workspace not included)")
        print_summary(rows)


if __name__ == "__main__":
    main()
