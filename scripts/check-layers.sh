#!/usr/bin/env bash
# Fails when a library source includes a public header of a layer above it.
# The layers, bottom up (docs/architecture.md):
#   core        formats, op table, kernel descriptors, contracts, input families
#   oracle      MPFR oracle, fast tiers, metrics, the row verdict   -> core
#   impls       kernels, registry, plugin loader                    -> core
#   properties  generators and property checks                      -> core oracle impls
#   reports     report model, readers and writers, gate             -> core
#   suite       the run-suite engine                                -> core oracle impls properties reports
#   compare     outputs computed elsewhere, judged as run judges     -> core oracle impls reports
#   fuzz        fuzz targets and their library                      -> core oracle impls properties suite
#   cli         the softcheck command                               -> everything
#   python      the Python module (pybind11)                        -> core oracle impls reports compare
# A public header belongs to the layer whose include/softcheck/ holds it.
# Tests, benchmarks and measuring tools (tests/, bench/, examples/, tools/)
# may use any layer below cli: they check a layer against the oracle
# (impls/tools/exp_lab_sweep measures impls' exp primitives with MPFR).
# Usage: check-layers.sh [ROOT]   (default: the repository holding this script)
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}

declare -A allowed=(
  [core]="core"
  [oracle]="core oracle"
  [impls]="core impls"
  [properties]="core oracle impls properties"
  [reports]="core reports"
  [suite]="core oracle impls properties reports suite"
  [compare]="core oracle impls reports compare"
  [fuzz]="core oracle impls properties reports suite fuzz"
  [cli]="core oracle impls properties reports suite fuzz compare cli"
  [python]="core oracle impls reports compare python"
)

declare -A owner=()
for layer in "${!allowed[@]}"; do
  [[ -d $root/$layer/include/softcheck ]] || continue
  while IFS= read -r -d '' h; do
    owner[$(basename "$h")]=$layer
  done < <(find "$root/$layer/include/softcheck" -type f -print0)
done

bad=0 checked=0
for layer in "${!allowed[@]}"; do
  [[ -d $root/$layer ]] || continue
  while IFS= read -r -d '' f; do
    checked=$((checked + 1))
    while IFS= read -r inc; do
      h=${inc#softcheck/}
      dep=${owner[$h]:-}
      [[ -z $dep ]] && continue  # softcheck/version.hpp (generated) and the like
      if [[ " ${allowed[$layer]} " != *" $dep "* ]]; then
        echo "check-layers: ${f#"$root"/} ($layer) includes softcheck/$h from $dep, a layer above it" >&2
        bad=$((bad + 1))
      fi
    done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]\(softcheck\/[^">]*\)[">].*/\1/p' "$f")
  done < <(find "$root/$layer" \( -path '*/tests/*' -o -path '*/bench/*' -o -path '*/examples/*' -o -path '*/tools/*' \) -prune -o \
             -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) -print0)
done
if ((bad > 0)); then
  echo "check-layers: $bad upward include(s) in $checked files" >&2
  exit 1
fi
echo "check-layers: $checked library files, every include points to the same layer or one below"
