/* psplice cp --preserve=links: the copy each SOURCE inode with more than
 * one name got, so that its other names become links to that copy, as
 * cp -a keeps them. Only inodes with names still to come are held: an
 * entry is dropped when the last of its st_nlink names was seen, so the
 * table is as large as the links the walk has split, not the tree. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cp.h"

struct link_entry {
	struct link_entry *next;
	dev_t dev;
	ino_t ino;
	nlink_t left;   /* names still to come; 0: kept to the end */
	bool counted;
	char *path;
};

struct cp_links {
	struct link_entry **slots;
	size_t size;    /* a power of two */
	size_t count;
};

static size_t slot_of(const struct cp_links *l, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ (uint64_t)ino;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return (size_t)h & (l->size - 1);
}

struct cp_links *cp_links_new(void)
{
	struct cp_links *l = calloc(1, sizeof(*l));

	if (!l)
		return NULL;
	l->size = 64;
	l->slots = calloc(l->size, sizeof(*l->slots));
	if (!l->slots) {
		free(l);
		return NULL;
	}
	return l;
}

void cp_links_free(struct cp_links *l)
{
	struct link_entry *e, *next;
	size_t i;

	if (!l)
		return;
	for (i = 0; i < l->size; i++) {
		for (e = l->slots[i]; e; e = next) {
			next = e->next;
			free(e->path);
			free(e);
		}
	}
	free(l->slots);
	free(l);
}

static struct link_entry **lookup(const struct cp_links *l, const struct stat *st)
{
	struct link_entry **e = &l->slots[slot_of(l, st->st_dev, st->st_ino)];

	while (*e && ((*e)->dev != st->st_dev || (*e)->ino != st->st_ino))
		e = &(*e)->next;
	return e;
}

const char *cp_links_find(const struct cp_links *l, const struct stat *st)
{
	struct link_entry *e = *lookup(l, st);

	return e ? e->path : NULL;
}

/* Twice the slots once there are as many entries as slots. A failed
 * allocation keeps the table as it is: longer chains, still correct. */
static void grow(struct cp_links *l)
{
	struct link_entry **old = l->slots, *e, *next;
	size_t n = l->size, i, s;

	l->slots = calloc(2 * n, sizeof(*l->slots));
	if (!l->slots) {
		l->slots = old;
		return;
	}
	l->size = 2 * n;
	for (i = 0; i < n; i++) {
		for (e = old[i]; e; e = next) {
			next = e->next;
			s = slot_of(l, e->dev, e->ino);
			e->next = l->slots[s];
			l->slots[s] = e;
		}
	}
	free(old);
}

int cp_links_add(struct cp_links *l, const struct stat *st, const char *dst, bool counted)
{
	struct link_entry *e = malloc(sizeof(*e)), **at;

	if (!e || !(e->path = strdup(dst))) {
		free(e);
		return -1;
	}
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->counted = counted;
	e->left = st->st_nlink > 0 ? st->st_nlink - 1 : 0;
	if (counted && !e->left) {
		free(e->path);
		free(e);
		return 0;
	}
	if (l->count >= l->size)
		grow(l);
	at = &l->slots[slot_of(l, e->dev, e->ino)];
	e->next = *at;
	*at = e;
	l->count++;
	return 0;
}

void cp_links_seen(struct cp_links *l, const struct stat *st)
{
	struct link_entry **at = lookup(l, st), *e = *at;

	if (!e || !e->counted || --e->left)
		return;
	*at = e->next;
	free(e->path);
	free(e);
	l->count--;
}
