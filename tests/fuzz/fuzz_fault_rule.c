/*
 * fuzz_fault_rule.c: libFuzzer target for the gate's rule parser
 * (faultinject/fi_spec.c, docs/cli.md "--fault RULE").
 *
 * The input, up to its first NUL, is a spec. Beyond "no crash, no sanitizer
 * finding", it checks that a rule the parser accepts formats to a canonical
 * spec that parses back to the same rule and formats to the same text (the
 * harness hands the subject canonical specs: a spec that does not survive
 * the trip would arm a different rule than the scenario said), and that the
 * errno and signal names round-trip through their numbers.
 */
#include "fi.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what, const char *spec)
{
	if (!ok) {
		fprintf(stderr, "fuzz_fault_rule: %s (spec \"%s\")\n", what, spec);
		abort();
	}
}

static int same_rule(const struct fi_rule *a, const struct fi_rule *b)
{
	return strcmp(a->target, b->target) == 0 && a->sys_mask == b->sys_mask &&
	       a->action == b->action && a->param == b->param &&
	       a->after == b->after && a->repeat == b->repeat && a->fd == b->fd &&
	       a->any_fd == b->any_fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *spec = malloc(size + 1);
	char err[512], canon[512], again[512];
	struct fi_rule rule, back;
	int n, v;

	if (!spec)
		return 0;
	memcpy(spec, data, size);
	spec[size] = '\0';
	if (fi_rule_parse(spec, &rule, err, sizeof(err)) == 0) {
		n = fi_rule_format(&rule, canon, sizeof(canon));
		check(n > 0 && (size_t)n < sizeof(canon), "format failed or truncated", spec);
		check(fi_rule_parse(canon, &back, err, sizeof(err)) == 0,
		      "the canonical form does not parse", spec);
		check(same_rule(&rule, &back), "the canonical form is another rule", spec);
		n = fi_rule_format(&back, again, sizeof(again));
		check(n > 0 && strcmp(canon, again) == 0, "formatting is not stable", spec);
	} else {
		check(memchr(err, '\0', sizeof(err)) != NULL && err[0] != '\0',
		      "a refusal without a message", spec);
	}
	v = fi_errno_parse(spec);
	if (v >= 0 && fi_errno_name(v))
		check(fi_errno_parse(fi_errno_name(v)) == v, "errno name does not round-trip", spec);
	v = fi_signal_parse(spec);
	if (v >= 0 && fi_signal_name(v))
		check(fi_signal_parse(fi_signal_name(v)) == v, "signal name does not round-trip", spec);
	free(spec);
	return 0;
}
