/*
 * bench_machine.h
 *		What the benchmarks print about the machine they ran on.
 */
#ifndef BENCH_MACHINE_H
#define BENCH_MACHINE_H

#include <stdio.h>
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

#endif							/* BENCH_MACHINE_H */
