/* hmap.c - hash map from strings or integers to pointers */
#include "config.h"

#include "hmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define MIN_CAP 16

static uint64_t sip_key[2];
static bool sip_ready;

#define ROTL(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND(v0, v1, v2, v3)                                                                           \
	do {                                                                                               \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32);                                  \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                                                     \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                                                     \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32);                                  \
	} while (0)

/* SipHash-1-3 of len bytes */
static uint64_t siphash(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t v0 = 0x736f6d6570736575ULL ^ sip_key[0], v1 = 0x646f72616e646f6dULL ^ sip_key[1];
	uint64_t v2 = 0x6c7967656e657261ULL ^ sip_key[0], v3 = 0x7465646279746573ULL ^ sip_key[1];
	uint64_t b = (uint64_t)len << 56, m;
	size_t i;

	for (i = 0; i + 8 <= len; i += 8) {
		memcpy(&m, p + i, 8);
		v3 ^= m;
		SIPROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	for (size_t k = 0; i + k < len; k++)
		b |= (uint64_t)p[i + k] << (8 * k);
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

static void seed(void)
{
	if (sip_ready)
		return;
	if (getrandom(sip_key, sizeof(sip_key), GRND_NONBLOCK) != (ssize_t)sizeof(sip_key)) {
		struct timespec ts;
		clock_gettime(CLOCK_MONOTONIC, &ts);
		sip_key[0] = (uint64_t)ts.tv_nsec * 0x9e3779b97f4a7c15ULL ^ (uint64_t)getpid();
		sip_key[1] = (uint64_t)ts.tv_sec ^ (uintptr_t)&ts;
	}
	sip_ready = true;
}

static uint64_t hash_of(const struct hmap *m, uintptr_t key)
{
	if (m->str)
		return siphash((const char *)key, strlen((const char *)key));
	return siphash(&key, sizeof(key));
}

static bool same(const struct hmap *m, const struct hmap_ent *e, uint64_t h, uintptr_t key)
{
	if (e->hash != h)
		return false;
	return m->str ? strcmp((const char *)e->key, (const char *)key) == 0 : e->key == key;
}

void hmap_init(struct hmap *m, bool str_keys)
{
	seed();
	memset(m, 0, sizeof(*m));
	m->str = str_keys;
}

void hmap_fini(struct hmap *m)
{
	free(m->v);
	m->v = NULL;
	m->cap = m->n = 0;
}

static void place(struct hmap_ent *v, size_t cap, const struct hmap_ent *e)
{
	size_t i = (size_t)e->hash & (cap - 1);

	while (v[i].val)
		i = (i + 1) & (cap - 1);
	v[i] = *e;
}

static int grow(struct hmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : MIN_CAP;
	struct hmap_ent *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < m->cap; i++)
		if (m->v[i].val)
			place(v, cap, &m->v[i]);
	free(m->v);
	m->v = v;
	m->cap = cap;
	return 0;
}

int hmap_put(struct hmap *m, uintptr_t key, void *val)
{
	uint64_t h = hash_of(m, key);
	struct hmap_ent e = { h, key, val };
	size_t i;

	if (!val)
		return -EINVAL;
	for (i = m->cap ? (size_t)h & (m->cap - 1) : 0; m->cap && m->v[i].val; i = (i + 1) & (m->cap - 1)) {
		if (same(m, &m->v[i], h, key)) {
			m->v[i] = e;
			return 0;
		}
	}
	/* at most 3/4 full */
	if ((m->n + 1) * 4 > m->cap * 3 && grow(m) < 0)
		return -ENOMEM;
	place(m->v, m->cap, &e);
	m->n++;
	return 0;
}

static struct hmap_ent *find(const struct hmap *m, uintptr_t key)
{
	uint64_t h;

	if (!m->n)
		return NULL;
	h = hash_of(m, key);
	for (size_t i = (size_t)h & (m->cap - 1); m->v[i].val; i = (i + 1) & (m->cap - 1))
		if (same(m, &m->v[i], h, key))
			return &m->v[i];
	return NULL;
}

void *hmap_get(const struct hmap *m, uintptr_t key)
{
	struct hmap_ent *e = find(m, key);

	return e ? e->val : NULL;
}

void *hmap_del(struct hmap *m, uintptr_t key)
{
	struct hmap_ent *e = find(m, key);
	size_t i, j, home;
	void *val;

	if (!e)
		return NULL;
	val = e->val;
	i = (size_t)(e - m->v);
	/* shift later members of the probe run back into the hole */
	for (j = (i + 1) & (m->cap - 1); m->v[j].val; j = (j + 1) & (m->cap - 1)) {
		home = (size_t)m->v[j].hash & (m->cap - 1);
		if (((j - home) & (m->cap - 1)) >= ((j - i) & (m->cap - 1))) {
			m->v[i] = m->v[j];
			i = j;
		}
	}
	m->v[i].val = NULL;
	m->n--;
	return val;
}
