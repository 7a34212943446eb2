/*
 * bench_common.c: the helpers that the benchmarks in bench/ share; the
 * contracts are in bench_common.h.
 */
#ifndef _GNU_SOURCE
/* pipe2, mkdtemp and getloadavg are GNU and BSD extensions that a strict
 * -std=c11 build hides without it. */
#define _GNU_SOURCE
#endif

#include "bench_common.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* ------------------------------------------------------------------------ */
/* Messages.                                                                */

static const char *prog = "bench";

void bc_set_prog(const char *name)
{
	prog = name;
}

void bc_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

/* ------------------------------------------------------------------------ */
/* Whole reads and writes.                                                  */

/*
 * The loop of both directions: exactly one of out and in is NULL. A whole
 * read and a whole write retry the same way (after EINTR and after a short
 * count) and fail the same way (on 0 or an error), so one loop serves both
 * and only the call differs.
 */
static int transfer_full(int fd, const char *out, char *in, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = in != NULL ? read(fd, in + done, len - done)
				       : write(fd, out + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

int bc_write_full(int fd, const void *buf, size_t len)
{
	return transfer_full(fd, buf, NULL, len);
}

int bc_read_full(int fd, void *buf, size_t len)
{
	return transfer_full(fd, NULL, buf, len);
}

/* ------------------------------------------------------------------------ */
/* Clocks and statistics.                                                   */

double bc_clock_us(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		bc_die("clock_gettime: %s", strerror(errno));
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

void bc_sort_doubles(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
}

double bc_median(double *v, size_t n)
{
	bc_sort_doubles(v, n);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

struct bc_spread bc_spread_of(const double *v, size_t n)
{
	double *c = malloc(n * sizeof(*c));
	struct bc_spread s;

	if (c == NULL)
		bc_die("out of memory");
	memcpy(c, v, n * sizeof(*c));
	s.median = bc_median(c, n);
	s.min = c[0]; /* bc_median sorted c */
	s.max = c[n - 1];
	free(c);
	return s;
}

/* ------------------------------------------------------------------------ */
/* Text.                                                                    */

const char *bc_commas(char *buf, size_t len, uint64_t v)
{
	char digits[32];
	size_t nd, j = 0;
	int n = snprintf(digits, sizeof(digits), "%" PRIu64, v);

	/* A short buffer would cut a figure in a table without a sign, so the
	 * contract's bound is checked rather than trusted. */
	if (n < 0 || (size_t)n >= sizeof(digits) || len < BC_COMMAS_LEN)
		abort();
	nd = (size_t)n;
	for (size_t i = 0; i < nd; i++) {
		if (i > 0 && (nd - i) % 3 == 0)
			buf[j++] = ',';
		buf[j++] = digits[i];
	}
	buf[j] = '\0';
	return buf;
}

int bc_parse_int(const char *s, int lo, int hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return -EINVAL;
	*out = (int)v;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The flags of the benchmarks that run blocks of rounds.                   */

/*
 * Takes the value of --blocks or --rounds, argv[*i + 1], into *value when it
 * is a whole number in [1, max]. Returns 1 with *i moved onto it, or -EINVAL.
 */
static int take_count(int argc, char **argv, int *i, int max, int *value)
{
	if (*i + 1 >= argc || bc_parse_int(argv[*i + 1], 1, max, value) < 0)
		return -EINVAL;
	(*i)++;
	return 1;
}

int bc_parse_block_options(int argc, char **argv,
			   const struct bc_block_defaults *d, bc_flag_fn *other,
			   void *ctx, struct bc_block_options *o)
{
	int quick = 0, blocks = 0, rounds = 0;

	*o = (struct bc_block_options){ 0 };
	for (int i = 1; i < argc; i++) {
		int rc = 1;

		if (strcmp(argv[i], "--json") == 0)
			rc = 1; /* JSON is the only output */
		else if (strcmp(argv[i], "--unix") == 0)
			o->unix_socket = 1;
		else if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--blocks") == 0)
			rc = take_count(argc, argv, &i, BC_MAX_BLOCKS, &blocks);
		else if (strcmp(argv[i], "--rounds") == 0)
			rc = take_count(argc, argv, &i, BC_MAX_ROUNDS, &rounds);
		else
			rc = other != NULL ? other(argc, argv, &i, ctx) : 0;
		if (rc <= 0)
			return -EINVAL;
	}
	/* A given count is never 0 (take_count's range starts at 1), so 0
	 * means "not given". */
	o->blocks = blocks ? blocks : quick ? d->quick_blocks : d->blocks;
	o->rounds = rounds ? rounds : quick ? d->quick_rounds : d->rounds;
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Flags from a table.                                                      */

/* Applies flag f to value (NULL for BC_FLAG_ON). Returns 0 or -EINVAL. */
static int flag_take(const struct bc_flag *f, const char *value)
{
	switch (f->kind) {
	case BC_FLAG_ON:
		if (f->dest != NULL)
			*(int *)f->dest = 1;
		return 0;
	case BC_FLAG_STR:
		*(const char **)f->dest = value;
		return 0;
	case BC_FLAG_INT:
		return bc_parse_int(value, f->lo, f->hi, f->dest);
	case BC_FLAG_CALL:
		return f->parse(value, f->dest) < 0 ? -EINVAL : 0;
	}
	return -EINVAL;
}

int bc_parse_flags(int argc, char **argv, const struct bc_flag *f, size_t n)
{
	for (int i = 1; i < argc; i++) {
		size_t k = 0;

		while (k < n && strcmp(argv[i], f[k].name) != 0)
			k++;
		if (k == n)
			return -EINVAL;
		if (f[k].kind == BC_FLAG_ON) {
			(void)flag_take(&f[k], NULL);
		} else if (i + 1 >= argc || flag_take(&f[k], argv[++i]) < 0) {
			return -EINVAL;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------------ */
/* The machine.                                                             */

long bc_cpus_online(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	if (n < 1)
		bc_die("sysconf(_SC_NPROCESSORS_ONLN): %s", strerror(errno));
	return n;
}

double bc_load_average(void)
{
	double l;

	if (getloadavg(&l, 1) != 1)
		bc_die("getloadavg failed");
	return l;
}

void bc_ignore_sigpipe(void)
{
	if (signal(SIGPIPE, SIG_IGN) == SIG_ERR)
		bc_die("signal(SIGPIPE): %s", strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* Sockets.                                                                 */

/* The directory of bc_socket_dir(); empty strings when there is none. */
static char sock_dir[64];
static char sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void socket_dir_remove(void)
{
	/* The socket file exists only once something has bound the path: a
	 * run that failed before its listener did has no file to remove,
	 * which is no error. */
	if (sock_path[0] != '\0' && unlink(sock_path) != 0 && errno != ENOENT)
		fprintf(stderr, "%s: unlink: %s\n", prog, strerror(errno));
	if (sock_dir[0] != '\0' && rmdir(sock_dir) != 0)
		fprintf(stderr, "%s: rmdir: %s\n", prog, strerror(errno));
	sock_path[0] = '\0';
	sock_dir[0] = '\0';
}

const char *bc_socket_dir(const char *tmpl)
{
	int n;

	if (sock_dir[0] != '\0')
		bc_die("bc_socket_dir called twice");
	/* Registered first, so that no exit after mkdtemp leaves the
	 * directory behind. */
	if (atexit(socket_dir_remove) != 0)
		bc_die("atexit failed");
	n = snprintf(sock_dir, sizeof(sock_dir), "%s", tmpl);
	if (n < 0 || (size_t)n >= sizeof(sock_dir))
		bc_die("socket directory template too long: %s", tmpl);
	if (mkdtemp(sock_dir) == NULL) {
		sock_dir[0] = '\0';
		bc_die("mkdtemp: %s", strerror(errno));
	}
	/* sock_path has the size of sun_path, so a path that fits here fits
	 * in a sockaddr_un with its NUL. */
	n = snprintf(sock_path, sizeof(sock_path), "%s/sock", sock_dir);
	if (n < 0 || (size_t)n >= sizeof(sock_path)) {
		sock_path[0] = '\0';
		bc_die("socket path too long");
	}
	return sock_path;
}

/* Fills *sun with path; returns 0, or -1 when path does not fit. */
static int unix_address(struct sockaddr_un *sun, const char *path)
{
	size_t len = strlen(path);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (len >= sizeof(sun->sun_path))
		return -1;
	memcpy(sun->sun_path, path, len + 1);
	return 0;
}

/* 127.0.0.1:port; port 0 asks bind for an ephemeral one. */
static void loopback_address(struct sockaddr_in *sin, int port)
{
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin->sin_port = htons((uint16_t)port);
}

int bc_listen_unix(const char *path, int backlog)
{
	struct sockaddr_un sun;
	int fd;

	if (unix_address(&sun, path) != 0)
		bc_die("socket path too long: %s", path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		bc_die("socket(AF_UNIX): %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sun, sizeof(sun)) != 0 ||
	    listen(fd, backlog) != 0)
		bc_die("listen on %s: %s", path, strerror(errno));
	return fd;
}

int bc_listen_tcp(int backlog, int *port)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	int fd;

	loopback_address(&sin, 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		bc_die("socket(AF_INET): %s", strerror(errno));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0 ||
	    listen(fd, backlog) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sin, &len) != 0)
		bc_die("listen on 127.0.0.1: %s", strerror(errno));
	*port = ntohs(sin.sin_port);
	return fd;
}

int bc_connect(const char *unix_path, int port)
{
	struct sockaddr_un sun;
	struct sockaddr_in sin;
	const struct sockaddr *sa;
	socklen_t salen;
	int fd;

	if (unix_path != NULL) {
		if (unix_address(&sun, unix_path) != 0)
			bc_die("socket path too long: %s", unix_path);
		sa = (const struct sockaddr *)&sun;
		salen = sizeof(sun);
	} else {
		loopback_address(&sin, port);
		sa = (const struct sockaddr *)&sin;
		salen = sizeof(sin);
	}
	fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		bc_die("socket: %s", strerror(errno));
	if (connect(fd, sa, salen) != 0)
		bc_die("connect (%s): %s", unix_path != NULL ? "unix" : "tcp",
		       strerror(errno));
	return fd;
}

int bc_set_nodelay(int fd)
{
	int one = 1;

	return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* ------------------------------------------------------------------------ */
/* Processes.                                                               */

void bc_pipe(int p[2])
{
	if (pipe2(p, O_CLOEXEC) != 0)
		bc_die("pipe2: %s", strerror(errno));
}

/*
 * The children bc_fork made and no bc_wait_* reaped yet. A benchmark that
 * dies (bc_die, or any exit) takes them with it: a server left running
 * would hold its CPU and socket into the next benchmark.
 */
#define BC_MAX_CHILDREN 256
static pid_t children[BC_MAX_CHILDREN];
static int nchildren;

/* Whether pid is a child of this process that has not been reaped; 1 in
 * *running while it runs. Reaps nothing (WNOWAIT). */
static int child_unreaped(pid_t pid, int *running)
{
	siginfo_t info;

	memset(&info, 0, sizeof(info));
	if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) != 0)
		return 0;
	*running = info.si_pid == 0;
	return 1;
}

/* At exit: every child still running is killed, and every one reaped. */
static void kill_children(void)
{
	for (int i = 0; i < nchildren; i++) {
		int running;

		if (!child_unreaped(children[i], &running))
			continue;
		if (running)
			(void)kill(children[i], SIGKILL);
		while (waitpid(children[i], NULL, 0) < 0 && errno == EINTR)
			;
	}
	nchildren = 0;
}

static void child_forget(pid_t pid)
{
	for (int i = 0; i < nchildren; i++)
		if (children[i] == pid) {
			children[i] = children[--nchildren];
			return;
		}
}

static void child_record(pid_t pid)
{
	static int registered;

	if (!registered) {
		if (atexit(kill_children) != 0)
			bc_die("atexit failed");
		registered = 1;
	}
	if (nchildren == BC_MAX_CHILDREN) {
		/* Those reaped by a plain waitpid leave. */
		int k = 0, running;

		for (int i = 0; i < nchildren; i++)
			if (child_unreaped(children[i], &running))
				children[k++] = children[i];
		nchildren = k;
	}
	if (nchildren == BC_MAX_CHILDREN) {
		(void)kill(pid, SIGKILL);
		bc_die("more than %d children", BC_MAX_CHILDREN);
	}
	children[nchildren++] = pid;
}

pid_t bc_fork(void)
{
	pid_t pid;

	/* Whatever stdio holds would otherwise be written twice. */
	if (fflush(stdout) != 0 || fflush(stderr) != 0)
		bc_die("fflush: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		bc_die("fork: %s", strerror(errno));
	if (pid == 0)
		nchildren = 0;  /* the parent's children are not this one's */
	else
		child_record(pid);
	return pid;
}

int bc_wait_status(pid_t pid)
{
	int status;

	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			bc_die("waitpid: %s", strerror(errno));
	}
	child_forget(pid);
	return status;
}

void bc_wait_child(pid_t pid, const char *what)
{
	int status = bc_wait_status(pid);

	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		bc_die("the %s failed (status %d)", what, status);
}

/* ------------------------------------------------------------------------ */
/* Reports.                                                                 */

json_t *bc_report_new(int argc, char **argv)
{
	json_t *command = bc_pack("[]");

	for (int i = 0; i < argc; i++)
		bc_append(command, json_string(argv[i]));
	return bc_pack("{s:o}", "command", command);
}

json_t *bc_pack(const char *fmt, ...)
{
	json_error_t error;
	va_list ap;
	json_t *v;

	va_start(ap, fmt);
	v = json_vpack_ex(&error, 0, fmt, ap);
	va_end(ap);
	if (v == NULL)
		bc_die("json_pack(\"%s\"): %s", fmt, error.text);
	return v;
}

void bc_set(json_t *obj, const char *key, json_t *value)
{
	if (value == NULL || json_object_set_new(obj, key, value) != 0)
		bc_die("cannot set \"%s\" in the JSON report", key);
}

void bc_append(json_t *arr, json_t *value)
{
	if (value == NULL || json_array_append_new(arr, value) != 0)
		bc_die("cannot append to a JSON array of the report");
}

double bc_round(double v, int decimals)
{
	double scale = 1.0;

	for (int i = 0; i < decimals; i++)
		scale *= 10.0;
	/* round(v * scale) is a whole number, held exactly, and one correctly
	 * rounded division gives the double nearest to that decimal: the one
	 * that strtod of printf's "%.Nf" gives. */
	return round(v * scale) / scale;
}

json_t *bc_real(double v, int decimals)
{
	json_t *r = json_real(bc_round(v, decimals));

	if (r == NULL)
		bc_die("%g is not a JSON number", v);
	return r;
}

json_t *bc_spread_json(const struct bc_spread *s, int decimals)
{
	return bc_pack("{s:o, s:o, s:o}", "median", bc_real(s->median, decimals),
		       "min", bc_real(s->min, decimals),
		       "max", bc_real(s->max, decimals));
}

struct bc_machine bc_machine_start(void)
{
	struct bc_machine m = { .cpus = bc_cpus_online() };

	m.load_start = m.load_end = bc_load_average();
	return m;
}

void bc_machine_end(struct bc_machine *m)
{
	m->load_end = bc_load_average();
}

void bc_report_machine(json_t *report, const struct bc_machine *m)
{
	bc_set(report, "cpus", json_integer(m->cpus));
	bc_set(report, "load_average_start", bc_real(m->load_start, 2));
	bc_set(report, "load_average_end", bc_real(m->load_end, 2));
}

json_t *bc_target(const char *what, const char *measured, int pass)
{
	return bc_pack("{s:s, s:s, s:b}", "target", what, "measured", measured,
		       "pass", pass);
}

int bc_report_targets(json_t *report, json_t *targets)
{
	size_t i, total = 0;
	json_t *t;
	int met = 0;

	json_array_foreach(targets, i, t) {
		json_t *pass = json_object_get(t, "pass");

		total += pass != NULL;
		met += json_is_true(pass);
	}
	bc_set(report, "targets", targets);
	bc_set(report, "targets_met", json_integer(met));
	bc_set(report, "targets_total", json_integer((json_int_t)total));
	bc_set(report, "all_targets_pass", json_boolean((size_t)met == total));
	return met;
}

/* 15 significant digits: every figure is rounded to a few decimals
 * (bc_real), and %.15g gives such a value back as it was written. */
#define REPORT_FLAGS (JSON_INDENT(1) | JSON_REAL_PRECISION(15))

void bc_report_write(const json_t *report, const char *path)
{
	if (json_dump_file(report, path, REPORT_FLAGS) != 0)
		bc_die("%s: cannot write the JSON", path);
}

void bc_report_print(json_t *report)
{
	if (json_dumpf(report, stdout, REPORT_FLAGS) != 0 ||
	    putchar('\n') == EOF)
		bc_die("cannot write the output");
	json_decref(report);
	bc_finish_output();
}

void bc_finish_output(void)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		bc_die("cannot write the output");
}

int bc_parse_mib_list(const char *arg, size_t *sizes, size_t max,
		      unsigned long long max_mib, size_t *n)
{
	const char *p = arg;

	*n = 0;
	for (;;) {
		unsigned long long v;
		char *end;

		errno = 0;
		v = strtoull(p, &end, 10);
		if (errno != 0 || end == p || v == 0 || v > max_mib || *n == max)
			return -EINVAL;
		sizes[(*n)++] = (size_t)v * 1024 * 1024;
		if (*end == '\0')
			return 0;
		if (*end != ',')
			return -EINVAL;
		p = end + 1;
	}
}

/* ------------------------------------------------------------------------ */
/* end(P) on the reference stack.                                           */

static void end_run_on_end(rs_socket *s, int status, void *arg)
{
	struct bc_end_run *r = arg;

	if (r->hooks && r->hooks->on_end)
		r->hooks->on_end(r, s, status);
	r->finished = 1;
	r->status = status;
	/* Close at once rather than wait for the reader's FIN: the reader
	 * still gets every byte, and the loop then has nothing left. A failed
	 * end() has closed the socket already. */
	if (status == 0)
		rs_socket_destroy(s, 0);
}

#ifdef RS_HAVE_OWNED_WRITE
/* The owned write's release: the kernel has every byte of it. */
static void end_run_released(rs_socket *s, int status, void *arg)
{
	struct bc_end_run *r = arg;

	(void)s;
	r->released = 1;
	r->release_status = status;
}
#endif

static void end_run_on_connect(rs_socket *s, void *arg)
{
	struct bc_end_run *r = arg;

	if (r->hooks && r->hooks->before_end)
		r->hooks->before_end(r, s);
#ifdef RS_HAVE_OWNED_WRITE
	if (r->owned) {
		r->end_rc = rs_socket_write_owned(s, r->payload, r->len,
						  end_run_released, r);
		if (r->end_rc >= 0)
			r->end_rc = rs_socket_end(s, NULL, 0, end_run_on_end, r);
	} else
#endif
		r->end_rc = rs_socket_end(s, r->payload, r->len, end_run_on_end, r);
	if (r->hooks && r->hooks->after_end_call)
		r->hooks->after_end_call(r, s);
}

static void end_run_on_error(rs_socket *s, int code, const char *syscall,
			     void *arg)
{
	struct bc_end_run *r = arg;

	(void)s;
	r->error = code;
	r->error_syscall = syscall;
}

void bc_end_run(struct bc_end_run *r, const char *unix_path, int port)
{
	static const struct rs_socket_events events = {
		.on_connect = end_run_on_connect,
		.on_error = end_run_on_error,
	};
	rs_socket *s;
	int rc;

#ifndef RS_HAVE_OWNED_WRITE
	if (r->owned)
		bc_die("%s sender: the owned write is not built", r->name);
#endif
	r->end_rc = 0;
	r->finished = r->status = r->error = 0;
	r->error_syscall = NULL;
	r->released = r->release_status = 0;
	rc = rs_variant_set("queue", r->memmove ? "memmove" : "cursor");
	if (rc < 0)
		bc_die("rs_variant_set: %s", strerror(-rc));
	r->loop = bc_loop_new();
	rc = unix_path ? rs_connect_unix(r->loop, unix_path, NULL, &events, r, &s)
		       : rs_connect_tcp(r->loop, "127.0.0.1", port, NULL, &events,
					r, &s);
	if (rc < 0)
		bc_die("rs_connect_%s: %s", unix_path ? "unix" : "tcp", strerror(-rc));
	bc_loop_run_free(r->loop);
	r->loop = NULL;
	if (r->end_rc < 0)
		bc_die("%s sender: rs_socket_end: %s", r->name, strerror(-r->end_rc));
	if (r->error != 0)
		bc_die("%s sender: %s failed: %s", r->name,
		       r->error_syscall ? r->error_syscall : "a call", strerror(r->error));
	if (!r->finished || r->status != 0)
		bc_die("%s sender: end()'s callback %s (status %d)", r->name,
		       r->finished ? "failed" : "never ran", r->status);
	if (r->owned && (!r->released || r->release_status != 0))
		bc_die("%s sender: the release %s (status %d)", r->name,
		       r->released ? "failed" : "never ran", r->release_status);
}
