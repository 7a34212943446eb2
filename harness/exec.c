/*
 * exec.c: `wirecheck exec` (docs/cli.md, "exec").
 *
 * The program runs with LD_PRELOAD naming the gate's preload library
 * (prepended to any LD_PRELOAD it had), WIRECHECK_FAULTS set to the rules,
 * and WIRECHECK_COUNTS naming DIR/%p.json in a private temporary directory,
 * so that it and every process it forks write their counts there at exit.
 * The report gathers them: the program's own counts under "counts", those
 * of other processes under "children", ordered by pid.
 *
 * wirecheck is the program's child subreaper (PR_SET_CHILD_SUBREAPER), so
 * the processes the program starts and leaves behind become wirecheck's
 * children: exec waits for all of them, not only for the program, so that
 * their counts are written before they are read. The wait never hangs:
 * SIGCHLD (with SIGTERM, SIGHUP, and SIGINT without a terminal) is blocked
 * before the fork and taken by sigtimedwait against a CLOCK_MONOTONIC
 * deadline; past it, or on one of those signals, the program and every
 * remaining child get SIGKILL. In the foreground of a terminal the program
 * stays in wirecheck's process group, as a shell's command; otherwise it
 * leads its own, which is signalled whole while the program is unreaped.
 *
 * The `until` command is a child too, leading a process group of its own
 * (in a terminal too): its members are told from what the program left by
 * their pgid. Once the program and what it left have ended, that group is
 * all that is left, and it is ended rather than waited for (end_until).
 * In the foreground of a terminal, COMMAND's group is made the terminal's
 * foreground group while COMMAND runs (tcsetpgrp from the child before its
 * exec and from wirecheck, with SIGTTOU blocked, as a shell gives a job the
 * terminal), so that COMMAND can read it (`read _`: Enter stops the
 * program) and Ctrl-C ends COMMAND, which stops the program. Meanwhile
 * wirecheck ignores SIGTTIN and SIGTTOU, which a program reading the
 * terminal brings on its whole group: the program alone is stopped. Once
 * COMMAND is reaped, and on every way out of wc_exec, the terminal is
 * given back to wirecheck's group, with SIGCONT to it, as `fg` does: a
 * program stopped reading the terminal meanwhile goes on (terminal_take,
 * terminal_back). Ctrl-Z stops COMMAND's group alone: wirecheck takes the
 * terminal back and stops its own group, so that the user's shell sees
 * the run stopped; once continued in the foreground, it gives the
 * terminal to COMMAND again (until_stopped).
 */
#include "exec.h"
#include "exec_report.h"

#include "outpath.h"
#include "proc.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int fail(const char *what, int err)
{
	fprintf(stderr, "wirecheck exec: %s: %s\n", what, strerror(err));
	return 3;
}

static double now_ms(void)
{
	struct timespec t;

	(void)clock_gettime(CLOCK_MONOTONIC, &t); /* cannot fail for it */
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Sets the child's environment; on failure the child reports and exits 127. */
static void child_env(const struct exec_options *o, const char *faults,
		      const char *states)
{
	const char *old = getenv("LD_PRELOAD");
	size_t len = strlen(o->preload) + (old ? strlen(old) + 1 : 0) + 1;
	char *pre = malloc(len);

	if (pre == NULL)
		_exit(127);
	(void)snprintf(pre, len, "%s%s%s", o->preload, old ? " " : "",
		       old ? old : "");
	/* The states replace the counts files: a WIRECHECK_COUNTS of the
	 * user's would only write a second copy. */
	if (setenv("LD_PRELOAD", pre, 1) != 0 ||
	    setenv("WIRECHECK_FAULTS", faults, 1) != 0 ||
	    setenv("WIRECHECK_STATE", states, 1) != 0 ||
	    unsetenv("WIRECHECK_COUNTS") != 0 ||
	    (o->fiu_ctrl != NULL &&
	     setenv("WIRECHECK_FIU_CTRL", o->fiu_ctrl, 1) != 0))
		_exit(127);
	free(pre);
}

/* How the run ended. */
struct ending {
	int status;          /* the program's wait status */
	int killed_program;  /* the deadline's SIGKILL found it alive */
	int others_killed;   /* processes it left behind were killed */
	int others_left;     /* some did not die within the grace */
	int fatal_signal;    /* a signal that ends wirecheck came first */
	int stopped;         /* the stop signal was sent: 1 at stop_after,
			      * 2 when `until` ended */
	int until_status;    /* `until`'s wait status, when until_done */
	int until_done;
	int until_ended;     /* the last signal exec sent to `until`'s group
			      * once the program and what it left had ended
			      * (SIGTERM, then SIGKILL), or 0 */
	int until_cut;       /* `until` itself was still running then */
};

/* The terminal while `until`'s group holds it, and wirecheck's SIGTTIN and
 * SIGTTOU actions, ignored meanwhile. */
struct tty_hold {
	int held;
	pid_t pgrp;          /* `until`'s group */
	struct sigaction ttin, ttou;
};

/* What the wait does beside waiting. */
struct waitplan {
	double stop_at;      /* when to send the stop signal, or < 0 */
	int stop_signal;
	pid_t until;         /* the `until` command, or 0 */
	struct tty_hold *tty; /* the terminal it holds, or NULL */
};

/*
 * Makes pgrp the foreground group of the terminal on stdin. SIGTTOU is
 * blocked around tcsetpgrp, as shells do: called from a background group
 * (ours once `until` holds the terminal), it would stop us otherwise.
 * Returns 0 or -errno.
 */
static int terminal_to(pid_t pgrp)
{
	sigset_t ttou, was;
	int rc;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	if (sigprocmask(SIG_BLOCK, &ttou, &was) != 0)
		return -errno;
	rc = tcsetpgrp(STDIN_FILENO, pgrp) == 0 ? 0 : -errno;
	/* Puts back the mask it just read: cannot fail. */
	(void)sigprocmask(SIG_SETMASK, &was, NULL);
	return rc;
}

/*
 * Makes `until`'s group (pgrp) the terminal's foreground group. The
 * program, in wirecheck's group, now reads the terminal from the
 * background: the kernel sends SIGTTIN (SIGTTOU for a write, under stty
 * tostop) to that whole group, wirecheck included, which ignores them
 * meanwhile and goes on waiting; the program alone stops. Said on stderr
 * if it fails: COMMAND then reads the terminal from the background (it is
 * stopped), as without this.
 */
static void terminal_take(struct tty_hold *t, pid_t pgrp)
{
	struct sigaction ign = { .sa_handler = SIG_IGN };
	int rc;

	if (sigaction(SIGTTIN, &ign, &t->ttin) != 0) {
		rc = -errno;
	} else if (sigaction(SIGTTOU, &ign, &t->ttou) != 0) {
		rc = -errno;
		(void)sigaction(SIGTTIN, &t->ttin, NULL); /* as it was */
	} else {
		t->held = 1; /* even if tcsetpgrp fails: the child's may not */
		t->pgrp = pgrp;
		rc = terminal_to(pgrp);
	}
	if (rc != 0)
		fprintf(stderr, "wirecheck exec: giving the terminal to "
			"--until's command: %s\n", strerror(-rc));
}

/*
 * Gives the terminal back to wirecheck's group once `until`'s group held
 * it, with wirecheck's SIGTTIN and SIGTTOU actions, and continues the
 * group (SIGCONT), as `fg` does: a program that read the terminal
 * meanwhile was stopped and reads it now. Only from `until`'s group: if
 * the user's shell has it (the run was stopped and put in the background
 * with `bg`), it stays there. Said on stderr if it cannot be taken back.
 */
static void terminal_back(struct tty_hold *t)
{
	int rc = 0;

	if (t == NULL || !t->held)
		return;
	t->held = 0;
	if (tcgetpgrp(STDIN_FILENO) == t->pgrp)
		rc = terminal_to(getpgrp());
	if (rc != 0)
		fprintf(stderr, "wirecheck exec: giving the terminal back: %s\n",
			strerror(-rc));
	/* Actions it read itself, and our own group, which exists: cannot
	 * fail. */
	(void)sigaction(SIGTTIN, &t->ttin, NULL);
	(void)sigaction(SIGTTOU, &t->ttou, NULL);
	(void)kill(0, SIGCONT);
}

/*
 * `until` was stopped while its group held the terminal (Ctrl-Z stops
 * that group alone). As a shell does with a job that stops, wirecheck
 * takes the terminal back, then stops its own group (SIGTSTP: itself and
 * the program), so that the user's shell sees the run stopped and has the
 * terminal. Once continued, and in the foreground again (`fg`), it gives
 * the terminal to `until`'s group again; that group is continued either
 * way (after `bg`, COMMAND reading the terminal stops again, and so does
 * the run).
 */
static void until_stopped(struct tty_hold *t)
{
	int rc = 0;

	if (t == NULL || !t->held)
		return;
	if (tcgetpgrp(STDIN_FILENO) == t->pgrp)
		rc = terminal_to(getpgrp());
	if (rc == 0) {
		(void)kill(0, SIGTSTP); /* our own group: stops us here */
		if (tcgetpgrp(STDIN_FILENO) == getpgrp())
			rc = terminal_to(t->pgrp);
	}
	if (rc != 0)
		fprintf(stderr, "wirecheck exec: passing the terminal on: %s\n",
			strerror(-rc));
	(void)kill(-t->pgrp, SIGCONT); /* ESRCH: the group just ended */
}

/* After SIGKILL, how long the killed may take to be reaped; after the
 * SIGTERM that ends `until`, how long it has before SIGKILL. */
#define KILL_GRACE_MS 5000.0

/*
 * Our direct children, found in /proc, the program aside: with the
 * subreaper bit, those are what the program left behind (also the ones
 * that left its process group), and `until` with what it left in its
 * group. Sends sig (unless 0) to each one outside process group `keep`
 * (0: keeps none) and returns how many those are; *kept (unless NULL)
 * counts the others. A zombie counts until it is reaped. Only this process
 * reaps its children, so none of these pids can have been reused.
 */
static int our_children(pid_t program, pid_t keep, int sig, int *kept)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int others = 0;

	if (kept != NULL)
		*kept = 0;
	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL) {
		long ppid, pgrp;
		pid_t pid = (pid_t)atol(e->d_name);

		if (pid <= 0 || pid == program)
			continue;
		/* Gone meanwhile, or another's child. */
		if (wc_proc_parent(pid, &ppid, &pgrp) < 0 || ppid != (long)getpid())
			continue;
		if (keep != 0 && pgrp == (long)keep) {
			if (kept != NULL)
				(*kept)++;
			continue;
		}
		others++;
		if (sig != 0)
			(void)kill(pid, sig); /* ESRCH: it just ended */
	}
	(void)closedir(d); /* a directory stream: nothing to lose */
	return others;
}

/* SIGKILL to every direct child of ours but the program: what it left
 * behind, and `until` with what that left. */
static void kill_our_children(pid_t program)
{
	(void)our_children(program, 0, SIGKILL, NULL);
}

/* The program, and whether it leads a process group of its own. */
struct program {
	pid_t pid;
	int own_group;
};

/* The stop signal to the program, once, while it is unreaped. */
static void stop_program(const struct program *p, const struct waitplan *w,
			 struct ending *end, int why, int program_done)
{
	if (end->stopped || program_done)
		return;
	end->stopped = why;
	(void)kill(p->pid, w->stop_signal); /* ESRCH: it just ended */
}

/*
 * Once the program and everything it left have ended, only `until` and
 * what it left in its process group keep the run going: nobody is left
 * for it to talk to (a client retrying a server that crashed at start).
 * SIGTERM to its group, with SIGCONT for a member stopped reading the
 * terminal, at once; SIGKILL to the group KILL_GRACE_MS later (*kill_at)
 * if a member is left. The group is signalled only while one of its
 * members is our unreaped child (a zombie included): its pgid then still
 * names it. Processes that left the group (setsid) count as the
 * program's: they are waited for.
 */
static void end_until(pid_t program, const struct waitplan *plan,
		      struct ending *end, double now, double *kill_at)
{
	int kept, others;

	if (plan->until <= 0 || end->until_ended == SIGKILL ||
	    (end->until_ended == SIGTERM && now < *kill_at))
		return;
	others = our_children(program, plan->until, 0, &kept);
	if (kept == 0 || (others > 0 && end->until_ended == 0))
		return;
	if (end->until_ended == 0) {
		end->until_ended = SIGTERM;
		end->until_cut = !end->until_done;
		*kill_at = now + KILL_GRACE_MS;
		(void)kill(-plan->until, SIGTERM); /* ESRCH: just ended */
		(void)kill(-plan->until, SIGCONT);
		return;
	}
	end->until_ended = SIGKILL;
	(void)kill(-plan->until, SIGKILL);
}

/*
 * SIGKILL to the program and everything it left. The group is signalled
 * only while the program is not reaped: its pgid is then still in use, so
 * the number cannot name another group.
 */
static void kill_all(const struct program *p, int program_done)
{
	if (!program_done) {
		if (p->own_group)
			(void)kill(-p->pid, SIGKILL); /* ESRCH: gone */
		(void)kill(p->pid, SIGKILL);
	}
	kill_our_children(p->pid);
}

/*
 * Reaps the program and every process it leaves behind until none is
 * left, or the deadline: then SIGKILL to all of them, and KILL_GRACE_MS
 * for them to be reaped. On the way, sends the stop signal at its time or
 * when `until` ends, and ends `until` once the program and what it left
 * have ended (end_until). A signal of `set` other than SIGCHLD (one that
 * ends wirecheck) kills them all too, and is kept in end->fatal_signal;
 * they are still reaped, so that the report says how each ended. Returns
 * 0, or 3 after a message when waiting itself failed (after killing what
 * it could).
 */
static int wait_all(const struct program *p, const sigset_t *set,
		    double deadline, const struct waitplan *plan,
		    struct ending *end)
{
	int program_done = 0, killed = 0;
	double until = deadline, until_kill_at = 0;

	for (;;) {
		int status, sig;
		/* With the terminal given to `until`, its stop is seen too. */
		pid_t w = waitpid(-1, &status, plan->tty != NULL ?
				  WNOHANG | WUNTRACED : WNOHANG);
		double left, now;
		struct timespec ts;

		if (w > 0 && WIFSTOPPED(status)) {
			if (w == plan->until)
				until_stopped(plan->tty);
			continue; /* another's stop is its own business */
		}
		if (w > 0) {
			if (w == p->pid) {
				end->status = status;
				program_done = 1;
			} else if (plan->until != 0 && w == plan->until) {
				end->until_status = status;
				end->until_done = 1;
				terminal_back(plan->tty);
				stop_program(p, plan, end, 2, program_done);
			}
			continue;
		}
		if (w < 0 && errno == ECHILD)
			return 0; /* every child reaped */
		if (w < 0 && errno != EINTR) {
			int err = errno;

			kill_all(p, program_done);
			return fail("waitpid", err);
		}
		now = now_ms();
		if (!killed && plan->stop_at >= 0 && now >= plan->stop_at)
			stop_program(p, plan, end, 1, program_done);
		if (!killed && program_done)
			end_until(p->pid, plan, end, now, &until_kill_at);
		left = until - now;
		if (left <= 0 && !killed) {
			killed = 1;
			end->killed_program = !program_done;
			end->others_killed = program_done;
			kill_all(p, program_done);
			until = now_ms() + KILL_GRACE_MS;
			continue;
		}
		if (left <= 0) {
			/* Only a process stuck in the kernel, or one we may not
			 * signal (EPERM: a setuid program), is still there. */
			end->others_left = 1;
			if (!program_done)
				return fail("the program survived SIGKILL", ETIMEDOUT);
			return 0;
		}
		if (killed) {
			kill_our_children(p->pid); /* the orphans of the killed */
		} else {
			/* The stop signal's time is past once it is sent, or
			 * without the program to send it to. */
			if (plan->stop_at >= 0 && !end->stopped &&
			    !program_done && plan->stop_at - now < left)
				left = plan->stop_at - now;
			if (end->until_ended == SIGTERM &&
			    until_kill_at > now && until_kill_at - now < left)
				left = until_kill_at - now;
		}
		ts.tv_sec = (time_t)(left / 1e3);
		ts.tv_nsec = (long)((left - (double)ts.tv_sec * 1e3) * 1e6);
		sig = sigtimedwait(set, NULL, &ts);
		if (sig > 0 && sig != SIGCHLD && !killed) {
			/* Killed, not stopped: a user who ends wirecheck wants
			 * it to end now. The states keep the counts. */
			killed = 1;
			end->fatal_signal = sig;
			kill_all(p, program_done);
			until = now_ms() + KILL_GRACE_MS;
			continue;
		}
		if (sig < 0 && errno != EAGAIN && errno != EINTR) {
			int err = errno;

			kill_all(p, program_done);
			return fail("sigtimedwait", err);
		}
	}
}

static const char *signal_text(int sig, char *buf, size_t len)
{
	const char *name = sigabbrev_np(sig);

	if (name != NULL)
		(void)snprintf(buf, len, "SIG%s", name);
	else
		(void)snprintf(buf, len, "%d", sig);
	return buf;
}

/* A wait status into e: `code`, or `signal` and `core`. */
static void status_json(json_t *e, int status)
{
	char buf[32];

	if (WIFEXITED(status)) {
		json_object_set_new(e, "code", json_integer(WEXITSTATUS(status)));
	} else if (WIFSIGNALED(status)) {
		json_object_set_new(e, "signal", json_string(signal_text(
				       WTERMSIG(status), buf, sizeof(buf))));
		json_object_set_new(e, "core", json_boolean(WCOREDUMP(status)));
	}
}

/* The deadline's SIGKILL found the program alive and is what ended it (it
 * may have ended by itself in between). */
static int timed_out(const struct ending *end)
{
	return end->killed_program && WIFSIGNALED(end->status) &&
	       WTERMSIG(end->status) == SIGKILL;
}

static json_t *exit_json(const struct ending *end, int stop_signal)
{
	json_t *e = json_object();
	char buf[32];

	json_object_set_new(e, "timed_out", json_boolean(timed_out(end)));
	if (end->others_killed)
		json_object_set_new(e, "others_killed", json_true());
	if (end->others_left)
		json_object_set_new(e, "others_left", json_true());
	if (end->stopped)
		json_object_set_new(e, "stopped", json_pack("{s:s,s:s}",
				    "signal", signal_text(stop_signal, buf, sizeof(buf)),
				    "by", end->stopped == 1 ? "stop-after" : "until"));
	if (end->fatal_signal)
		json_object_set_new(e, "wirecheck_signal", json_string(signal_text(
				    end->fatal_signal, buf, sizeof(buf))));
	status_json(e, end->status);
	return e;
}

/* How exec ended `until`: why, and the last signal it sent the group. */
static void until_ended_json(json_t *u, int sig)
{
	char buf[32];

	json_object_set_new(u, "ended_by", json_string("program-ended"));
	json_object_set_new(u, "ended_with", json_string(signal_text(
				    sig, buf, sizeof(buf))));
}

/* The specs joined by ';', WIRECHECK_FAULTS's syntax; NULL without memory. */
static char *faults_join(const struct exec_options *o)
{
	size_t len = 1;
	char *s;

	for (size_t i = 0; i < o->nfaults; i++)
		len += strlen(o->faults[i]) + 1;
	s = malloc(len);
	if (s == NULL)
		return NULL;
	s[0] = '\0';
	for (size_t i = 0; i < o->nfaults; i++) {
		if (i > 0)
			strcat(s, ";");
		strcat(s, o->faults[i]);
	}
	return s;
}

/* Removes dir and the files in it (an error path's cleanup). */
static void discard_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (d != NULL) {
		while ((e = readdir(d)) != NULL) {
			char path[PATH_MAX];

			if (e->d_name[0] == '.')
				continue;
			(void)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
			(void)unlink(path); /* best effort: we are failing already */
		}
		(void)closedir(d);
	}
	(void)rmdir(dir);
}

/*
 * The preload library's absolute path: relative, it would not be found by
 * a process that changed directory; and LD_PRELOAD splits on spaces and
 * colons, so a path with one cannot be carried. NULL after a message.
 */
static char *preload_path(const char *given)
{
	char *real = realpath(given, NULL);

	if (real == NULL) {
		(void)fail(given, errno);
		return NULL;
	}
	if (strpbrk(real, " \t:") != NULL) {
		fprintf(stderr, "wirecheck exec: %s: LD_PRELOAD cannot carry a "
				"path with a space or a colon; use --preload with "
				"a copy elsewhere\n", real);
		free(real);
		return NULL;
	}
	return real;
}

/* An argument as a JSON string; bytes that are not UTF-8 become '?', so
 * that no argument goes missing from the report. */
static json_t *arg_json(const char *a)
{
	json_t *j = json_string(a);
	char *copy;

	if (j != NULL)
		return j;
	copy = strdup(a);
	if (copy == NULL)
		return NULL;
	for (char *c = copy; *c; c++)
		if ((unsigned char)*c >= 0x80)
			*c = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

/*
 * The status exec passes on (docs/cli.md, "Exit status"): 124 at the
 * timeout, as timeout(1); when exec stopped the program and it ended of
 * that (or exited 0), `until`'s status, or 0 without it or when exec
 * ended `until` itself; otherwise the program's own, 128+N for signal N,
 * as a shell reports it.
 */
static int status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return 0;
}

static int program_status(const struct ending *end, int stop_signal)
{
	if (timed_out(end))
		return 124;
	if (end->stopped &&
	    ((WIFSIGNALED(end->status) && WTERMSIG(end->status) == stop_signal) ||
	     (WIFEXITED(end->status) && WEXITSTATUS(end->status) == 0)))
		return end->until_done && !end->until_cut ?
		       status_of(end->until_status) : 0;
	return status_of(end->status);
}

int wc_exec(const struct exec_options *o)
{
	char dir[] = "/tmp/wirecheck-exec.XXXXXX", states[64];
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	struct sigaction ign = { .sa_handler = SIG_IGN };
	struct sigaction chld_old, int_old, quit_old;
	struct ending end = { 0 };
	struct program prog = { 0 };
	struct waitplan plan = { .stop_at = -1, .stop_signal = o->stop_signal };
	struct tty_hold hold = { 0 };
	json_t *report, *argv, *faults_json;
	char *faults, *preload;
	sigset_t set, old;
	pid_t parent = getpid();
	int rc, tty;
	double deadline;

	preload = preload_path(o->preload);
	if (preload == NULL)
		return 3;
	faults = faults_join(o);
	if (faults == NULL) {
		free(preload);
		return fail("malloc", ENOMEM);
	}
	if (mkdtemp(dir) == NULL) {
		rc = fail("mkdtemp", errno);
		goto out_free;
	}
	(void)snprintf(states, sizeof(states), "%s/%%p.state", dir);
	/*
	 * In the foreground of a terminal the program stays in our process
	 * group, as a command a shell runs: it can read the terminal, Ctrl-Z
	 * stops us both, and Ctrl-C reaches it while we ignore SIGINT and
	 * SIGQUIT, as system() does. Otherwise it leads a group of its own,
	 * so that a timeout kills all of it at once.
	 */
	tty = isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
	prog.own_group = !tty;
	/* Blocked, and taken by sigtimedwait: SIGCHLD, and the signals that
	 * end wirecheck, so that the program and its leftovers die with it.
	 * SIGCHLD at SIG_IGN (inherited) would have the kernel reap the
	 * children: it is SIG_DFL for the wait; the program gets its
	 * inherited dispositions back before its exec. */
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	if (!tty)
		sigaddset(&set, SIGINT);
	if (sigaction(SIGCHLD, &dfl, &chld_old) != 0) {
		rc = fail("sigaction", errno);
		goto out_dir;
	}
	if (sigprocmask(SIG_BLOCK, &set, &old) != 0) {
		rc = fail("sigprocmask", errno);
		(void)sigaction(SIGCHLD, &chld_old, NULL);
		goto out_dir;
	}
	if (tty && (sigaction(SIGINT, &ign, &int_old) != 0 ||
		    sigaction(SIGQUIT, &ign, &quit_old) != 0)) {
		rc = fail("sigaction", errno);
		tty = 0; /* nothing to restore beyond what out_signals does */
		goto out_signals;
	}
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
		rc = fail("prctl(PR_SET_CHILD_SUBREAPER)", errno);
		goto out_signals;
	}
	deadline = now_ms() + o->timeout_ms;
	if (o->stop_after_ms >= 0)
		plan.stop_at = now_ms() + o->stop_after_ms;
	prog.pid = fork();
	if (prog.pid < 0) {
		rc = fail("fork", errno);
		goto out_signals;
	}
	if (prog.pid == 0) {
		struct exec_options co = *o;

		if (prog.own_group)
			(void)setpgid(0, 0);
		/* If wirecheck is killed outright, the program goes too. */
		if (wc_proc_die_with_parent(parent) < 0)
			_exit(127);
		co.preload = preload;
		child_env(&co, faults, states);
		if (sigaction(SIGCHLD, &chld_old, NULL) != 0 ||
		    (tty && (sigaction(SIGINT, &int_old, NULL) != 0 ||
			     sigaction(SIGQUIT, &quit_old, NULL) != 0)) ||
		    sigprocmask(SIG_SETMASK, &old, NULL) != 0)
			_exit(127);
		execvp(o->argv[0], o->argv);
		fprintf(stderr, "wirecheck exec: %s: %s\n", o->argv[0],
			strerror(errno));
		_exit(127);
	}
	if (prog.own_group)
		(void)setpgid(prog.pid, prog.pid); /* also from here: no race */
	if (o->until != NULL) {
		/* The client: a shell command, without the library, leading a
		 * process group of its own, so that end_until can end it with
		 * what it starts, and tell those from what the program left.
		 * In a terminal, that group is the foreground one while
		 * COMMAND runs: set from the child before its exec and from
		 * here, so that COMMAND never reads the terminal from the
		 * background, whichever of us runs first. */
		pid_t until = fork();

		if (until < 0) {
			rc = fail("fork", errno);
			kill_all(&prog, 0);
			/* Reap what was killed; the deadline bounds it. */
			(void)wait_all(&prog, &set, now_ms() + KILL_GRACE_MS,
				       &plan, &end);
			goto out_signals;
		}
		if (until == 0) {
			(void)setpgid(0, 0);
			if (wc_proc_die_with_parent(parent) < 0)
				_exit(127);
			/* A failure is the parent's to say: it does the same. */
			if (tty)
				(void)terminal_to(getpid());
			if (sigaction(SIGCHLD, &chld_old, NULL) != 0 ||
			    (tty && (sigaction(SIGINT, &int_old, NULL) != 0 ||
				     sigaction(SIGQUIT, &quit_old, NULL) != 0)) ||
			    sigprocmask(SIG_SETMASK, &old, NULL) != 0)
				_exit(127);
			execl("/bin/sh", "sh", "-c", o->until, (char *)NULL);
			fprintf(stderr, "wirecheck exec: /bin/sh: %s\n",
				strerror(errno));
			_exit(127);
		}
		(void)setpgid(until, until); /* also from here: no race */
		plan.until = until;
		/* Unreaped, until names its group, so the call cannot give the
		 * terminal to another; a COMMAND that cannot have it reads it
		 * from the background, stopped, as without a terminal. */
		if (tty) {
			plan.tty = &hold;
			terminal_take(&hold, until);
		}
	}
	rc = wait_all(&prog, &set, deadline, &plan, &end);
	if (rc != 0)
		goto out_signals;
	report = json_object();
	argv = json_array();
	faults_json = json_array();
	for (size_t i = 0; o->argv[i] != NULL; i++)
		json_array_append_new(argv, arg_json(o->argv[i]));
	for (size_t i = 0; i < o->nfaults; i++)
		json_array_append_new(faults_json, json_string(o->faults[i]));
	json_object_set_new(report, "command", argv);
	json_object_set_new(report, "faults", faults_json);
	json_object_set_new(report, "exit", exit_json(&end, o->stop_signal));
	if (o->until != NULL) {
		json_t *u = json_pack("{s:s}", "command", o->until);

		if (end.until_done)
			status_json(u, end.until_status);
		if (end.until_ended)
			until_ended_json(u, end.until_ended);
		json_object_set_new(report, "until", u);
	}
	rc = wc_exec_gather(dir, prog.pid, o->fiu_ctrl, report);
	if (rc == 0)
		wc_exec_rules_report(o, report);
	if (rc == 0 && o->output != NULL) {
		/* cmd_exec checked the path before the run: this is a
		 * failure of the write itself (ENOSPC), or a change since */
		int err = wc_json_to_file(report, o->output,
					  JSON_INDENT(2) | JSON_SORT_KEYS, 0);

		if (err < 0)
			rc = fail(o->output, -err);
	} else if (rc == 0) {
		if (json_dumpf(report, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) != 0 ||
		    putchar('\n') == EOF || fflush(stdout) != 0)
			rc = fail("stdout", errno ? errno : EIO);
	}
	json_decref(report);
	if (rc == 0 && !o->exit_zero)
		rc = program_status(&end, o->stop_signal);
	/* wc_exec_gather removed the directory, unless it failed to open it */
out_signals:
	terminal_back(plan.tty); /* when it is not back yet */
	if (tty) {
		(void)sigaction(SIGINT, &int_old, NULL);
		(void)sigaction(SIGQUIT, &quit_old, NULL);
	}
	(void)sigprocmask(SIG_SETMASK, &old, NULL);
	(void)sigaction(SIGCHLD, &chld_old, NULL);
out_dir:
	discard_dir(dir); /* gone already, unless something failed */
out_free:
	free(faults);
	free(preload);
	if (end.fatal_signal != 0) {
		/* Die of it, as without exec in between: the caller sees the
		 * signal, and everything exec started is dead already. */
		(void)sigaction(end.fatal_signal, &dfl, NULL);
		(void)raise(end.fatal_signal);
		return 3; /* not reached: its default action ends us */
	}
	return rc;
}
