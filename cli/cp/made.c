/* psplice cp: what this command made of its SOURCE operands, so that a
 * later operand never overwrites it (made.h in cp.h). A set of the copies'
 * inodes, each with its SOURCE's, open-addressed: `cp *.jpg dir` may name
 * hundreds of thousands of operands. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cp.h"

struct made_entry {
	dev_t dev, src_dev;
	ino_t ino, src_ino;
	char *src; /* the operand; NULL: the slot is free */
};

struct cp_made {
	struct made_entry *slot;
	size_t size, used; /* size a power of two, used at most half of it */
};

struct cp_made *cp_made_new(void)
{
	struct cp_made *m = calloc(1, sizeof(*m));

	if (m && !(m->slot = calloc(m->size = 64, sizeof(*m->slot)))) {
		free(m);
		return NULL;
	}
	return m;
}

void cp_made_free(struct cp_made *m)
{
	size_t i;

	for (i = 0; m && i < m->size; i++)
		free(m->slot[i].src);
	if (m)
		free(m->slot);
	free(m);
}

static size_t slot_of(const struct cp_made *m, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)ino ^ ((uint64_t)dev << 32 | (uint64_t)dev >> 32)) *
		     UINT64_C(0x9e3779b97f4a7c15);
	size_t i = (size_t)(h >> 17) & (m->size - 1);

	while (m->slot[i].src && (m->slot[i].dev != dev || m->slot[i].ino != ino))
		i = (i + 1) & (m->size - 1);
	return i;
}

static int grow(struct cp_made *m)
{
	struct cp_made big = { calloc(m->size * 2, sizeof(*m->slot)), m->size * 2, 0 };
	size_t i;

	if (!big.slot)
		return -1;
	for (i = 0; i < m->size; i++)
		if (m->slot[i].src)
			big.slot[slot_of(&big, m->slot[i].dev, m->slot[i].ino)] = m->slot[i];
	big.used = m->used;
	free(m->slot);
	*m = big;
	return 0;
}

int cp_made_add(struct cp_made *m, const struct stat *dst, const char *src,
		const struct stat *st)
{
	char *copy = strdup(src);
	size_t i;

	if (!copy || (m->used + 1 > m->size / 2 && grow(m) < 0)) {
		free(copy);
		return -1;
	}
	i = slot_of(m, dst->st_dev, dst->st_ino);
	if (m->slot[i].src)
		free(m->slot[i].src);
	else
		m->used++;
	m->slot[i] = (struct made_entry){ .dev = dst->st_dev, .ino = dst->st_ino,
					  .src_dev = st->st_dev, .src_ino = st->st_ino,
					  .src = copy };
	return 0;
}

int cp_made_by(const struct cp_made *m, const struct stat *dst, const struct stat *st,
	       const char **src)
{
	const struct made_entry *e = &m->slot[slot_of(m, dst->st_dev, dst->st_ino)];

	if (!e->src)
		return 0;
	*src = e->src;
	return e->src_dev == st->st_dev && e->src_ino == st->st_ino ? 2 : 1;
}
