/* The kernel's dirty background threshold, computed as mm/page-writeback.c
 * does (domain_dirty_limits), from what /proc and the memory cgroup show.
 * Two approximations: the global dirtyable memory is MemFree plus the file
 * LRU pages, without subtracting the zones' reserves (totalreserve_pages,
 * about 1% of memory, which /proc does not show), so the threshold can be
 * that much higher than the kernel's; a real-time task's larger limits are
 * not modelled. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dirty.h"

/* The vm.* sysctls that set the thresholds. */
struct vm_dirty {
	uint64_t bg_bytes, bg_ratio, bytes, ratio;
};

/* What a memory cgroup may still fill with file pages. */
struct memcg {
	uint64_t headroom;  /* below its limit; UINT64_MAX: none */
	uint64_t file, dirty;
};

/* A file of one number; "max" (cgroup v2: no limit) is UINT64_MAX. */
static bool read_u64(const char *path, uint64_t *v)
{
	char buf[32];
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return false;
	ok = fgets(buf, sizeof(buf), f) != NULL;
	fclose(f);
	if (ok && !strncmp(buf, "max", 3))
		*v = UINT64_MAX;
	else if (ok)
		ok = sscanf(buf, "%" SCNu64, v) == 1;
	return ok;
}

void cli_read_keys(const char *path, const char *const *keys, uint64_t *v)
{
	size_t n, cap = 0;
	char *line = NULL;
	FILE *f = fopen(path, "re");

	for (int k = 0; keys[k]; k++)
		v[k] = 0;
	if (!f)
		return;
	while (getline(&line, &cap, f) > 0) {
		for (int k = 0; keys[k]; k++) {
			n = strlen(keys[k]);
			if (!strncmp(line, keys[k], n) && (line[n] == ' ' || line[n] == ':') &&
			    sscanf(line + n + 1, " %" SCNu64, &v[k]) != 1)
				v[k] = 0;
		}
	}
	free(line);
	fclose(f);
}

static void read_vm(struct vm_dirty *vm)
{
	*vm = (struct vm_dirty){ .bg_ratio = 10, .ratio = 20 };
	read_u64("/proc/sys/vm/dirty_background_bytes", &vm->bg_bytes);
	read_u64("/proc/sys/vm/dirty_background_ratio", &vm->bg_ratio);
	read_u64("/proc/sys/vm/dirty_bytes", &vm->bytes);
	read_u64("/proc/sys/vm/dirty_ratio", &vm->ratio);
}

/* One limit of a domain of avail dirtyable bytes: a byte setting is the
 * global limit, in a cgroup's domain the same share of its memory. */
static uint64_t limit(uint64_t bytes, uint64_t ratio, uint64_t avail, uint64_t global)
{
	if (!bytes)
		return avail / 100 * ratio + avail % 100 * ratio / 100;
	if (avail >= global)
		return bytes;
	return (uint64_t)((double)bytes / (double)global * (double)avail);
}

/* The background threshold of a domain; as the kernel, never at or above
 * the foreground one (where writers are throttled), else half of it. */
static uint64_t threshold(const struct vm_dirty *vm, uint64_t avail, uint64_t global)
{
	uint64_t bg = limit(vm->bg_bytes, vm->bg_ratio, avail, global);
	uint64_t fg = limit(vm->bytes, vm->ratio, avail, global);

	return bg >= fg ? fg / 2 : bg;
}

/* The directory of the process's memory cgroup: from the "0::PATH" line
 * of /proc/self/cgroup under a cgroup v2 mount (with the memory
 * controller: memory.max is there), else from the v1 "N:...memory...:PATH"
 * line under /sys/fs/cgroup/memory. v2: whether it was v2. */
static bool memcg_dir(char *dir, size_t n, bool *v2)
{
	static const char *const roots[] = { "/sys/fs/cgroup", "/sys/fs/cgroup/unified" };
	char *line = NULL, *path, v1[PATH_MAX] = "", probe[PATH_MAX + 16];
	size_t cap = 0;
	bool found = false;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return false;
	while (!found && getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		path = strchr(line, ':');
		path = path ? strchr(path + 1, ':') : NULL;
		if (!path)
			continue;
		*path++ = '\0';
		if (!strncmp(line, "0:", 3)) {
			for (size_t i = 0; !found && i < 2; i++) {
				snprintf(dir, n, "%s%s", roots[i], path);
				snprintf(probe, sizeof(probe), "%s/memory.max", dir);
				found = access(probe, R_OK) == 0;
			}
		} else if (strstr(line, ":memory") || strstr(line, ",memory")) {
			snprintf(v1, sizeof(v1), "/sys/fs/cgroup/memory%s", path);
		}
	}
	free(line);
	fclose(f);
	*v2 = found;
	if (!found && *v1) {
		snprintf(dir, n, "%s", v1);
		found = access(dir, R_OK) == 0;
	}
	return found;
}

/* v2: the lowest room left under memory.max and memory.high, in the
 * cgroup or any parent below the root (which has neither), as
 * mem_cgroup_wb_stats finds it. */
static uint64_t headroom_v2(char *dir, size_t n)
{
	uint64_t room = UINT64_MAX, max, high, used;
	size_t len = strlen(dir);
	char *slash;

	for (int depth = 0; depth < 64; depth++) {
		snprintf(dir + len, n - len, "/memory.max");
		if (!read_u64(dir, &max))
			break;
		snprintf(dir + len, n - len, "/memory.high");
		if (read_u64(dir, &high) && high < max)
			max = high;
		snprintf(dir + len, n - len, "/memory.current");
		if (read_u64(dir, &used) && max - (used < max ? used : max) < room)
			room = max - (used < max ? used : max);
		dir[len] = '\0';
		slash = strrchr(dir, '/');
		if (!slash || slash == dir)
			break;
		*slash = '\0';
		len = (size_t)(slash - dir);
	}
	return room;
}

static bool read_memcg(struct memcg *m)
{
	static const char *const v2_keys[] = {
		"active_file", "inactive_file", "file_dirty", "file_writeback", NULL
	};
	static const char *const v1_keys[] = {
		"total_active_file", "total_inactive_file", "total_dirty",
		"total_writeback", "hierarchical_memory_limit", NULL
	};
	char dir[PATH_MAX], stat[PATH_MAX + 32];
	uint64_t limit, used = 0, v[5];
	bool v2;

	if (!memcg_dir(dir, sizeof(dir), &v2))
		return false;
	snprintf(stat, sizeof(stat), "%s/memory.stat", dir);
	if (v2) {
		cli_read_keys(stat, v2_keys, v);
		m->file = v[0] + v[1];
		m->dirty = v[2] + v[3];
		m->headroom = headroom_v2(dir, sizeof(dir));
		return true;
	}
	/* v1 throttles a cgroup's writers by reclaim, not by dirty limits of
	 * its own; the same rule is applied to its limit (with its parents',
	 * hierarchical_memory_limit) all the same. */
	cli_read_keys(stat, v1_keys, v);
	m->file = v[0] + v[1];
	m->dirty = v[2] + v[3];
	limit = v[4];
	snprintf(stat, sizeof(stat), "%s/memory.usage_in_bytes", dir);
	read_u64(stat, &used);
	m->headroom = limit ? limit - (used < limit ? used : limit) : UINT64_MAX;
	return true;
}

struct cli_dirty cli_dirty_background(void)
{
	static const char *const keys[] = {
		"MemFree", "Active(file)", "Inactive(file)", "Dirty", "Writeback", NULL
	};
	uint64_t v[5], avail, dirty, clean, other, cg;
	struct cli_dirty d = { 0 };
	struct vm_dirty vm;
	struct memcg m;

	cli_read_keys("/proc/meminfo", keys, v);
	avail = (v[0] + v[1] + v[2]) * 1024;  /* kB */
	dirty = (v[3] + v[4]) * 1024;
	read_vm(&vm);
	d.bytes = threshold(&vm, avail, avail);
	if (!read_memcg(&m) || m.headroom >= avail)
		return d;
	/* The cgroup's domain, as mdtc_calc_avail: its own file pages, and
	 * what it may still add to them, up to the clean pages others have. */
	clean = m.file - (m.dirty < m.file ? m.dirty : m.file);
	other = avail - (dirty < avail ? dirty : avail);
	other -= clean < other ? clean : other;
	cg = threshold(&vm, m.file + (m.headroom < other ? m.headroom : other), avail);
	if (cg < d.bytes) {
		d.bytes = cg;
		d.cgroup = true;
	}
	return d;
}
