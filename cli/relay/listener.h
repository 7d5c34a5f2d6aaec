/* psplice relay: the listeners, included by relay.h. Each worker has its
 * own handle of each listener of every line, which names the line its
 * connections take (struct relay's lis, worker.c); net.c makes them,
 * activate.c takes a service manager's, replace.c those of the relay
 * --replace names. */
#ifndef CLI_RELAY_LISTENER_H
#define CLI_RELAY_LISTENER_H

/* A listener as one worker watches it: the line it accepts for. */
struct listener {
	struct handle h;
	struct relay *r;
};

static inline struct listener *listener_at(const struct relay *r, int i, int k)
{
	return &r->lis[(size_t)i * (size_t)r->nlisten + (size_t)k];
}

/* net.c: the listeners, made or taken, before any worker starts. */
int make_listeners(struct relay *r);
int bind_listeners(struct relay *r);
void unlink_made(const struct relay *r);
void free_listeners(struct relay *r);
void listener_text(const struct relay *r, int k, char *buf, size_t size);

/* activate.c */
int passed_listeners(struct relay *r);
int inherit_listeners(struct relay *r);
void free_names(char **names);

/* replace.c */
int replace_take(struct relay *r);
int replace_collect(struct relay *r, int **fds, int *n);
bool listener_matches(const struct sockaddr_storage *want, bool any, pid_t pid,
		      const struct sockaddr *sa, socklen_t len);
int replace_finish(struct relay *r);
int replace_forward(pid_t child, pid_t serving);

#endif
