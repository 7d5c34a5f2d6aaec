/* psplice relay: --rate and --rate-total, token buckets that size each
 * move. A bucket's whole state is one time, "empty at": the tokens it holds
 * are the bytes its rate earned since then, up to its burst. Spending
 * moves that time on, by a compare-and-swap, so that the workers share the
 * process's buckets without a lock; two workers that read the same tokens
 * at once both spend them, and the bucket owes the excess, which the next
 * moves wait for: the rate holds over any longer time. */
#include "relay.h"

#define NS 1000000000ull
#define BURST_MIN (64u << 10)

/* Burst: a tenth of a second's worth, at least 64 KiB, at most a move.
 * Quantum: what a direction out of tokens waits for, PACE_MS worth and at
 * most half the burst, so that a paced stream moves in few, large calls
 * and still flows smoothly at a low rate. */
void rate_init(struct rate *rt, uint64_t bps)
{
	uint64_t burst = bps / 10, quantum = bps * PACE_MS / 1000;

	if (burst < BURST_MIN)
		burst = BURST_MIN;
	if (burst > CHUNK)
		burst = CHUNK;
	if (quantum > burst / 2)
		quantum = burst / 2;
	if (!quantum)
		quantum = 1;
	rt->bps = bps;
	rt->burst = burst;
	rt->quantum = quantum;
	rt->burst_ns = (int64_t)(burst * NS / bps);
}

/* The time n bytes take at the bucket's rate, rounded up. */
static int64_t span(const struct rate *rt, uint64_t n)
{
	return (int64_t)((n * NS + rt->bps - 1) / rt->bps);
}

/* The bytes a move may take from the bucket at now: UINT64_MAX without a
 * limit; 0 when it holds less than its quantum, *ready then raised to when
 * it will hold that much (CLOCK_MONOTONIC nanoseconds). A bucket never
 * spent from (empty at 0) is full. */
uint64_t bucket_allows(const struct rate *rt, atomic_int_fast64_t *empty_at, int64_t now,
		       int64_t *ready)
{
	int64_t at, since;
	uint64_t tokens;

	if (!rt->bps)
		return UINT64_MAX;
	at = atomic_load_explicit(empty_at, memory_order_relaxed);
	since = now - at;
	if (since > rt->burst_ns)
		since = rt->burst_ns;
	tokens = since > 0 ? (uint64_t)since * rt->bps / NS : 0;
	if (tokens > rt->burst)
		tokens = rt->burst;
	if (tokens >= rt->quantum)
		return tokens;
	at += span(rt, rt->quantum);
	if (at > *ready)
		*ready = at;
	return 0;
}

/* n bytes taken from the input: the bucket's empty time moves on by their
 * worth, from no earlier than a full bucket's. */
void bucket_spend(const struct rate *rt, atomic_int_fast64_t *empty_at, int64_t now,
		  uint64_t n)
{
	int_fast64_t at, from;

	if (!rt->bps || !n)
		return;
	at = atomic_load_explicit(empty_at, memory_order_relaxed);
	do {
		from = at > now - rt->burst_ns ? at : now - rt->burst_ns;
	} while (!atomic_compare_exchange_weak_explicit(empty_at, &at, from + span(rt, n),
							memory_order_relaxed,
							memory_order_relaxed));
}
