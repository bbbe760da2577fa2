#!/usr/bin/python3
"""scripts/check-layering.py on planted trees: a clean tree passes, every upward include fails
naming the file and line. Runs under CTest (layering_check_catches_violations), plain python3 or
pytest."""

import os
import subprocess
import sys
import tempfile
import unittest

SCRIPT = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    "scripts",
    "check-layering.py",
)

# A tiny tree of every kind of file the check ranks, every include in it allowed.
CLEAN = {
    "include/attnrt/version.h": "#pragma once\n#define ATTNRT_VERSION \"0.0.0\"\n",
    "include/attnrt/attnrt.h": (
        '#pragma once\n#include "attnrt/version.h"\n#include "attnrt/core/error.h"\n'
        '#include "attnrt/engine/engine.h"\n'
    ),
    "include/attnrt/core/error.h": (
        '#pragma once\n#include <string>\n#include "attnrt/version.h"\n'
    ),
    "include/attnrt/core/tensor.h": '#pragma once\n#include "error.h"\n',
    "include/attnrt/kv/block_copy.h": '#pragma once\n#include "attnrt/core/tensor.h"\n',
    "include/attnrt/engine/engine.h": (
        '#pragma once\n#include "attnrt/kv/block_copy.h"\n#include <attnrt/core/error.h>\n'
    ),
    "src/core/fail.h": '#pragma once\n#include <fmt/format.h>\n#include "attnrt/core/error.h"\n',
    "src/core/fail.cc": '#include "core/fail.h"\n',
    "src/kv/block_copy.cc": (
        '#include "attnrt/kv/block_copy.h"\n\n#include <vector>\n\n#include "core/fail.h"\n'
    ),
    "src/backends/cpu_backend_checks.h": '#pragma once\n#include "kv/copy_rows.h"\n',
    "src/kv/copy_rows.h": "#pragma once\n",
    "src/backends/cpu_flash/flash_types.h": '#pragma once\n#include "attnrt/core/tensor.h"\n',
    "src/backends/cpu_flash/flash_gemv-inl.h": '#include "flash_types.h"\n',
    "src/backends/cpu_flash/flash_forward.cc": (
        '#include "flash_types.h"\n#include "../cpu_backend_checks.h"\n'
        '#undef HWY_TARGET_INCLUDE\n'
        '#define HWY_TARGET_INCLUDE "../src/backends/cpu_flash/flash_forward.cc"\n'
        '#include "hwy/foreach_target.h"\n#include "hwy/highway.h"\n'
        '#include "flash_gemv-inl.h"\n#include "backends/cpu_flash/flash_types.h"\n'
    ),
    "src/engine/engine.cpp": (
        '#include "attnrt/engine/engine.h"\n#include "backends/cpu_backend_checks.h"\n'
        '#include "attnrt/version.h"\n'
    ),
    "tools/attnrt/plan_report.h": '#pragma once\n#include "attnrt/engine/engine.h"\n',
    "tools/attnrt/main.cc": (
        '#include "plan_report.h"\n#include "attnrt/attnrt.h"\n'
        '#include "engine/engine_workload.h"\n'
    ),
    "src/engine/engine_workload.h": '#pragma once\n#include "attnrt/engine/engine.h"\n',
    "bench/step_bench.cc": '#include "../tools/attnrt/plan_report.h"\n#include "attnrt/attnrt.h"\n',
    "fuzz/fuzz_support.h": '#pragma once\n#include "core/fail.h"\n',
    "fuzz/fuzz_plan.cc": '#include "fuzz_support.h"\n#include "plan_report.h"\n',
    "python/src/bindings.hpp": '#pragma once\n#include "attnrt/attnrt.h"\n',
    "python/src/module.cc": '#include "bindings.hpp"\n',
    "python/attnrt/__init__.py": "# not C++\n",
}


class CheckLayeringTest(unittest.TestCase):
    def run_check(self, changes):
        """Runs the check over CLEAN with `changes` applied (path -> text, None deletes)."""
        files = dict(CLEAN)
        for path, text in changes.items():
            if text is None:
                files.pop(path, None)
            else:
                files[path] = text
        with tempfile.TemporaryDirectory() as root:
            for path, text in files.items():
                full = os.path.join(root, path)
                os.makedirs(os.path.dirname(full), exist_ok=True)
                with open(full, "w", encoding="utf-8") as handle:
                    handle.write(text)
            result = subprocess.run(
                [sys.executable, SCRIPT, root], capture_output=True, text=True, check=False
            )
        self.assertEqual(result.stderr, "")
        return result

    def assert_fails(self, changes, *expected_lines):
        result = self.run_check(changes)
        self.assertEqual(result.returncode, 1, result.stdout)
        violations = [line for line in result.stdout.splitlines() if "violation" not in line]
        self.assertEqual(violations, list(expected_lines), result.stdout)

    def test_clean_tree_passes(self):
        result = self.run_check({})
        self.assertEqual(result.returncode, 0, result.stdout)
        lines = result.stdout.splitlines()
        self.assertEqual(len(lines), 1, result.stdout)
        # Every C++ file is scanned (not the .py), each of its includes counted.
        self.assertEqual(lines[0], "layering: 23 files and 40 includes checked, 0 violations")

    def test_internal_form_upward_include_fails(self):
        self.assert_fails(
            {"src/kv/block_copy.cc": '#include "core/fail.h"\n\n#include "engine/engine.h"\n'},
            'layering: src/kv/block_copy.cc:3: kv includes "engine/engine.h" (engine)',
        )

    def test_internal_form_resolving_to_a_file_fails(self):
        self.assert_fails(
            {"src/kv/block_copy.cc": '#include "engine/engine_workload.h"\n'},
            'layering: src/kv/block_copy.cc:1: kv includes "engine/engine_workload.h" (engine)',
        )

    def test_public_form_upward_include_fails(self):
        self.assert_fails(
            {"src/kv/block_copy.cc": '#include "attnrt/engine/engine.h"\n'},
            'layering: src/kv/block_copy.cc:1: kv includes "attnrt/engine/engine.h" (engine)',
        )

    def test_angle_form_upward_include_fails(self):
        self.assert_fails(
            {"src/core/fail.cc": "#include <attnrt/kv/block_copy.h>\n"},
            "layering: src/core/fail.cc:1: core includes <attnrt/kv/block_copy.h> (kv)",
        )

    def test_public_header_upward_include_fails(self):
        self.assert_fails(
            {"include/attnrt/core/tensor.h": '#pragma once\n#include "attnrt/kv/block_copy.h"\n'},
            'layering: include/attnrt/core/tensor.h:2: core includes "attnrt/kv/block_copy.h" (kv)',
        )

    def test_relative_include_out_of_the_layer_fails(self):
        self.assert_fails(
            {"src/backends/cpu_flash/flash_types.h": '#include "../../runner/x.h"\n',
             "src/runner/x.h": "#pragma once\n"},
            'layering: src/backends/cpu_flash/flash_types.h:1: backends includes '
            '"../../runner/x.h" (runner)',
        )

    def test_relative_include_wins_over_src(self):
        # "kv/copy_rows.h" next to the including file is that file's own layer, not src/kv/.
        result = self.run_check(
            {"src/runner/plan.cc": '#include "kv/copy_rows.h"\n',
             "src/runner/kv/copy_rows.h": "#pragma once\n",
             "src/core/use.cc": '#include "kv/copy_rows.h"\n'}
        )
        self.assertEqual(result.returncode, 1)
        self.assertEqual(
            result.stdout.splitlines()[0],
            'layering: src/core/use.cc:1: core includes "kv/copy_rows.h" (kv)',
        )
        self.assertNotIn("src/runner/plan.cc", result.stdout)

    def test_src_including_a_tools_header_fails(self):
        self.assert_fails(
            {"src/engine/engine.cpp": (
                '#include "attnrt/engine/engine.h"\n#include "plan_report.h"\n'),
             "src/runner/a.cc": '#include "../../tools/attnrt/plan_report.h"\n',
             "include/attnrt/engine/engine.h": (
                 '#pragma once\n#include "attnrt/plan_report.h"\n')},
            'layering: include/attnrt/engine/engine.h:2: engine includes '
            '"attnrt/plan_report.h" (tools)',
            'layering: src/engine/engine.cpp:2: engine includes "plan_report.h" (tools)',
            'layering: src/runner/a.cc:1: runner includes '
            '"../../tools/attnrt/plan_report.h" (tools)',
        )

    def test_src_including_bench_python_or_fuzz_headers_fails(self):
        self.assert_fails(
            {"src/config/a.cc": '#include "fuzz_support.h"\n#include "bindings.hpp"\n',
             "bench/bench_cases.h": "#pragma once\n",
             "src/config/b.cc": '#include "bench_cases.h"\n'},
            'layering: src/config/a.cc:1: config includes "fuzz_support.h" (fuzz, top)',
            'layering: src/config/a.cc:2: config includes "bindings.hpp" (python, top)',
            'layering: src/config/b.cc:1: config includes "bench_cases.h" (bench, top)',
        )

    def test_library_including_the_umbrella_fails(self):
        self.assert_fails(
            {"src/engine/engine.cpp": '#include "attnrt/attnrt.h"\n',
             "include/attnrt/kv/block_copy.h": '#pragma once\n#include <attnrt/attnrt.h>\n'},
            "layering: include/attnrt/kv/block_copy.h:2: kv includes <attnrt/attnrt.h> "
            "(umbrella attnrt/attnrt.h)",
            'layering: src/engine/engine.cpp:1: engine includes "attnrt/attnrt.h" '
            "(umbrella attnrt/attnrt.h)",
        )

    def test_version_h_includes_no_layer(self):
        self.assert_fails(
            {"include/attnrt/version.h": '#pragma once\n#include "attnrt/core/error.h"\n'},
            'layering: include/attnrt/version.h:2: attnrt/version.h includes '
            '"attnrt/core/error.h" (core)',
        )

    def test_public_header_including_fmt_or_internal_header_fails(self):
        self.assert_fails(
            {"include/attnrt/engine/engine.h": (
                '#pragma once\n#include <fmt/format.h>\n#include "core/fail.h"\n'
                '#include "engine/engine_workload.h"\n')},
            "layering: include/attnrt/engine/engine.h:2: public header includes <fmt/format.h> "
            "(fmt stays out of include/)",
            'layering: include/attnrt/engine/engine.h:3: public header includes "core/fail.h" '
            "(internal: src/core/fail.h)",
            'layering: include/attnrt/engine/engine.h:4: public header includes '
            '"engine/engine_workload.h" (internal: src/engine/engine_workload.h)',
        )

    def test_public_header_including_nlohmann_json_fails(self):
        self.assert_fails(
            {"include/attnrt/runner/plan_json.h": (
                '#pragma once\n#include <nlohmann/json_fwd.hpp>\n#include <nlohmann/json.hpp>\n')},
            "layering: include/attnrt/runner/plan_json.h:3: public header includes "
            "<nlohmann/json.hpp> (only nlohmann/json_fwd.hpp belongs in include/)",
        )

    def test_upward_include_in_an_inl_header_fails(self):
        self.assert_fails(
            {"src/backends/cpu_flash/flash_gemv-inl.h": (
                '#include "flash_types.h"\n#if defined(X)\n#  include "runner/plan.h"\n#endif\n')},
            'layering: src/backends/cpu_flash/flash_gemv-inl.h:3: backends includes '
            '"runner/plan.h" (runner)',
        )

    def test_upward_hwy_target_include_fails(self):
        self.assert_fails(
            {"src/kv/copy_rows.h": '#define HWY_TARGET_INCLUDE "../src/engine/engine.cpp"\n'},
            'layering: src/kv/copy_rows.h:1: kv includes "../src/engine/engine.cpp" (engine)',
        )

    def test_library_file_outside_the_layers_fails(self):
        self.assert_fails(
            {"src/misc/helper.cc": '#include "core/fail.h"\n'},
            "layering: src/misc/helper.cc: outside the layers (a library file belongs in "
            "include/attnrt/<layer>/ or src/<layer>/)",
        )


if __name__ == "__main__":
    unittest.main()
