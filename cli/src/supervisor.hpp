// The exit status of softcheck is the verdict the command announced, never
// whatever ended the process. A command runs in a child process; it announces
// its exit status to this (parent) process through a pipe just before it
// returns. A plugin that calls exit(0) or _exit(3) (in a kernel, a constructor
// or an exit handler), a crash without --isolate, a kernel that stops itself,
// a kill: each ends the child without that announcement, or with a different
// status, and the parent reports a harness error (2) instead.
//
// The parent also forwards SIGINT, SIGTERM and SIGHUP to the child; the child
// removes the report temporaries it has in flight and dies of the signal, so
// an interrupted run leaves no partial files and exits 2. Every process the
// child forks (--isolate calls, property-check workers) dies with it
// (PR_SET_PDEATHSIG), and the child dies with the parent.
#pragma once

#include <functional>

namespace softcheck::cli {

// Runs `command` in a child process and returns its announced exit status,
// or exit_error (2) with a message on stderr when the child ended any other
// way. Exceptions from `command` are reported as "softcheck: error: ..." (2).
// A write error on stdout (a full disk, /dev/full, a closed pipe) turns the
// status into 2 as well: a verdict nobody could read is not a pass.
int run_supervised(const std::function<int()>& command);

// Flushes stdout; returns exit_error with a message when anything written to
// it was lost, else `status`. For paths that print without run_supervised
// (--help, usage errors).
int finish_stdout(int status);

}  // namespace softcheck::cli
