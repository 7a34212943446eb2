/*
 * cli_exec.c: `wirecheck exec`: its usage and flags; the run of the program
 * under the preloaded gate is exec.c's (cli.h).
 */
#include "cli.h"
#include "exec.h"
#include "fi.h"
#include "layout.h"
#include "outpath.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage_exec[] =
	"usage: wirecheck exec [FLAGS] -- PROGRAM [ARGS...]\n"
	"\n"
	"Runs PROGRAM, which need not be built against the gate, with the fault\n"
	"gate preloaded (libwirecheck-preload.so): its send, sendto, sendmsg,\n"
	"write, writev, recv, read, epoll_ctl, epoll_wait, accept, accept4,\n"
	"connect, shutdown and close are counted, and the faults apply to them;\n"
	"so do recvfrom and recvmsg (as recv), readv (as read) and epoll_pwait\n"
	"(as epoll_wait). A rule aims at sockets only, unless it says fd=N or\n"
	"fds=any. Prints a JSON report: the command, the faults, the program's\n"
	"exit, its counts per kind and fd, the faults that fired, and the counts\n"
	"of the processes it started.\n"
	"\n"
	"  --clamp-send N        as for `run`: every writing call on a socket\n"
	"  --refuse-write SPEC   as for `run`\n"
	"  --fault RULE          as for `run`\n"
	"  --signal SIG@SYSCALL:K  as for `run` (a task point needs a scenario)\n"
	"  --timeout SECONDS     kill the program's process group after this long\n"
	"                        (30); the report's exit says timed_out\n"
	"  --output FILE         write the report to FILE instead of stdout\n"
	"  --preload PATH        the library (default: lib/libwirecheck-preload.so\n"
	"                        beside wirecheck's bin/ directory)\n"
	"  --stop-after SECONDS  send the stop signal to the program after this\n"
	"                        long (a server's graceful end)\n"
	"  --until 'COMMAND'     run COMMAND (sh -c, without the gate) beside the\n"
	"                        program; send it the stop signal when COMMAND ends\n"
	"                        (COMMAND gets SIGTERM when the program and what\n"
	"                        it left end first)\n"
	"  --stop-signal SIG     the stop signal (SIGTERM)\n"
	"  --fiu-ctrl PREFIX     let fiu-ctrl -f PREFIX arm the gate's failpoints\n"
	"                        in the running program\n"
	"  --exit-zero           exit 0 when the report is written; without it,\n"
	"                        exec exits with the program's status (a signal\n"
	"                        as 128+N, 124 at the timeout)\n";

/*
 * --fiu-ctrl PREFIX: libfiu in the program makes its FIFOs PREFIX-PID.in and
 * PREFIX-PID.out, and the preload ends the program when it cannot. Their
 * directory is checked here, as an output file's, so that a bad prefix is a
 * usage error before the program runs.
 */
static int check_fiu_ctrl(const char *prefix)
{
	char probe[4200], why[4200];

	if (snprintf(probe, sizeof(probe), "%s-1.in", prefix) >= (int)sizeof(probe))
		return wc_cli_usage_error("--fiu-ctrl: the prefix is too long%s%s", "", "");
	if (wc_output_check(probe, why, sizeof(why)) == 0)
		return 0;
	(void)snprintf(probe, sizeof(probe), "--fiu-ctrl '%s'", prefix);
	return wc_cli_usage_error("%s: cannot make its FIFOs there: %s", probe, why);
}

/* `wirecheck exec`: the flags that make gate rules, then -- PROGRAM. */
int wc_cmd_exec(int argc, char **argv)
{
	struct exec_options eo = { .timeout_ms = 30000, .stop_signal = SIGTERM,
				   .stop_after_ms = -1 };
	struct scenario sc;
	const char **specs = NULL;
	char *preload = NULL, err[256];
	int i, rc = 0;

	wc_cli_set_help("exec");
	for (i = 0; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(usage_exec, stdout);
			return 0;
		}
	}
	if (sc_parse("exec", "", &sc, err, sizeof(err)) != 0)
		return wc_cli_usage_error("%s%s", err, "");
	for (i = 0; i < argc && strcmp(argv[i], "--") != 0 && rc == 0; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--exit-zero") == 0) {
			eo.exit_zero = 1;
		} else if (i + 1 >= argc || strcmp(argv[i + 1], "--") == 0) {
			rc = wc_cli_usage_error("exec: '%s' needs a value, or is not a flag; "
					 "the program comes after --%s", a, "");
		} else if (strcmp(a, "--stop-signal") == 0) {
			eo.stop_signal = fi_signal_parse(argv[++i]);
			if (eo.stop_signal < 0)
				rc = wc_cli_usage_error("--stop-signal '%s': expected a "
						 "signal name (SIGTERM, INT) or "
						 "number%s", argv[i], "");
		} else if (strcmp(a, "--stop-after") == 0) {
			char *end;
			double v;

			errno = 0;
			v = strtod(argv[++i], &end);
			if (errno != 0 || end == argv[i] || *end != '\0' ||
			    !(v >= 0 && v <= 86400))
				rc = wc_cli_usage_error("--stop-after '%s': expected "
						 "seconds, 0 to 86400%s", argv[i], "");
			else
				eo.stop_after_ms = (int)(v * 1000.0);
		} else if (strcmp(a, "--until") == 0) {
			eo.until = argv[++i];
		} else if (strcmp(a, "--fiu-ctrl") == 0) {
			eo.fiu_ctrl = argv[++i];
			if (*eo.fiu_ctrl == '\0')
				rc = wc_cli_usage_error("--fiu-ctrl: expected the FIFO "
						 "prefix fiu-ctrl -f takes%s%s",
						 "", "");
		} else if (strcmp(a, "--output") == 0) {
			eo.output = argv[++i];
		} else if (strcmp(a, "--preload") == 0) {
			eo.preload = argv[++i];
		} else if (strcmp(a, "--clamp-send") == 0 ||
			   strcmp(a, "--refuse-write") == 0 ||
			   strcmp(a, "--fault") == 0 ||
			   strcmp(a, "--signal") == 0 ||
			   strcmp(a, "--timeout") == 0) {
			rc = wc_cli_apply_flag(&sc, a, argv[++i]);
		} else if (a[0] != '-') {
			rc = wc_cli_usage_error("exec: '%s' is not a flag: put -- before "
					 "the program (wirecheck exec [FLAGS] -- "
					 "PROGRAM [ARGS])%s", a, "");
		} else {
			rc = wc_cli_usage_error("exec: unknown flag '%s'%s", a, "");
		}
	}
	if (rc == 0 && sc.ntsignals > 0)
		rc = wc_cli_usage_error("exec: --signal takes SIG@SYSCALL:K; a task point "
				 "(SIG@task:N) needs a scenario%s%s", "", "");
	if (rc == 0 && (i >= argc || i + 1 >= argc))
		rc = wc_cli_usage_error("exec needs -- PROGRAM [ARGS]%s%s", "", "");
	if (rc == 0)
		rc = wc_cli_check_output("--output", eo.output);
	if (rc == 0 && eo.fiu_ctrl != NULL)
		rc = check_fiu_ctrl(eo.fiu_ctrl);
	if (rc == 0 && sc.nfaults > FI_MAX_RULES) {
		char n[32], max[32];

		(void)snprintf(n, sizeof(n), "%zu", sc.nfaults);
		(void)snprintf(max, sizeof(max), "%d", FI_MAX_RULES);
		rc = wc_cli_usage_error("exec: %s rules; the gate arms at most %s", n,
				 max);
	}
	if (rc == 0) {
		specs = calloc(sc.nfaults + 1, sizeof(*specs));
		if (eo.preload == NULL)
			eo.preload = preload = wc_preload_library();
		if (specs == NULL || eo.preload == NULL) {
			fprintf(stderr, "wirecheck exec: out of memory\n");
			rc = 3;
		}
	}
	if (rc == 0) {
		for (size_t k = 0; k < sc.nfaults; k++)
			specs[k] = sc.faults[k].text;
		eo.argv = argv + i + 1;
		eo.faults = specs;
		eo.nfaults = sc.nfaults;
		eo.timeout_ms = sc.timeout_ms;
		rc = wc_exec(&eo);
	}
	free(specs);
	free(preload);
	sc_free(&sc);
	return rc;
}
