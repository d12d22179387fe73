/*
 * bench_common.h
 *		Small helpers shared by the benchmark programs (db_bench,
 *		value_bench): the machine they ran on, option parsing.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The CPU model from /proc/cpuinfo into buf ("unknown" if not found). */
static inline void
bench_cpu_model(char *buf, size_t n)
{
	char		line[512];
	FILE	   *f = fopen("/proc/cpuinfo", "r");

	snprintf(buf, n, "unknown");
	if (f == NULL)
		return;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strncmp(line, "model name", 10) == 0)
		{
			char	   *p = strchr(line, ':');

			if (p != NULL)
			{
				p += strspn(p, ": \t");
				p[strcspn(p, "\n")] = '\0';
				snprintf(buf, n, "%s", p);
			}
			break;
		}
	fclose(f);
}

/*
 * Parses a non-negative decimal number given for option opt (with or
 * without its leading "--"); prints why and exits with status 2 if it is
 * not one.
 */
static inline uint64_t
bench_parse_number(const char *prog, const char *opt, const char *s)
{
	char	   *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || s[0] == '-')
	{
		fprintf(stderr, "%s: invalid value \"%s\" for %s%s\n", prog, s,
				opt[0] == '-' ? "" : "--", opt);
		exit(2);
	}
	return (uint64_t) v;
}

#endif							/* BENCH_COMMON_H */
