/* res.c - the resource keys (res.h) */
#include "config.h"

#include "res.h"

#include <errno.h>
#include <string.h>

static const struct res_key keys[RES_NKEYS] = {
	[RES_MEMORY_MAX] = { "memory.max", 0, "max" },
	[RES_MEMORY_HIGH] = { "memory.high", 0, "max" },
	[RES_MEMORY_LOW] = { "memory.low", 0, "0" },
	[RES_MEMORY_SWAP_MAX] = { "memory.swap.max", 0, "max" },
	[RES_PIDS_MAX] = { "pids.max", 1, "max" },
	[RES_CPU_MAX] = { "cpu.max", 2, "max 100000" },
	[RES_CPU_WEIGHT] = { "cpu.weight", 2, "100" },
	[RES_IO_WEIGHT] = { "io.weight", 3, "default 100" },
	[RES_CPUSET_CPUS] = { "cpuset.cpus", 4, "" },
	[RES_CPUSET_MEMS] = { "cpuset.mems", 4, "" },
	[RES_DEVICES_DENY] = { "devices.deny", -1, "" },
};

const struct res_key *res_key(unsigned id)
{
	return id < RES_NKEYS ? &keys[id] : NULL;
}

int res_find(const char *name)
{
	for (unsigned i = 0; i < RES_NKEYS; i++)
		if (strcmp(keys[i].name, name) == 0)
			return (int)i;
	return -1;
}

unsigned res_bit(const char *name)
{
	int id = res_find(name);

	return id < 0 ? 0 : 1U << id;
}

json_t *res_mask_json(unsigned mask)
{
	json_t *a = json_array();

	for (unsigned i = 0; a && i < RES_NKEYS; i++)
		if (mask & (1U << i))
			json_array_append_new(a, json_string(keys[i].name));
	return a;
}

int res_mask_from_json(json_t *a, unsigned *mask)
{
	unsigned m = 0, bit;
	json_t *v;
	size_t i;

	if (!json_is_array(a))
		return -EINVAL;
	json_array_foreach(a, i, v) {
		if (!json_is_string(v) || !(bit = res_bit(json_string_value(v))))
			return -EINVAL;
		m |= bit;
	}
	*mask = m;
	return 0;
}
