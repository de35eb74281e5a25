#!/usr/bin/env bash
# Dependency closure of a configured and built tree: every file the configure
# and the build used from outside the source and build trees must come from a
# Debian package that scripts/bootstrap.sh installs (or one they depend on, or
# the base system). A file from a package someone installed by hand passes on
# their machine and breaks the README's set-up on a fresh one, which is how
# the OpenCL dev files that Debian's dnnl-config.cmake needs went unnoticed.
#
#   scripts/check-deps.sh [options] [BUILD_DIR]      (default: build)
#
# What "used" means here, all read from BUILD_DIR after a build:
#   CMakeCache.txt          FILEPATH/PATH entries and *_DIR, *_LIBRARY,
#                           *_INCLUDE_DIR* (a *_DIR stands for the *.cmake
#                           package-config files inside it)
#   CMakeFiles/Makefile.cmake   every CMake file the configure read
#   **/*.o.d, compiler_depend.make, depend.make   the compilers' header lists
#   CMakeFiles/*.dir/link.txt, dlink.txt          libraries on the link lines
#                           (-lfoo resolved in the line's -L dirs, then with
#                           ${CXX:-g++} -print-file-name)
# Allowed: the dependency closure (apt-cache depends, Depends and PreDepends)
# of `scripts/bootstrap.sh --print-packages` and of the installed base system
# (Priority required/important, Essential: yes). Of an alternative or a
# virtual package, the closure takes the members that are installed, else the
# first one, as apt would have.
# Files in no package: fine inside the source or build tree; the CUDA toolkit
# (/usr/local/cuda*, or the toolkit of the cache's CMAKE_CUDA_COMPILER) is
# reported as optional, since the build degrades without it; anything else
# fails. A file that only the configure read, because an allowed package's
# config file include()s it OPTIONAL, is reported and does not fail.
#
# Options:
#   --cache FILE      read this CMakeCache.txt instead of BUILD_DIR's
#   --cache-only      only the cache: no depfiles, link lines or CMake files
#   --packages "a b"  the package list instead of bootstrap's
#   -v, --verbose     also list every package used with its number of files
# Exit status: 0 all in the closure, 1 a file from outside it, 2 usage error
# or nothing to check.
set -euo pipefail
if ! command -v python3 >/dev/null || ! command -v dpkg-query >/dev/null; then
  echo "check-deps: needs python3 and dpkg-query (Debian; scripts/bootstrap.sh installs python3)" >&2
  exit 2
fi
# The program is Python (read from this heredoc): thousands of paths, a
# dependency graph and their bookkeeping are clearer there than in awk.
exec python3 - "$(cd "$(dirname "$0")/.." && pwd)" "$@" <<'PYTHON'
import glob
import os
import re
import shlex
import subprocess
import sys

repo_root = sys.argv[1]
args = sys.argv[2:]
USAGE = 'usage: scripts/check-deps.sh [--cache FILE] [--cache-only] [--packages "a b c"] [-v] [BUILD_DIR]'


def usage_error(msg):
    print(f"check-deps: {msg}\n{USAGE}", file=sys.stderr)
    sys.exit(2)


build_dir = None
cache_file = None
cache_only = False
package_override = None
verbose = False
i = 0
while i < len(args):
    a = args[i]
    if a in ("--cache", "--packages"):
        if i + 1 >= len(args):
            usage_error(f"{a} needs a value")
        if a == "--cache":
            cache_file = args[i + 1]
        else:
            package_override = args[i + 1].split()
        i += 2
        continue
    if a == "--cache-only":
        cache_only = True
    elif a in ("-v", "--verbose"):
        verbose = True
    elif a in ("-h", "--help"):
        print(USAGE)
        sys.exit(0)
    elif a.startswith("-"):
        usage_error(f"unknown option {a}")
    elif build_dir is not None:
        usage_error(f"one BUILD_DIR only ({build_dir}, {a})")
    else:
        build_dir = a
    i += 1
if package_override is not None and not package_override:
    usage_error("--packages needs at least one package name")
build_dir = os.path.abspath(build_dir or "build")
cache_file = os.path.abspath(cache_file or os.path.join(build_dir, "CMakeCache.txt"))
if not os.path.isfile(cache_file):
    usage_error(f"no {cache_file}: configure and build first (scripts/bootstrap.sh)")
if not cache_only and not os.path.isdir(build_dir):
    usage_error(f"no build directory {build_dir}")

# ------------------------------------------------------------ what was used
MAKEFILE_CMAKE = "CMakeFiles/Makefile.cmake"  # lists every CMake file the configure read
CONFIG_FILE = re.compile(r"(-config|Config)(-version|Version)?\.cmake$")
# used[path] = where it was seen first (for the failure's example)
used = {}
# Paths that only the configure's list of CMake files it read names.
configure_read_only = set()


def note(path, origin):
    path = os.path.normpath(path)
    if not os.path.exists(path):
        return
    if origin == MAKEFILE_CMAKE:
        if path not in used:
            configure_read_only.add(path)
    else:
        configure_read_only.discard(path)
    used.setdefault(path, origin)


cache = {}
with open(cache_file, encoding="utf-8", errors="replace") as f:
    for line in f:
        m = re.match(r'^"?([^":=]+)"?:([A-Z]+)=(.*)$', line.rstrip("\n"))
        if m:
            cache[m.group(1)] = (m.group(2), m.group(3))

for name, (typ, value) in cache.items():
    # Install destinations are outputs, not something the build read.
    if name.startswith("CMAKE_INSTALL_") or name.endswith(("-ADVANCED", "-MODIFIED", "-STRINGS")):
        continue
    pathlike = typ in ("FILEPATH", "PATH") or name.endswith(("_DIR", "_LIBRARY")) or "_INCLUDE_DIR" in name
    if not pathlike:
        continue
    for v in value.split(";"):
        v = v.strip()
        if not v.startswith("/") or v.endswith("-NOTFOUND") or not os.path.exists(v):
            continue
        origin = f"CMakeCache.txt: {name}"
        config_files = []
        if os.path.isdir(v) and name.endswith("_DIR") and "_INCLUDE_DIR" not in name:
            config_files = sorted(c for c in glob.glob(os.path.join(v, "*.cmake")) if CONFIG_FILE.search(c))
        for c in config_files:
            note(c, origin)
        if not config_files:
            note(v, origin)


def tokens_of_depfile(text):
    # Make syntax: "\<newline>" continues a line, "\ " is a space in a name.
    text = text.replace("\\\n", " ").replace("\\ ", "\0")
    for t in text.split():
        t = t.replace("\0", " ")
        if t.startswith("/") and not t.endswith(":"):
            yield t


cxx = os.environ.get("CXX") or "g++"
resolved_l = {}


def resolve_lib(spec, search_dirs):
    """-lfoo / -l:libfoo.a -> the file the linker takes (shared before static)."""
    names = [spec[1:]] if spec.startswith(":") else [f"lib{spec}.so", f"lib{spec}.a"]
    for d in search_dirs:
        for n in names:
            if os.path.isfile(os.path.join(d, n)):
                return os.path.join(d, n)
    if spec not in resolved_l:
        resolved_l[spec] = None
        for n in names:
            try:
                r = subprocess.run([cxx, f"-print-file-name={n}"], capture_output=True, text=True).stdout.strip()
            except OSError:
                break
            if os.path.isabs(r) and os.path.isfile(r):
                resolved_l[spec] = r
                break
    return resolved_l[spec]


unresolved_libs = set()
if not cache_only:
    makefile_cmake = os.path.join(build_dir, "CMakeFiles", "Makefile.cmake")
    if os.path.isfile(makefile_cmake):
        with open(makefile_cmake, encoding="utf-8", errors="replace") as f:
            for p in re.findall(r'^\s*"(/[^"]+)"\s*$', f.read(), re.M):
                note(p, MAKEFILE_CMAKE)
    depfiles = 0
    for root, dirs, files in os.walk(build_dir):
        if "CMakeFiles" not in root.split(os.sep):
            continue
        for fn in files:
            full = os.path.join(root, fn)
            rel = os.path.relpath(full, build_dir)
            if fn.endswith(".o.d") or fn in ("compiler_depend.make", "depend.make"):
                depfiles += 1
                with open(full, encoding="utf-8", errors="replace") as f:
                    for t in tokens_of_depfile(f.read()):
                        note(t, rel)
            elif fn in ("link.txt", "dlink.txt"):
                with open(full, encoding="utf-8", errors="replace") as f:
                    for line in f:
                        try:
                            toks = shlex.split(line)
                        except ValueError:
                            toks = line.split()
                        search = [t[2:] for t in toks if t.startswith("-L") and t[2:].startswith("/")]
                        for t in toks:
                            if t.startswith("-l") and len(t) > 2:
                                lib = resolve_lib(t[2:], search)
                                if lib:
                                    note(lib, f"{rel}: {t}")
                                else:
                                    unresolved_libs.add(t)
                            elif t.startswith("/") and os.path.isfile(t):
                                note(t, rel)

    if depfiles == 0:
        # Ninja keeps the compilers' header lists in its binary .ninja_deps.
        print(f"check-deps: warning: no depfiles under {build_dir} (not a Makefile build, or not built): "
              "headers not checked", file=sys.stderr)

if not used:
    usage_error(f"nothing to check: no absolute paths in {cache_file}"
                + ("" if cache_only else f" or under {build_dir}"))

# ---------------------------------------------------- trees and CUDA toolkit


def real(p):
    return os.path.realpath(p)


def under(p, root):
    return p == root or p.startswith(root.rstrip("/") + "/")


trees = {real(repo_root)}
if not cache_only or os.path.isdir(build_dir):
    trees.add(real(build_dir))
for key in ("CMAKE_HOME_DIRECTORY", "CMAKE_CACHEFILE_DIR"):
    if key in cache and cache[key][1].startswith("/"):
        trees.add(real(cache[key][1]))

cuda_roots = set()
for d in glob.glob("/usr/local/cuda*"):
    cuda_roots.update({os.path.normpath(d), real(d)})
for key in ("CMAKE_CUDA_COMPILER", "CUDAToolkit_NVCC_EXECUTABLE"):
    if key in cache and cache[key][1].startswith("/"):
        for nvcc in {cache[key][1], real(cache[key][1])}:
            bindir = os.path.dirname(nvcc)
            root = os.path.dirname(bindir) if os.path.basename(bindir) == "bin" else bindir
            # A toolkit installed into a system prefix (nvcc in /usr/bin) is
            # no tree of its own: its files must come from packages.
            if root not in ("/", "/usr", "/usr/local", "/opt"):
                cuda_roots.add(root)

in_tree, outside = [], []
for p in used:
    (in_tree if any(under(p, t) or under(real(p), t) for t in trees) else outside).append(p)

# ------------------------------------------------------ files -> packages
MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


def spellings(p):
    """The path as given, resolved, and each in both merged-/usr spellings:
    dpkg knows a file by the name its package shipped it under."""
    out = []
    for q in (p, real(p)):
        out.append(q)
        parts = q.split("/")
        if len(parts) > 2 and parts[1] == "usr" and parts[2] in MERGED:
            out.append("/" + "/".join(parts[2:]))
        elif len(parts) > 1 and parts[1] in MERGED:
            out.append("/usr" + q)
    return list(dict.fromkeys(out))


def dpkg_escape(p):
    # dpkg-query -S takes glob patterns; a literal *, ? or [ must be escaped.
    return re.sub(r"([*?\[\]\\])", r"\\\1", p)


candidates = {p: spellings(p) for p in outside}
queries = sorted({c for cs in candidates.values() for c in cs})
owners_of = {}
CHUNK = 4000  # one dpkg-query per chunk: it reads its whole database each time
for k in range(0, len(queries), CHUNK):
    r = subprocess.run(["dpkg-query", "-S", "--"] + [dpkg_escape(q) for q in queries[k:k + CHUNK]],
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.startswith("diversion by"):
            continue
        sep = line.find(": /")
        if sep < 0:
            continue
        pkgs = {x.strip().split(":")[0] for x in line[:sep].split(",")}
        owners_of.setdefault(line[sep + 2:], set()).update(pkgs)

# The first spelling dpkg knows decides: a -dev package's libfoo.so is its
# own, although the library it points to is the runtime package's.
owners = {p: next((owners_of[c] for c in candidates[p] if c in owners_of), set()) for p in outside}

# ------------------------------------------------------ the allowed closure
if package_override is not None:
    roots = package_override
    roots_what = "the given packages"
else:
    bootstrap = os.path.join(repo_root, "scripts", "bootstrap.sh")
    r = subprocess.run(["bash", bootstrap, "--print-packages"], capture_output=True, text=True)
    roots = r.stdout.split()
    if r.returncode != 0 or not roots:
        print(f"check-deps: {bootstrap} --print-packages failed:\n{r.stderr}", file=sys.stderr)
        sys.exit(2)
    roots_what = "bootstrap's closure"

installed, base = set(), set()
r = subprocess.run(["dpkg-query", "-W", "-f=${Package}\t${db:Status-Abbrev}\t${Priority}\t${Essential}\n"],
                   capture_output=True, text=True)
for line in r.stdout.splitlines():
    f = line.split("\t")
    if len(f) < 4 or len(f[1]) < 2 or f[1][1] != "i":
        continue
    installed.add(f[0])
    if f[2] in ("required", "important") or f[3] == "yes":
        base.add(f[0])

APT_FLAGS = ["--recurse", "--no-recommends", "--no-suggests", "--no-conflicts", "--no-breaks",
             "--no-replaces", "--no-enhances"]


def apt_depends(names):
    r = subprocess.run(["apt-cache", "depends"] + APT_FLAGS + ["--"] + names, capture_output=True, text=True)
    return r.stdout


def bare(name):
    return name.strip().strip("<>").split(":")[0]


names = sorted(set(roots) | base)
text = apt_depends(names)
if not re.search(r"^\S", text, re.M):
    # apt-cache knows no package until `apt-get update` has run once; bootstrap
    # runs it only when it installs something, so a machine that had every
    # package already may never have.
    print("check-deps: apt-cache knows no packages: running apt-get update", file=sys.stderr)
    cmd = ["apt-get", "update", "-qq"]
    if os.geteuid() != 0:
        cmd = ["sudo"] + cmd
    subprocess.run(cmd, check=False)
    text = apt_depends(names)
    if not re.search(r"^\S", text, re.M):
        print("check-deps: apt-cache depends found none of the packages, even after apt-get update", file=sys.stderr)
        sys.exit(2)

# graph[pkg] = [group, ...]; group = [alternative, ...]; alternative = [name, virtual, providers]
graph = {}
current, group, last = None, [], None
for line in text.splitlines():
    if not line.strip():
        continue
    if not line.startswith(" "):
        current = bare(line)
        graph.setdefault(current, [])
        group, last = [], None
        continue
    if line.startswith("    "):  # a provider of the alternative above
        if last is not None:
            last[2].append(bare(line))
        continue
    m = re.match(r"^ ([| ])(?:Pre)?Depends: (.*)$", line)
    if not m or current is None:
        continue
    target = m.group(2).strip()
    last = [bare(target), target.startswith("<"), []]
    group.append(last)
    if m.group(1) == " ":  # the last alternative of its group
        graph[current].append(group)
        group = []

allowed = set()
todo = [bare(n) for n in names]
while todo:
    p = todo.pop()
    if p in allowed:
        continue
    allowed.add(p)
    for g in graph.get(p, []):
        cands = []
        for name, virtual, providers in g:
            if not virtual:
                cands.append(name)
            cands.extend(providers)
        chosen = [c for c in cands if c in installed] or cands[:1]
        todo.extend(chosen)

# A package's config file may include() another package's file OPTIONAL
# (Debian's GTestConfig.cmake includes GMockTargets.cmake, from libgmock-dev):
# the configure reads it where that package happens to be installed and needs
# it nowhere. Such a file, with the per-configuration <name>-*.cmake files it
# loads, is no dependency when nothing but the configure's list names it (a
# target of it in use would show on the link lines or in the depfiles).
optional_include = {}  # path -> the config file that includes it OPTIONAL
for f in outside:
    if f.endswith(".cmake") and owners[f] & allowed and os.path.isfile(f):
        with open(f, encoding="utf-8", errors="replace") as fh:
            for m in re.finditer(r'include\s*\(\s*"?\$\{CMAKE_CURRENT_LIST_DIR\}/([^"\s)]+\.cmake)"?\s+OPTIONAL',
                                 fh.read()):
                target = os.path.join(os.path.dirname(f), m.group(1))
                for g in [target] + glob.glob(target[:-len(".cmake")] + "-*.cmake"):
                    optional_include.setdefault(os.path.normpath(g), f)

# ------------------------------------------------------------------ verdict
ok_files, pkg_files, cuda_files = 0, {}, []
unneeded = {}  # package -> [files read only through an OPTIONAL include]
bad = {}       # package -> [files]
stray = []     # in no package, outside the trees and the CUDA toolkit
for p in sorted(outside):
    own = owners[p]
    if own:
        good = sorted(own & allowed)
        if good:
            ok_files += 1
            if not os.path.isdir(p):  # a shared directory says nothing of which package
                pkg_files[good[0]] = pkg_files.get(good[0], 0) + 1
        elif p in configure_read_only and p in optional_include:
            for o in sorted(own):
                unneeded.setdefault(o, []).append(p)
        else:
            for o in sorted(own):
                bad.setdefault(o, []).append(p)
    elif any(under(p, c) or under(real(p), c) for c in cuda_roots):
        cuda_files.append(p)
    else:
        stray.append(p)

extra_text = ""
if cuda_files:
    roots_seen = sorted({c for c in cuda_roots for p in cuda_files if under(real(p), c)} or cuda_roots)
    extra_text = (f"; {len(cuda_files)} files optional, outside apt: CUDA toolkit ({', '.join(roots_seen)})")
for pkg, files in sorted(unneeded.items()):
    extra_text += (f"; {len(files)} files of {pkg} read but not needed "
                  f"(included OPTIONAL by {os.path.basename(optional_include[files[0]])})")

if verbose:
    for pkg in sorted(pkg_files):
        print(f"  {pkg_files[pkg]:5d}  {pkg}")
    for p in cuda_files:
        print(f"  CUDA   {p}")
    print(f"  ({len(in_tree)} files inside the source and build trees; allowed: {len(allowed)} packages)")
for lib in sorted(unresolved_libs):
    print(f"check-deps: note: {lib} on a link line: no file found for it (not checked)", file=sys.stderr)

if not bad and not stray:
    print(f"check-deps: {ok_files} files from {len(pkg_files)} packages, all in {roots_what}{extra_text}")
    sys.exit(0)

print(f"check-deps: FAILED: the configure or the build used files from outside {roots_what}:")
for pkg in sorted(bad):
    files = bad[pkg]
    more = f" (and {len(files) - 1} more)" if len(files) > 1 else ""
    print(f"  {pkg}: e.g. {files[0]}{more}, from {used[files[0]]}")
if bad:
    print("  installed by hand? add it to scripts/bootstrap.sh (with the reason), "
          "or stop the build from using it")
for p in stray[:10]:
    print(f"  in no Debian package: {p}, from {used[p]}")
if len(stray) > 10:
    print(f"  ... and {len(stray) - 10} more files in no package")
if stray:
    print("  files in no package must be in the source or build tree (or come from a package bootstrap installs)")
print(f"check-deps: {ok_files} other files were fine{extra_text}")
sys.exit(1)
PYTHON
