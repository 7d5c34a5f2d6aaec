/* The kernel's dirty background threshold for this process: how much of a
 * file's data may sit dirty in the page cache before the kernel's own
 * writeback starts on it. */
#ifndef CLI_DIRTY_H
#define CLI_DIRTY_H

#include <stdbool.h>
#include <stdint.h>

struct cli_dirty {
	uint64_t bytes;     /* the threshold */
	bool cgroup;        /* lowered to the memory cgroup's share */
};

/* vm.dirty_background_bytes, or vm.dirty_background_ratio percent of the
 * memory the kernel counts as dirtyable, lowered to the same share of what
 * the process's memory cgroup may still fill where its limit is lower.
 * Read from /proc and /sys each call: call it once per run. */
struct cli_dirty cli_dirty_background(void);

/* The numbers after each of keys (NULL-terminated) in "key N" (memory.stat)
 * or "Key: N kB" (/proc/meminfo) lines of the file path, into v; 0 for a
 * key not there. */
void cli_read_keys(const char *path, const char *const *keys, uint64_t *v);

#endif
