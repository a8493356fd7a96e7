/* res.h - the resource keys: the one table of what a slot can be given.
 *
 * A resource key is a cgroup v2 interface file (memory.max, cpu.weight...),
 * or devices.deny, which no file holds (a device filter program, cg_bpf.c).
 * Each key has an id (its place in the table, which is also its bit in a
 * mask: 1 << id), the controller it needs (an index in cg_ctrls, -1: none)
 * and the value that resets it for the next key of a slot. The config parser
 * (conf_value.c: how a value is written), the cgroup layer (cg_res.c: its v1
 * equivalent), the pool (the reset at the next run) and the state file (a
 * run's limits, kept by name) all go by this table. */
#ifndef CGPOOL_RES_H
#define CGPOOL_RES_H

#include <jansson.h>

enum res_id {
	RES_MEMORY_MAX,
	RES_MEMORY_HIGH,
	RES_MEMORY_LOW,
	RES_MEMORY_SWAP_MAX,
	RES_PIDS_MAX,
	RES_CPU_MAX,
	RES_CPU_WEIGHT,
	RES_IO_WEIGHT,
	RES_CPUSET_CPUS,
	RES_CPUSET_MEMS,
	RES_DEVICES_DENY,
	RES_NKEYS,
};

struct res_key {
	const char *name;
	int ctrl;          /* index in cg_ctrls (memory 0, pids 1, cpu 2, io 3, cpuset 4); -1: none */
	const char *reset; /* the kernel's default, written back for the slot's next key */
};

/* the key with this id, NULL past the last */
const struct res_key *res_key(unsigned id);
/* the id of a key by name, -1: not a resource key */
int res_find(const char *name);
/* 1 << id, 0 for a name that is not a resource key */
unsigned res_bit(const char *name);
/* the names of the keys whose bits are set in mask, as a JSON array (a
 * run's limits: what the state file keeps and what a Slot shows) */
json_t *res_mask_json(unsigned mask);
/* the mask of a JSON array of key names; -EINVAL: not an array of them */
int res_mask_from_json(json_t *a, unsigned *mask);

#endif
