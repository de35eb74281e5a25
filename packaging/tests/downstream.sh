#!/usr/bin/env bash
# softcheck as a package another CMake project consumes:
#   1. `cmake --install` of this build into a temporary prefix installs the
#      executables, the plugin header, the CMake package, softcheck.pc, the
#      example plugin's source and the docs, with no path of the build or
#      source tree in the package files;
#   2. find_package(softcheck) gives the targets and the version check it
#      documents, and pkg-config's Cflags build the installed example plugin,
#      which the installed softcheck loads;
#   3. packaging/tests/downstream, configured with only CMAKE_PREFIX_PATH, finds
#      that install (not another one), builds a correct plugin and a broken
#      twin with the same kernel name, and its two softcheck_add_gate_test
#      tests against a baseline of the correct one give exactly one pass (the
#      correct build) and one failure (the broken build, its regression named),
#      each writing its JUnit file;
#   4. with Google Benchmark, `softcheck bench` from the install tree finds the
#      installed softcheck_bench and writes bench.json.
# Usage: downstream.sh CMAKE CTEST BUILD_DIR TESTS_DIR HAVE_BENCH(0|1) BINDIR INCLUDEDIR DOCDIR [C_COMPILER]
# (the directories as CMAKE_INSTALL_* name them, relative to the prefix)
set -euo pipefail
cmake=$1 ctest=$2 build=$3 tests=$4 have_bench=$5 bindir=$6 includedir=$7 docdir=$8 cc=${9:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$tests/../../cli/tests/lib.sh"
set +e  # lib.sh's checks judge exit statuses themselves
prefix=$tmp/prefix
source_dir=$(cd "$tests/../.." && pwd)

check install 0 '' -- "$cmake" --install "$build" --prefix "$prefix"
config=$(find "$prefix" -name softcheckConfig.cmake -print -quit)
pc=$(find "$prefix" -name softcheck.pc -print -quit)
check config_installed 0 '' -- test -n "$config"
check pc_installed 0 '' -- test -n "$pc"
cmakedir=$(dirname "$config")
for f in "$bindir/softcheck" "$includedir/softcheck/softcheck_plugin.h" "$docdir/examples/example_plugin.c" \
         "$docdir/README.md" "$docdir/gate.md" "$docdir/gating-your-kernel.md" "$docdir/plugin-abi.md"; do
  check "installed:$f" 0 '' -- test -f "$prefix/$f"
done
for f in softcheckConfigVersion.cmake softcheckTargets.cmake SoftcheckGateTest.cmake SoftcheckGateTestRun.cmake; do
  check "installed:$f" 0 '' -- test -f "$cmakedir/$f"
done
if [[ $have_bench == 1 ]]; then
  check installed:softcheck_bench 0 '' -- test -x "$prefix/$bindir/softcheck_bench"
else
  absent installed:no_softcheck_bench "$prefix/$bindir/softcheck_bench"
fi
# Relocatable: nothing in the package files points back at the build or the sources.
check no_build_paths 1 '' -- grep -rlF -e "$build" -e "$source_dir" -e "$prefix" "$cmakedir" "$pc"

# find_package: the version file, softcheck::plugin with the include directory
# only, the executables as imported targets, the optional component bench.
version=$(sed -n 's/^Version: //p' "$pc")
find_softcheck() {  # find_softcheck BUILD_NAME VERSION COMPONENTS (CMake's messages as one line)
  "$cmake" -S "$tests/find-package" -B "$tmp/$1" -DCMAKE_PREFIX_PATH="$prefix" -DWANT_VERSION="$2" \
    -DWANT_COMPONENTS="$3" 2>&1 | tr -s ' \n' ' '
}
check_all find_package 0 "softcheck $version at $cmakedir" \
  "softcheck::plugin: INTERFACE_LIBRARY, includes [$prefix/$includedir], options [options-NOTFOUND], links [links-NOTFOUND]" \
  'softcheck::softcheck: EXECUTABLE, imported TRUE' -- find_softcheck fp "${version%.*}" ''
check_all find_package_softcheck_path 0 "$prefix/$bindir/softcheck" -- cat "$tmp/fp/softcheck.path"
check find_package_newer_version 1 'compatible with requested version "99.0"' -- find_softcheck fp-99 99.0 ''
if [[ $have_bench == 1 ]]; then
  check find_package_bench 0 'softcheck::softcheck_bench: EXECUTABLE, imported TRUE' -- find_softcheck fp-bench '' bench
  check_all find_package_bench_path 0 "$prefix/$bindir/softcheck_bench" -- cat "$tmp/fp-bench/softcheck_bench.path"
else
  check find_package_no_bench 1 'component bench: this softcheck was built without Google Benchmark' -- \
    find_softcheck fp-bench '' bench
fi

# pkg-config: the installed example plugin builds with its Cflags alone and loads.
export PKG_CONFIG_PATH=$(dirname "$pc")
check_all pc_version 0 "$version" -- pkg-config --modversion softcheck
check pc_softcheck_variable 0 '' -- test -x "$(pkg-config --variable=softcheck softcheck)"
check pc_build_example 0 '' -- sh -c "${cc:-cc} -shared -fPIC -O2 -ffp-contract=off \$(pkg-config --cflags softcheck) \
  '$prefix/$docdir/examples/example_plugin.c' -lm -o '$tmp/libexample.so'"
check_all pc_example_loads 0 example_softmax_f32 example_flawed_f32 -- \
  "$prefix/$bindir/softcheck" list --plugin "$tmp/libexample.so"

# The downstream project, against the install alone.
down=$tmp/downstream
check downstream_configure 0 '' -- "$cmake" -S "$tests/downstream" -B "$down" -DCMAKE_PREFIX_PATH="$prefix" \
  -DDOWNSTREAM_BASELINE="$tmp/baseline/report.json" ${cc:+-DCMAKE_C_COMPILER="$cc"}
check_all downstream_found_this_install 0 "softcheck_DIR:PATH=$cmakedir" -- cat "$down/CMakeCache.txt"
check downstream_build 0 '' -- "$cmake" --build "$down" -j 2
check baseline 0 '' -- "$prefix/$bindir/softcheck" run --plugin "$down/libdownstream_softmax_correct.so" \
  --impl downstream_softmax_f32 --family xnnpack_u90_100 --family normal_s10 --size 31 --size 100 \
  --seed 3 --property-tests 20 --jobs 2 --quiet --out "$tmp/baseline"

# Exactly one pass and one failure, each the expected one, the regression named.
out=$("$ctest" --test-dir "$down" --output-on-failure 2>&1); rc=$?
if [[ $rc -eq 0 ]]; then
  echo "FAIL inner_ctest: exit 0, wanted a failure (the broken kernel)"; echo "$out" | tail -40; failures=$((failures + 1))
else
  pass=$((pass + 1))
fi
check_all inner_counts 0 '50% tests passed, 1 tests failed out of 2' -- echo "$out"
check inner_correct_passed 0 'downstream\.gate_correct \.+ +Passed' -- echo "$out"
check inner_broken_failed 0 'downstream\.gate_broken \.+\**Failed' -- echo "$out"
check inner_regression_named 0 'downstream_softmax_f32 +softmax +\[(contract|nonfinite)\]' -- echo "$out"
check inner_gate_verdict 0 'softcheck gate exited 1 \(a regression' -- echo "$out"
check junit_correct 0 'failures="0"' -- cat "$down/gate-correct.xml"
check junit_broken 0 'failures="[1-9]' -- cat "$down/softcheck-gate/downstream_gate_broken.xml"

if [[ $have_bench == 1 ]]; then
  check bench_from_install 0 '' -- "$prefix/$bindir/softcheck" bench --impl shifted_f32 --min-time 0.01 --quiet \
    --out "$tmp/bench"
  check bench_json 0 '' -- test -s "$tmp/bench/bench.json"
fi

finish packaging.downstream
