/*
 * bench_common.h: the helpers that the benchmarks in bench/ share, so that
 * each program keeps only what it measures and how it reports it.
 *
 * Every function that can fail either says so in its return value or ends
 * the process through bc_die(), as its contract below states; none fails
 * silently. A benchmark is a short-lived program whose figures mean nothing
 * once a setup step has failed, so dying with a message is the right answer
 * to a failure there, and the helpers that die save each caller the check.
 *
 * The helpers print and die under the name given to bc_set_prog(), so that a
 * message says which program (or which of its processes) wrote it.
 */
#ifndef WIRECHECK_BENCH_COMMON_H
#define WIRECHECK_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#include <jansson.h>

#include "fi.h"
#include "rs.h"

/* ------------------------------------------------------------------------ */
/* Messages.                                                                */

/*
 * Sets the name that bc_die() and the helpers' messages start with. name
 * must stay valid for the life of the process (a string literal does). A
 * forked process may set its own name, so that its messages can be told from
 * the parent's. Until it is called, the name is "bench".
 */
void bc_set_prog(const char *name);

/*
 * Prints "<name>: <message>\n" on stderr and exits with status 1, which the
 * benchmarks document as "something failed". Functions registered with
 * atexit run, so a temporary socket directory is removed.
 */
void bc_die(const char *fmt, ...)
	__attribute__((noreturn, format(printf, 1, 2)));

/* ------------------------------------------------------------------------ */
/* Whole reads and writes.                                                  */

/*
 * Writes all len bytes of buf to fd, retrying after EINTR and after a short
 * write. Returns 0 when every byte was written, -1 otherwise, with errno set
 * by the failed write (a write that returns 0 also gives -1). On a socket it
 * can raise SIGPIPE; see bc_ignore_sigpipe().
 */
int bc_write_full(int fd, const void *buf, size_t len);

/*
 * Reads exactly len bytes from fd into buf, retrying after EINTR and after a
 * short read. Returns 0 when all len bytes were read, -1 on end of file
 * before the last byte or on an error (errno is then set by the failed read).
 * On a stream socket it is recv(fd, buf, len, 0) in full.
 */
int bc_read_full(int fd, void *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Clocks and statistics.                                                   */

/*
 * The time of clock id (CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID, ...) in
 * microseconds. Dies when clock_gettime fails, since a benchmark without its
 * clock has nothing to report.
 */
double bc_clock_us(clockid_t id);

/* Sorts v[0..n) in ascending order. n may be 0. */
void bc_sort_doubles(double *v, size_t n);

/*
 * The median of v[0..n), the mean of the middle two values when n is even.
 * Sorts v as a side effect. n must be at least 1.
 */
double bc_median(double *v, size_t n);

/* A figure over rounds: the median and the extremes. */
struct bc_spread {
	double median, min, max;
};

/*
 * The median, min and max of v[0..n), n at least 1, with v left in its
 * order. Dies when it cannot allocate the sorted copy.
 */
struct bc_spread bc_spread_of(const double *v, size_t n);

/* {"median": M, "min": A, "max": B}, each with the given decimals. */
json_t *bc_spread_json(const struct bc_spread *s, int decimals);

/* ------------------------------------------------------------------------ */
/* Text.                                                                    */

/* The buffer that bc_commas() needs at the least: 20 digits, 6 commas, NUL. */
#define BC_COMMAS_LEN ((size_t)27)

/*
 * Writes v in decimal with a comma every three digits ("1,234,567") into buf
 * and returns buf. len must be at least BC_COMMAS_LEN, so that any uint64_t
 * fits; a smaller buffer is a programming error and aborts.
 */
const char *bc_commas(char *buf, size_t len, uint64_t v);

/*
 * Parses s as a whole decimal int in [lo, hi] into *out. Returns 0, or
 * -EINVAL (with *out unchanged) when s is empty, has trailing characters, or
 * is out of range.
 */
int bc_parse_int(const char *s, int lo, int hi, int *out);

/* ------------------------------------------------------------------------ */
/* The flags of the benchmarks that run blocks of rounds.                   */

/* The bounds of --blocks N and --rounds N. */
#define BC_MAX_BLOCKS 1000
#define BC_MAX_ROUNDS 100000

/* The options that bc_parse_block_options() gives. */
struct bc_block_options {
	int blocks;      /* --blocks N, else the default */
	int rounds;      /* --rounds N, else the default */
	int unix_socket; /* --unix: a unix socket instead of TCP */
};

/* A program's defaults for --blocks and --rounds, without and with --quick. */
struct bc_block_defaults {
	int blocks;
	int rounds;
	int quick_blocks;
	int quick_rounds;
};

/*
 * A program's own flag for bc_parse_block_options(): looks at argv[*i]
 * (*i < argc) and returns 1 when it took it, with *i moved onto the last
 * argument it consumed, 0 when argv[*i] is not its flag (with *i
 * unchanged), or -EINVAL when its value is missing or invalid.
 */
typedef int bc_flag_fn(int argc, char **argv, int *i, void *ctx);

/*
 * Parses argv[1..argc) into *o: --json (accepted and ignored: every
 * benchmark writes JSON), --unix, --quick, --blocks N (1 to
 * BC_MAX_BLOCKS), --rounds N (1 to BC_MAX_ROUNDS), and, through other with
 * ctx, the program's own flags (other may be NULL when it has none).
 * --quick only changes the defaults taken from d, so that it combines with
 * --blocks and --rounds in any order. Returns 0, or -EINVAL on an unknown
 * flag or a missing or invalid value, with *o then unspecified.
 */
int bc_parse_block_options(int argc, char **argv,
			   const struct bc_block_defaults *d, bc_flag_fn *other,
			   void *ctx, struct bc_block_options *o);

/* ------------------------------------------------------------------------ */
/* Flags from a table.                                                      */

/* What a flag of bc_parse_flags() does. */
enum bc_flag_kind {
	BC_FLAG_ON,   /* no value: *(int *)dest = 1 (dest NULL: accepted only) */
	BC_FLAG_STR,  /* *(const char **)dest = the value */
	BC_FLAG_INT,  /* *(int *)dest = the value, a whole number in [lo, hi] */
	BC_FLAG_CALL, /* parse(the value, dest): 0, or -EINVAL to refuse it */
};

struct bc_flag {
	const char *name; /* "--sizes" */
	enum bc_flag_kind kind;
	void *dest;
	int lo, hi;                                 /* BC_FLAG_INT */
	int (*parse)(const char *value, void *dest); /* BC_FLAG_CALL */
};

/* The table's entries: flag n with destination d. */
#define BC_ON(n, d) { .name = (n), .kind = BC_FLAG_ON, .dest = (d) }
#define BC_STR(n, d) { .name = (n), .kind = BC_FLAG_STR, .dest = (d) }
#define BC_INT(n, d, l, h) \
	{ .name = (n), .kind = BC_FLAG_INT, .dest = (d), .lo = (l), .hi = (h) }
#define BC_CALL(n, p, d) \
	{ .name = (n), .kind = BC_FLAG_CALL, .dest = (d), .parse = (p) }

/*
 * Parses argv[1..argc) against the n flags of f: each argument must be one
 * of them, followed by its value unless it is BC_FLAG_ON; a flag given
 * twice takes its last value. Returns 0, or -EINVAL on an unknown flag, a
 * missing value or one its flag refuses (the destinations then say
 * nothing). Nothing is set for a flag that is not given, so the caller
 * sets the defaults first, or a value no flag can give ("not given").
 */
int bc_parse_flags(int argc, char **argv, const struct bc_flag *f, size_t n);

/* ------------------------------------------------------------------------ */
/* The machine.                                                             */

/* The CPUs online, at least 1. Dies when sysconf cannot tell. */
long bc_cpus_online(void);

/* The 1-minute load average. Dies when getloadavg fails. */
double bc_load_average(void);

/*
 * Ignores SIGPIPE in this process and the children it forks afterwards, so
 * that a write to a peer that died fails with EPIPE, which the caller reports,
 * instead of killing the process without a word. Dies when signal fails.
 */
void bc_ignore_sigpipe(void);

/* What the reports say about the machine a run used. */
struct bc_machine {
	long cpus;
	double load_start; /* the load average before the measured work */
	double load_end;   /* and after it */
};

/*
 * The readings before the measured work: the CPUs online and the load
 * average (load_end is set to it too, until bc_machine_end). Dies as
 * bc_cpus_online and bc_load_average do.
 */
struct bc_machine bc_machine_start(void);

/* Reads the load average after the measured work into m->load_end. */
void bc_machine_end(struct bc_machine *m);

/* ------------------------------------------------------------------------ */
/* Sockets.                                                                 */

/*
 * Makes a private directory from tmpl (a mkdtemp template, such as
 * "/tmp/name.XXXXXX") for one unix socket, and returns the socket's path,
 * "<dir>/sock", which fits in sun_path. The directory and the socket file
 * (when something has bound it) are removed at exit. Call it at most once per
 * process, before fork, so that the children share the path. A child forked
 * afterwards inherits the removal too: it runs if the child leaves through
 * exit (as bc_die does), so a child that succeeds should leave with _exit.
 * Dies on failure.
 */
const char *bc_socket_dir(const char *tmpl);

/*
 * A listening unix socket at path, with the given backlog, close-on-exec.
 * Dies on failure.
 */
int bc_listen_unix(const char *path, int backlog);

/*
 * A listening TCP socket on an ephemeral port of 127.0.0.1, with the given
 * backlog, close-on-exec; *port gets the port. Dies on failure.
 */
int bc_listen_tcp(int backlog, int *port);

/*
 * A blocking stream socket, close-on-exec, connected to the unix socket at
 * unix_path, or when unix_path is NULL to 127.0.0.1:port. Dies on failure.
 */
int bc_connect(const char *unix_path, int port);

/* Sets TCP_NODELAY on fd. Returns setsockopt's result: 0, or -1 and errno. */
int bc_set_nodelay(int fd);

/* ------------------------------------------------------------------------ */
/* Processes.                                                               */

/* pipe2(p, O_CLOEXEC). Dies on failure. */
void bc_pipe(int p[2]);

/*
 * Flushes stdout and stderr, then forks. Returns 0 in the child and the
 * child's pid in the parent. Dies on failure. The child must leave with
 * _exit (or bc_die), never by returning into the parent's code. The
 * parent keeps the child until a bc_wait_* reaps it: when the parent exits
 * first (bc_die, or any exit), every such child still running is killed
 * (SIGKILL) and reaped, so that no server outlives a failed benchmark.
 */
pid_t bc_fork(void);

/* Waits for the child pid, retrying after EINTR; returns its wait status. */
int bc_wait_status(pid_t pid);

/*
 * bc_wait_status, and dies with "the <what> failed (status N)" unless the
 * child exited with status 0.
 */
void bc_wait_child(pid_t pid, const char *what);

/* ------------------------------------------------------------------------ */
/* The fault gate.                                                          */

/*
 * Every writing call the gate has counted in this process: send, sendto,
 * sendmsg, write and writev of fi_counters(). fi_init() must have run.
 *
 * It is defined here, inline, rather than in bench_common.c, so that only a
 * program that calls it links the gate: bytes_moved, which never does, then
 * does not load libfiu. The stack's helpers below are inline for the same
 * reason: gate_cost, which has no stack, links none of it.
 */
static inline uint64_t bc_gate_writes(void)
{
	const struct fi_counters *c = fi_counters();

	return fi_calls(c, FI_SEND) + fi_calls(c, FI_SENDTO) + fi_calls(c, FI_SENDMSG) +
	       fi_calls(c, FI_WRITE) + fi_calls(c, FI_WRITEV);
}

/* ------------------------------------------------------------------------ */
/* Reports: one JSON object per run, built with jansson.                    */
/*
 * A benchmark writes its figures as one JSON object on stdout and nothing
 * else: the report's Python sections (python/wirecheck/report/sections/
 * bench_*.py) are the one place that turns them into tables, for report.md
 * and for the terminal (`python3 -m wirecheck.report.render`). The builders
 * below die (bc_die) when jansson cannot allocate or a value is not JSON (a
 * NaN), so a caller never holds half a report.
 */

/*
 * A new report: {"command": [argv[0], ..., argv[argc - 1]]}. The caller owns
 * it and gives it to bc_report_print().
 */
json_t *bc_report_new(int argc, char **argv);

/*
 * json_pack(fmt, ...) that dies with jansson's message instead of returning
 * NULL; the new value is the caller's (or the container's it is packed into:
 * "o" steals, "O" takes a new reference, as in json_pack).
 */
json_t *bc_pack(const char *fmt, ...);

/*
 * Sets obj[key] = value, stealing value (as json_object_set_new). Dies when
 * value is NULL or the set fails.
 */
void bc_set(json_t *obj, const char *key, json_t *value);

/* Appends value to arr, stealing it (as json_array_append_new). Dies likewise. */
void bc_append(json_t *arr, json_t *value);

/*
 * v rounded to the given number of decimals, as printf("%.*f") shows it: a
 * report keeps the figures' stated precision, not the clock's noise digits.
 */
double bc_round(double v, int decimals);

/* json_real(bc_round(v, decimals)), or dies. */
json_t *bc_real(double v, int decimals);

/*
 * Sets the members "cpus", "load_average_start" and "load_average_end" (2
 * decimals) of report.
 */
void bc_report_machine(json_t *report, const struct bc_machine *m);

/* One target's entry: {"target": what, "measured": measured, "pass": pass}. */
json_t *bc_target(const char *what, const char *measured, int pass);

/*
 * Sets "targets" (stealing the array targets), "targets_met" (the entries
 * whose "pass" is true), "targets_total" (the entries that have a "pass":
 * one without, such as a target whose code is not built yet, was not
 * judged) and "all_targets_pass" of report. Returns targets_met.
 */
int bc_report_targets(json_t *report, json_t *targets);

/*
 * Prints report on stdout as indented JSON and a new line, frees it, and
 * dies when anything written to stdout failed: a report cut short by a full
 * disk or a closed pipe is a failure, not a result.
 */
void bc_report_print(json_t *report);

/* Writes report to the file at path as bc_report_print prints it (the
 * caller keeps report). Dies when the file cannot be written. */
void bc_report_write(const json_t *report, const char *path);

/*
 * Flushes stdout and dies when anything written to it failed (for the
 * programs that print a line of their own, such as gate_cost's runs under
 * callgrind).
 */
void bc_finish_output(void);

/* ------------------------------------------------------------------------ */
/* The reference stack's loop.                                              */

/* A new loop of the reference stack. Dies when rs_loop_new fails. */
static inline rs_loop *bc_loop_new(void)
{
	rs_loop *loop;
	int rc = rs_loop_new(&loop);

	if (rc < 0)
		bc_die("rs_loop_new: %s", strerror(-rc));
	return loop;
}

/*
 * Runs loop until it has nothing left to do, then frees it, so loop is gone
 * on return. Dies when either step fails: a loop that stopped early or
 * could not be freed still holds work, and the run's figures are not whole.
 */
static inline void bc_loop_run_free(rs_loop *loop)
{
	int rc = rs_loop_run(loop);

	if (rc < 0)
		bc_die("rs_loop_run: %s", strerror(-rc));
	rc = rs_loop_free(loop);
	if (rc < 0)
		bc_die("rs_loop_free: %s", strerror(-rc));
}

/*
 * Parses a comma-separated list of payloads in MiB ("16,64") into bytes, in
 * the order given: at most max of them, each from 1 to max_mib. Returns 0
 * with *n set, or -EINVAL (sizes and *n then say nothing).
 */
int bc_parse_mib_list(const char *arg, size_t *sizes, size_t max,
		      unsigned long long max_mib, size_t *n);

/* ------------------------------------------------------------------------ */
/* end(P) on the reference stack: the senders of sender_cpu and sender_instr. */

struct bc_end_run;

/* What a benchmark measures around the run; each hook may be NULL. */
struct bc_end_hooks {
	/* Once connected, just before end(P) (or the owned write) is called. */
	void (*before_end)(struct bc_end_run *r, rs_socket *s);
	/* Just after that call returned; r->end_rc holds its value. */
	void (*after_end_call)(struct bc_end_run *r, rs_socket *s);
	/* The first thing in end()'s callback, before the socket is destroyed. */
	void (*on_end)(struct bc_end_run *r, rs_socket *s, int status);
};

struct bc_end_run {
	/* Set by the caller. */
	const char *name;        /* the sender, for messages */
	int memmove;             /* queue=memmove, else queue=cursor */
	int owned;               /* an owned write of P, then end() of nothing */
	const char *payload;     /* len bytes, the caller's, unchanged */
	size_t len;
	const struct bc_end_hooks *hooks;
	void *arg;               /* the caller's, for its hooks */
	/* Set by the run. */
	rs_loop *loop;           /* valid during the run (the hooks may use it) */
	int end_rc;              /* end()'s (or the owned write's) return value */
	int finished;            /* end()'s callback ran */
	int status;              /* its status */
	int error;               /* on_error's code, or 0 */
	const char *error_syscall;
	int released;            /* the owned write's release ran */
	int release_status;
};

/*
 * Runs end(P) of r->len bytes of r->payload on a new loop of the reference
 * stack: sets the queue variant, connects to the unix socket at unix_path
 * (or, when it is NULL, to 127.0.0.1:port), calls the hooks around end()
 * and in its callback, destroys the socket once end() succeeded, runs the
 * loop until it is done and frees it. The caller's gate rules stay as they
 * are. Dies (bc_die, naming r->name) when any step fails: the variant, the
 * connect, end(), its callback's status, an error event, the owned write's
 * release, or an owned run in a build without the owned write.
 */
void bc_end_run(struct bc_end_run *r, const char *unix_path, int port);

#endif /* WIRECHECK_BENCH_COMMON_H */
