# Shared by the cli/tests/*.sh end-to-end scripts (sourced, not run): one way
# to run a command and judge its exit status and output, and one summary.
# Each failure prints the command's output, so a CI log says why.
failures=0
pass=0

# check NAME EXPECTED_RC PATTERN -- command...: exit status and an extended
# regular expression the combined output must match ('' for none).
check() {
  local name=$1 want=$2 pattern=$3; shift 4
  local out rc
  out=$("$@" 2>&1); rc=$?
  if [[ $rc -ne $want ]]; then
    echo "FAIL $name: exit $rc, wanted $want"; echo "$out" | tail -30; failures=$((failures + 1)); return
  fi
  if [[ -n $pattern ]] && ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL $name: output lacks /$pattern/"; echo "$out" | tail -30; failures=$((failures + 1)); return
  fi
  pass=$((pass + 1))
}

# check_all NAME EXPECTED_RC [TEXT...] -- command...: every TEXT (a fixed
# string) must appear in the combined output.
check_all() {
  local name=$1 want=$2; shift 2
  local texts=()
  while [[ $1 != -- ]]; do texts+=("$1"); shift; done
  shift
  local out rc why=""
  out=$("$@" 2>&1); rc=$?
  [[ $rc -eq $want ]] || why="exit $rc, wanted $want"
  for t in "${texts[@]}"; do
    [[ -n $why ]] || grep -qF -- "$t" <<<"$out" || why="output lacks '$t'"
  done
  if [[ -n $why ]]; then
    echo "FAIL $name: $why"; echo "$out" | tail -30; failures=$((failures + 1)); return
  fi
  pass=$((pass + 1))
}

# absent NAME PATH: a failed command must not have written PATH.
absent() {
  if [[ -e $2 ]]; then echo "FAIL $1: $2 was written"; failures=$((failures + 1)); else pass=$((pass + 1)); fi
}

# finish [LABEL]: the summary line, and the script's exit status.
finish() {
  echo "${1:+$1: }$pass passed, $failures failed"
  [[ $failures -eq 0 ]]
}
