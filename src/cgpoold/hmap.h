/* hmap.h - a hash map from a string or an integer to a pointer.
 *
 * Open addressing with linear probing and deletion by backward shift, so
 * lookups stay O(1) however many slots, keys and watches the daemon holds.
 * String keys are hashed with SipHash-1-3 under a key drawn at start, so a
 * client choosing job keys cannot make them collide on purpose. A string
 * key is not copied: it must live as long as its entry (the map points into
 * the object that owns it, e.g. a slot's key). */
#ifndef CGPOOL_HMAP_H
#define CGPOOL_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct hmap_ent {
	uint64_t hash;
	uintptr_t key; /* a const char * or an integer */
	void *val;     /* NULL: free bucket */
};

struct hmap {
	struct hmap_ent *v;
	size_t cap; /* a power of two, or 0 */
	size_t n;
	bool str;   /* keys are strings */
};

void hmap_init(struct hmap *m, bool str_keys);
void hmap_fini(struct hmap *m); /* frees the table, not the values */
/* Insert or replace; val must not be NULL. -ENOMEM. */
int hmap_put(struct hmap *m, uintptr_t key, void *val);
void *hmap_get(const struct hmap *m, uintptr_t key);
/* Remove key; returns its value, or NULL when absent. */
void *hmap_del(struct hmap *m, uintptr_t key);

#define HMAP_STR(s) ((uintptr_t)(const char *)(s))

#endif
