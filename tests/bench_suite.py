#!/usr/bin/env python3
"""bench/attention.py's pure-Python parts: --suite shapes' rows, the exact
visible-pair count behind its TOPS, the ratio's baseline, and the readers of
results.json (bench/readme_table.py, bench/compare_runs.py) on suite rows.
Needs neither torch nor a GPU: the suite is listed where the lead's GPU run
cannot be, and a mistake in its row list costs a whole GPU run.

    python3 tests/bench_suite.py
"""
import contextlib
import importlib.util
import io
import itertools
import json
import os
import subprocess
import sys
import tempfile
import unittest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(REPO, "bench")
sys.path.insert(0, BENCH)


def load(name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(BENCH, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


attention = load("attention")
readme_table = load("readme_table")
compare_runs = load("compare_runs")


def brute_visible(nq, nk, alignment):
    offset = nk - nq if alignment == "bottom-right" else 0
    return sum(1 for i, j in itertools.product(range(nq), range(nk)) if j <= i + offset)


def fake_rows():
    """Rows as run_config makes them, with made-up times: cuDNN 1 ms, flash
    absent where it takes no mask, mxattn 0.9 ms."""
    rows = []
    for cfg in attention.suite_configs(attention.SUITE_GROUPS):
        config_rows = []
        for name, ms in (("sdpa-cudnn", 1.0), ("sdpa-flash", 1.1), ("f16", 0.9)):
            row = attention.base_row(name, cfg, [None, None])
            if name == "sdpa-flash" and attention.needs_mask(cfg):
                row["error"] = "n/a: sdpa-flash does not run a boolean attn_mask"
            else:
                row["cos"], row["rel_l1"] = 0.9999, 0.01
                attention.finish(row, cfg, [ms])
            config_rows.append(row)
        attention.add_ratios(config_rows, fallback="sdpa-flash")
        rows += config_rows
    return rows


class SuiteRows(unittest.TestCase):
    def test_groups_and_count(self):
        cfgs = list(attention.suite_configs(attention.SUITE_GROUPS))
        counts = {g: sum(c["group"] == g for c in cfgs) for g in attention.SUITE_GROUPS}
        self.assertEqual(counts, {"headdims": 24, "short": 8, "cross": 6, "gqa": 8, "decode": 12})
        self.assertEqual(len({attention.config_label(c) for c in cfgs}), len(cfgs))

    def test_seq_len_only_where_equal(self):
        for cfg in attention.suite_configs(attention.SUITE_GROUPS):
            equal = cfg["seq_q"] == cfg["seq_k"]
            self.assertEqual(cfg["seq_len"], cfg["seq_q"] if equal else None)

    def test_decode_is_bottom_right_only_where_nq_above_one(self):
        for cfg in attention.suite_configs(["decode"]):
            self.assertEqual(cfg["causal"], cfg["seq_q"] > 1)
            self.assertEqual(attention.needs_mask(cfg), cfg["seq_q"] > 1)
            self.assertEqual(cfg["alignment"], "bottom-right")

    def test_groups_pick_a_subset(self):
        groups = {c["group"] for c in attention.suite_configs(["gqa", "cross"])}
        self.assertEqual(groups, {"gqa", "cross"})

    def test_list_runs_without_torch(self):
        out = subprocess.run([sys.executable, os.path.join(BENCH, "attention.py"), "--suite",
                              "shapes", "--list"], capture_output=True, text=True, check=True)
        self.assertIn("58 problems x 4 implementations", out.stdout)
        self.assertIn("decode B16 H32/8 D128 Nq16 Nk32768 causal-br", out.stdout)

    def test_tuned_db_times_each_family_twice(self):
        with tempfile.NamedTemporaryFile(suffix=".db") as db:
            out = subprocess.run([sys.executable, os.path.join(BENCH, "attention.py"), "--suite", "shapes", "--groups", "cross",
                                  "--list", "--tuned-db", db.name, "--extra", "f16[variant=mma]"],
                                 capture_output=True, text=True, check=True).stdout
        self.assertIn("(sdpa-cudnn, sdpa-flash, f16, f16 tuned, int8-fp8, int8-fp8 tuned, "
                      "f16[variant=mma])", out)
        missing = subprocess.run([sys.executable, os.path.join(BENCH, "attention.py"), "--suite", "shapes", "--list",
                                  "--tuned-db", "/nonexistent/x.db"], capture_output=True, text=True)
        self.assertEqual(missing.returncode, 2)
        self.assertIn("no such file", missing.stderr)


class Flops(unittest.TestCase):
    def test_visible_pairs_exact_where_nq_differs(self):
        for nq, nk, alignment in ((4, 64, "bottom-right"), (16, 100, "bottom-right"),
                                  (7, 20, "top-left"), (30, 20, "bottom-right")):
            cfg = dict(seq_q=nq, seq_k=nk, causal=True, alignment=alignment)
            self.assertEqual(attention.visible_pairs(cfg), brute_visible(nq, nk, alignment))

    def test_square_causal_is_halved_as_before(self):
        cfg = dict(batch=4, heads=32, head_dim=128, seq_q=4096, seq_k=4096, causal=True,
                   alignment="top-left")
        self.assertEqual(attention.tops(cfg, 1.0), 4 * 4 * 32 * 4096 * 4096 * 128 / 2 / 1e-3 / 1e12)

    def test_kv_bandwidth(self):
        cfg = dict(batch=16, heads_kv=32, seq_k=32768, head_dim=128)
        self.assertAlmostEqual(attention.kv_tbps(cfg, 1.0), 2 * 16 * 32 * 32768 * 128 * 2 / 1e9)


class Ratios(unittest.TestCase):
    def test_ratio_uses_the_unrounded_baseline(self):
        rows = [dict(family="sdpa-cudnn", tops=8.04, ms=1.0), dict(family="f16", tops=8.04, ms=1.0)]
        attention.add_ratios(rows)
        self.assertEqual(rows[1]["ratio_vs_cudnn"], 1.0)  # 8.04 / 8.0 would be 1.005

    def test_flash_stands_in_where_cudnn_did_not_run(self):
        cfg = next(attention.suite_configs(["headdims"]))
        rows = [attention.base_row(n, cfg, []) for n in ("sdpa-cudnn", "sdpa-flash", "f16")]
        rows[0]["error"] = "n/a"
        for row, ms in zip(rows[1:], (2.0, 1.0)):
            attention.finish(row, cfg, [ms])
        attention.add_ratios(rows, fallback="sdpa-flash")
        self.assertEqual((rows[2]["ratio_vs_cudnn"], rows[2]["ratio_baseline"]), (2.0, "sdpa-flash"))


class Readers(unittest.TestCase):
    def test_readme_table_keeps_grouped_rows_apart(self):
        rows = json.loads(json.dumps(fake_rows()))
        table = readme_table.speed_table(rows)
        self.assertEqual(len(table.splitlines()), 2 + 58)
        self.assertIn("| gqa | 4 | 32 | 1 | 128 | 4096 | 4096 | no |", table)
        self.assertIn("TB/s", table)
        readme_table.accuracy_table(rows)  # seq_len None rows must not break max()

    def test_compare_runs_keys_are_distinct(self):
        rows = [r for r in fake_rows() if r["tops"]]
        self.assertEqual(len({compare_runs.key(r) for r in rows}), len(rows))
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "results.json")
            with open(path, "w") as f:
                json.dump(rows, f)
            out = io.StringIO()
            sys.argv = ["compare_runs.py", path, path]
            with contextlib.redirect_stdout(out):
                compare_runs.main()
            self.assertIn(f"{len(rows)} rows with the same kernel", out.getvalue())

    def test_suite_markdown(self):
        env = dict(suite="shapes", groups=list(attention.SUITE_GROUPS), device="d", date="x",
                   torch="t", cuda="c", cudnn=1, triton=None, mxattn="m", mxattn_lib="l",
                   command="c", timer="t", copy_tbps=4.2)
        with tempfile.TemporaryDirectory() as folder:
            attention.write_markdown(folder, env, fake_rows(), 1.0, 1.0)
            with open(os.path.join(folder, "results.md")) as f:
                text = f.read()
        self.assertIn("4.20 TB/s", text)
        self.assertEqual(sum(line.startswith("| decode |") for line in text.splitlines()), 36)


if __name__ == "__main__":
    unittest.main()
