/*
 * cli.c: what the subcommands of the command line share: the usage error
 * and its pointer to --help, --help itself, the check of an output file
 * before a run, and the scenario settings that flags apply (cli.h).
 */
#include "cli.h"
#include "outpath.h"

#include <stdio.h>
#include <string.h>

/* The command whose --help a usage error points to. */
static const char *help_command = "run";

void wc_cli_set_help(const char *command)
{
	help_command = command;
}

int wc_cli_usage_error(const char *fmt, const char *a, const char *b)
{
	fprintf(stderr, "wirecheck: ");
	fprintf(stderr, fmt, a, b);
	fprintf(stderr, "\nTry 'wirecheck %s --help'.\n", help_command);
	return 2;
}

/*
 * A file the command line names for wirecheck (or strace) to write, checked
 * before anything runs (harness/outpath.h), so that a run is not spent on
 * a report it cannot write. Returns 0, or 2 after a usage error that names
 * the flag, the path and the reason.
 */
int wc_cli_check_output(const char *flag, const char *path)
{
	char why[4200], named[4200];

	if (path == NULL || wc_output_check(path, why, sizeof(why)) == 0)
		return 0;
	(void)snprintf(named, sizeof(named), "%s '%s'", flag, path);
	return wc_cli_usage_error("%s: cannot write there: %s", named, why);
}

/* The setting a flag --NAME applies (scenario.c's table), or NULL. */
sc_setting_fn wc_cli_flag_setting(const char *flag)
{
	return strncmp(flag, "--", 2) == 0 ? sc_flag_setting(flag + 2) : NULL;
}

/* Applies one flag with a value to the scenario. 0, or 2 after a message. */
int wc_cli_apply_flag(struct scenario *sc, const char *flag, const char *val)
{
	sc_setting_fn apply = wc_cli_flag_setting(flag);
	char err[512];
	int rc;

	if (!apply)
		return wc_cli_usage_error("unknown flag '%s'%s", flag, "");
	rc = apply(sc, val, 0, err, sizeof(err));
	/* The setting's message starts with its scenario keyword: name the
	 * flag instead ("--clamp-send '0': ..."), or put the flag first. */
	if (rc < 0 && strncmp(err, flag + 2, strlen(flag + 2)) == 0)
		return wc_cli_usage_error("--%s%s", err, "");
	if (rc < 0)
		return wc_cli_usage_error("%s: %s", flag, err);
	return 0;
}

int wc_cli_wants_help(int argc, char **argv, const char *text)
{
	for (int i = 0; i < argc; i++)
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(text, stdout);
			return 1;
		}
	return 0;
}
