# Sourced by smoke.sh, planted.sh and speed.sh: the libFuzzer flags of a
# target's $OUT/<target>.options (written by build.sh), so that local runs use
# exactly the options OSS-Fuzz / ClusterFuzzLite read from that file.
#   libfuzzer_options OUT TARGET   prints one -key=value per line
# `dict = NAME` becomes -dict=OUT/NAME (OSS-Fuzz resolves it next to the binary).
libfuzzer_options() {
  local out=$1 t=$2 line key value section=
  [[ -f $out/$t.options ]] || return 0
  while IFS= read -r line || [[ -n $line ]]; do
    line=${line%%#*}
    [[ $line =~ ^[[:space:]]*\[([a-z]+)\] ]] && { section=${BASH_REMATCH[1]}; continue; }
    [[ $section == libfuzzer && $line =~ ^[[:space:]]*([a-z_]+)[[:space:]]*=[[:space:]]*([^[:space:]]*) ]] || continue
    key=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]}
    [[ $key == dict ]] && value=$out/$value
    echo "-$key=$value"
  done <"$out/$t.options"
}
