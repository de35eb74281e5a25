#!/usr/bin/env bash
# `cpack -G DEB` on this build, in a temporary directory: one .deb named
# softcheck with the project's version, Depends filled in by dpkg-shlibdeps,
# and the files a consumer needs at their /usr paths: bin/softcheck (and
# bin/softcheck_bench when Google Benchmark was found), the plugin header, the
# CMake package, softcheck.pc and the example plugin's source.
# Usage: cpack_deb.sh CPACK BUILD_DIR HAVE_BENCH(0|1) BINDIR INCLUDEDIR LIBDIR CMAKEDIR DOCDIR
set -euo pipefail
cpack=$1 build=$2 have_bench=$3 bindir=$4 includedir=$5 libdir=$6 cmakedir=$7 docdir=$8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "${BASH_SOURCE[0]}")/../../cli/tests/lib.sh"

if ! command -v dpkg-deb >/dev/null; then
  echo "FAIL: dpkg-deb not found: this test reads the .deb with it (Debian: package dpkg)"
  exit 1
fi
set +e  # lib.sh's checks judge exit statuses themselves

check cpack 0 'package: .*\.deb generated' -- "$cpack" -G DEB --config "$build/CPackConfig.cmake" -B "$tmp"
debs=("$tmp"/*.deb)
if [[ ${#debs[@]} -ne 1 || ! -f ${debs[0]} ]]; then
  echo "FAIL one_deb: wanted one .deb in $tmp, found: ${debs[*]}"; finish packaging.cpack_deb; exit
fi
deb=${debs[0]}
version=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")$/\1/p' "$build/CPackConfig.cmake")
check_all control 0 'Package: softcheck' "Version: $version" 'Section: devel' 'Maintainer: softcheck maintainers' -- \
  dpkg-deb -f "$deb"
check shlibdeps 0 '^Depends: .*libc6' -- dpkg-deb -f "$deb"

dpkg-deb -c "$deb" | awk '{print $NF}' >"$tmp/files"
want=("$bindir/softcheck" "$includedir/softcheck/softcheck_plugin.h"
      "$cmakedir/softcheckConfig.cmake" "$cmakedir/softcheckConfigVersion.cmake" "$cmakedir/softcheckTargets.cmake"
      "$cmakedir/SoftcheckGateTest.cmake" "$cmakedir/SoftcheckGateTestRun.cmake"
      "$libdir/pkgconfig/softcheck.pc" "$docdir/examples/example_plugin.c" "$docdir/README.md" "$docdir/gate.md")
[[ $have_bench == 1 ]] && want+=("$bindir/softcheck_bench")
for f in "${want[@]}"; do
  check "lists:$f" 0 '' -- grep -qxF "./usr/$f" "$tmp/files"
done
if [[ $have_bench != 1 ]]; then
  check no_softcheck_bench 1 '' -- grep -qxF "./usr/$bindir/softcheck_bench" "$tmp/files"
fi

finish packaging.cpack_deb
