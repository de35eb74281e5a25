#!/usr/bin/env bash
# Users' kernels in the fuzz targets (SOFTCHECK_FUZZ_PLUGIN, docs/fuzzing.md),
# through the replay builds of the targets: the misbehaving test plugin's
# kernels join the pool; a plugin kernel that writes NaN, crashes, exits or
# fails is reported by name with its plugin, and the printed repro line loads
# the plugin and replays through `softcheck`; an unusable plugin stops the
# target at start-up with exit 2.
#   plugin_in_fuzzer.sh FUZZ_NAN_INF FUZZ_DIFFERENTIAL SOFTCHECK TEST_PLUGIN_DIR INPUT
# INPUT (fuzz/tests/plugin/tp_nan_f32-softmax) is a softmax of tp_nan_f32 on
# [1, 2, 3] when that plugin is in the pool, and of a built-in kernel, which
# passes, when it is not (FuzzPool.ThePluginTestInputPicksTheNaNKernelOnlyWithThePlugin).
set -u
nan_inf=$1 differential=$2 bin=$3 plugins=$4 input=$5
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../../cli/tests/lib.sh"
ulimit -c 0  # the crash cases below must not leave core files

lib() { echo "$plugins/libtest_plugin_$1.so"; }
misbehaving=$(lib misbehaving)

# The repro line a fuzz target printed (in FILE), replayed through softcheck:
# it must load the plugin itself and fail (exit 1) with TEXT in its output.
replays() {
  local name=$1 file=$2 text=$3 line words
  line=$(grep -o 'softcheck repro .*' "$file" | head -1)
  if [[ -z $line ]]; then echo "FAIL $name: no repro line"; failures=$((failures + 1)); return; fi
  read -ra words <<<"$line"
  check_all "$name" 1 "$text" -- "$bin" "${words[@]:1}"
}

# Without the plugin the input is a built-in kernel's, which holds: the checks
# below can only pass because the plugin's kernel was fuzzed.
check_all control_without_plugin 0 "replayed 1 inputs, no crash" -- env -u SOFTCHECK_FUZZ_PLUGIN "$nan_inf" "$input"

# The plugin's kernels join the pool (said once, at start-up); the NaN kernel
# is caught, named with its plugin, and its repro line loads the plugin.
env SOFTCHECK_FUZZ_PLUGIN="$misbehaving" "$nan_inf" "$input" >"$tmp/nan.txt" 2>&1
echo "exit $?" >>"$tmp/nan.txt"
check_all nan_kernel_caught 0 "exit 134" \
  "softcheck-fuzz: plugin $misbehaving (called in process): 7 kernels joined the pool: tp_ok_f32, tp_fails_f32, tp_nan_f32," \
  "==softcheck-fuzz== INVARIANT VIOLATED" "kernel:      tp_nan_f32 (f32" "plugin:      $misbehaving" \
  "property:    no_nonfinite" \
  "repro: softcheck repro --plugin $misbehaving --impl tp_nan_f32 --op softmax --property no_nonfinite --temperature=0x1p+0 --row=0x1p+0,0x1p+1,0x1.8p+1" \
  -- cat "$tmp/nan.txt"
[[ $(grep -c 'joined the pool' "$tmp/nan.txt") -eq 1 ]] && pass=$((pass + 1)) ||
  { echo "FAIL banner_once: $(grep -c 'joined the pool' "$tmp/nan.txt") banners"; failures=$((failures + 1)); }
replays nan_repro_replays "$tmp/nan.txt" "non-finite output nan"

# Two plugins, ':'-separated: both join.
check_all two_plugins 134 "1 kernel joined the pool: v2test_shifted_f64" "kernel:      tp_nan_f32" -- \
  env SOFTCHECK_FUZZ_PLUGIN="$misbehaving:$(lib lse_v2)" "$nan_inf" "$input"

# Failures inside a plugin kernel, each the only kernel of the pool (planted
# mode names plugin kernels too): the report names the kernel, the plugin and
# the failure, with a repro line per row of the failing call.
fail_case() {  # fail_case NAME RC KERNEL TEXT [ENV...]
  local name=$1 rc=$2 kernel=$3 text=$4; shift 4
  env "$@" SOFTCHECK_FUZZ_PLANTED="$kernel" SOFTCHECK_FUZZ_PLUGIN="$misbehaving" "$nan_inf" "$input" >"$tmp/$name.txt" 2>&1
  echo "exit $?" >>"$tmp/$name.txt"
  check_all "$name" 0 "exit $rc" "==softcheck-fuzz== PLUGIN KERNEL FAILED: $kernel of $misbehaving" \
    "plugin:      $misbehaving" "failure:     $text" "row 0 (n=3): 0x1p+0,0x1p+1,0x1.8p+1" \
    "repro: softcheck repro --plugin $misbehaving" "--impl $kernel --op softmax --property batch_independence" \
    -- cat "$tmp/$name.txt"
}
# In process: a crash is reported by the handler in front of the default
# action (the process still dies of the signal); the repro line adds --isolate.
fail_case segv_in_process 139 tp_segv_f32 "crashed with signal 11 (SIGSEGV) in this process"
replays segv_repro_replays "$tmp/segv_in_process.txt" "crashed with signal 11 (SIGSEGV)"
fail_case abort_in_process 134 tp_abort_f32 "crashed with signal 6 (SIGABRT) in this process"
# exit() inside the kernel: reported, and the replay fails (exit 3 would be
# the kernel's status; exit(0) would have read as a clean replay).
fail_case exit_in_process 1 tp_exit_f32 "called exit() during this call"
check_all exit_fails_replay 0 "==replay== the target called exit() while replaying" -- cat "$tmp/exit_in_process.txt"
replays exit_repro_replays "$tmp/exit_in_process.txt" "the isolated process exited with status 3"
fail_case nonzero_return 134 tp_fails_f32 "plugin kernel 'tp_fails_f32' (softmax): run returned 7"
replays nonzero_repro_replays "$tmp/nonzero_return.txt" "run returned 7"
# Isolated (each call in a child): the crash comes back as the kernel's failure.
fail_case segv_isolated 134 tp_segv_f32 "plugin kernel 'tp_segv_f32' (softmax): crashed with signal 11 (SIGSEGV)" \
  SOFTCHECK_FUZZ_PLUGIN_ISOLATE=1
check_all isolated_banner 0 "(each call in a child process)" -- cat "$tmp/segv_isolated.txt"

# An unusable plugin stops the target at start-up (exit 2), never a smaller pool.
check_all missing_plugin 2 "softcheck-fuzz: SOFTCHECK_FUZZ_PLUGIN: plugin '$tmp/nope.so': no such file" -- \
  env SOFTCHECK_FUZZ_PLUGIN="$tmp/nope.so" "$nan_inf" "$input"
check_all one_of_two_missing 2 "plugin '$tmp/nope.so': no such file" -- \
  env SOFTCHECK_FUZZ_PLUGIN="$misbehaving:$tmp/nope.so" "$nan_inf" "$input"
check_all no_kernels 2 "plugin '$(lib no_kernels)': declares no kernels" -- \
  env SOFTCHECK_FUZZ_PLUGIN="$(lib no_kernels)" "$nan_inf" "$input"
check_all no_entry_point 2 "does not export softcheck_plugin_kernels" -- \
  env SOFTCHECK_FUZZ_PLUGIN="$(lib no_entry)" "$differential" "$input"
check_all no_contract_for_differential 2 \
  "no kernel of plugin $(lib no_contract) has an op with a declared contract" -- \
  env SOFTCHECK_FUZZ_PLUGIN="$(lib no_contract)" "$differential" "$input"
check_all bad_isolate_value 2 "SOFTCHECK_FUZZ_PLUGIN_ISOLATE must be 0 or 1, got 'yes'" -- \
  env SOFTCHECK_FUZZ_PLUGIN="$misbehaving" SOFTCHECK_FUZZ_PLUGIN_ISOLATE=yes "$nan_inf" "$input"

finish plugin_in_fuzzer
