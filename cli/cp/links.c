/* psplice cp --preserve=links: the copy each SOURCE inode with more than
 * one name got, so that its other names become links to that copy, as
 * cp -a keeps them. Only inodes with names still to come are held: an
 * entry is dropped when the last of its st_nlink names was seen, so the
 * table is as large as the links the walk has split, not the tree. The
 * threads of a walk (-j) share it under its lock: the first name of an
 * inode claims it, and its other names wait until its copy is made. */
#include <pthread.h>
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
	bool making;    /* claimed: its copy is being made */
	char *path;
};

struct cp_links {
	pthread_mutex_t lock;
	pthread_cond_t made; /* a claimed copy made, or given up */
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
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->made, NULL);
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
	pthread_cond_destroy(&l->made);
	pthread_mutex_destroy(&l->lock);
	free(l);
}

static struct link_entry **lookup(const struct cp_links *l, const struct stat *st)
{
	struct link_entry **e = &l->slots[slot_of(l, st->st_dev, st->st_ino)];

	while (*e && ((*e)->dev != st->st_dev || (*e)->ino != st->st_ino))
		e = &(*e)->next;
	return e;
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

/* The entry of e, out of the table. */
static void drop(struct cp_links *l, struct link_entry **at)
{
	struct link_entry *e = *at;

	*at = e->next;
	free(e->path);
	free(e);
	l->count--;
}

/* dst claimed as the copy of st's inode. -1: no memory. */
static int add(struct cp_links *l, const struct stat *st, const char *dst, bool counted)
{
	struct link_entry *e = malloc(sizeof(*e)), **at;

	if (!e || !(e->path = strdup(dst))) {
		free(e);
		return -1;
	}
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->counted = counted;
	e->making = true;
	e->left = st->st_nlink > 0 ? st->st_nlink - 1 : 0;
	if (l->count >= l->size)
		grow(l);
	at = &l->slots[slot_of(l, e->dev, e->ino)];
	e->next = *at;
	*at = e;
	l->count++;
	return 0;
}

int cp_links_claim(struct cp_links *l, const struct stat *st, const char *dst, bool counted,
		   char **earlier)
{
	struct link_entry *e;
	int rc = 0;

	*earlier = NULL;
	pthread_mutex_lock(&l->lock);
	/* Another name's copy being made: linking to it now could find
	 * nothing there yet, or a copy that fails and is removed. */
	while ((e = *lookup(l, st)) && e->making)
		pthread_cond_wait(&l->made, &l->lock);
	if (e)
		rc = (*earlier = strdup(e->path)) ? 1 : -1;
	else
		rc = add(l, st, dst, counted);
	pthread_mutex_unlock(&l->lock);
	return rc;
}

void cp_links_made(struct cp_links *l, const struct stat *st, bool made)
{
	struct link_entry **at;

	pthread_mutex_lock(&l->lock);
	at = lookup(l, st);
	if (*at && made)
		(*at)->making = false;
	/* Not made (left alone, or failed): the next name tries again. With
	 * no other name to come, there is nothing to keep. */
	if (*at && (!made || ((*at)->counted && !(*at)->left)))
		drop(l, at);
	pthread_cond_broadcast(&l->made);
	pthread_mutex_unlock(&l->lock);
}

void cp_links_seen(struct cp_links *l, const struct stat *st)
{
	struct link_entry **at;

	pthread_mutex_lock(&l->lock);
	at = lookup(l, st);
	if (*at && (*at)->counted && !--(*at)->left)
		drop(l, at);
	pthread_mutex_unlock(&l->lock);
}
