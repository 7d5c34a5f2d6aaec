/* What glibc alone has, each behind one helper with the fallback another
 * libc (musl) gets; out.h includes it, so every file of the command and
 * the benchmark has it. errno's names are src/shared/errname.h's. */
#ifndef CLI_COMPAT_H
#define CLI_COMPAT_H

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "errname.h"

/* strerror of err for any thread, in buf or static: glibc's strerror_r
 * (GNU's, with _GNU_SOURCE) returns the text, POSIX's (musl's) an error. */
static inline const char *cli_strerror(int err, char *buf, size_t len)
{
#ifdef __GLIBC__
	return strerror_r(err, buf, len);
#else
	if (strerror_r(err, buf, len))
		snprintf(buf, len, "Unknown error %d", err);
	return buf;
#endif
}

/* A rwlock whose waiting writer goes before readers that come after it, in
 * glibc. Another libc's default may let a stream of readers keep a writer
 * waiting: the relay's fork then waits for a pause in connection closes. */
#ifdef PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#define CLI_RWLOCK_WRITER_FIRST PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP
#else
#define CLI_RWLOCK_WRITER_FIRST PTHREAD_RWLOCK_INITIALIZER
#endif

/* pthread_join until the CLOCK_MONOTONIC time *until; 0 or ETIMEDOUT.
 * pthread_clockjoin_np is glibc's (2.31); elsewhere the same deadline
 * read on the wall clock now goes to pthread_timedjoin_np (glibc's and
 * musl's), which a step of the wall clock meanwhile moves. */
static inline int cli_clockjoin(pthread_t t, const struct timespec *until)
{
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 31)
	return pthread_clockjoin_np(t, NULL, CLOCK_MONOTONIC, until);
#else
	struct timespec mono, wall;
	long long ns;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &wall);
	ns = (until->tv_sec - mono.tv_sec) * 1000000000LL + (until->tv_nsec - mono.tv_nsec);
	if (ns < 0)
		ns = 0;
	ns += wall.tv_nsec;
	wall.tv_sec += (time_t)(ns / 1000000000);
	wall.tv_nsec = (long)(ns % 1000000000);
	return pthread_timedjoin_np(t, NULL, &wall);
#endif
}

/* pthread_create with a stack as large as glibc gives a thread by default
 * (RLIMIT_STACK's, 8 MiB as a rule): musl's is 128 KiB, and cp's walk of a
 * deep tree (t_cli_cpwalk's 120 levels) in a helper thread overflowed it. */
#define CLI_THREAD_STACK ((size_t)8 << 20)
static inline int cli_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
#ifdef __GLIBC__
	return pthread_create(t, NULL, fn, arg);
#else
	pthread_attr_t a;
	int err = pthread_attr_init(&a);

	if (err)
		return err;
	err = pthread_attr_setstacksize(&a, CLI_THREAD_STACK);
	if (!err)
		err = pthread_create(t, &a, fn, arg);
	pthread_attr_destroy(&a);
	return err;
#endif
}

#endif
