/* cg_bpf.c - a slot's device filter: a cgroup device BPF program that denies
 * the devices of devices.deny and allows every other one.
 *
 * On cgroup v2 the kernel asks the programs attached to a cgroup and to its
 * ancestors (BPF_CGROUP_DEVICE, attached with BPF_F_ALLOW_MULTI as systemd
 * attaches its own) at every open(2) and mknod(2) of a device node; any
 * program answering 0 denies it with EPERM. The filter of a slot is the one
 * program named "cgpool_devices" attached to its cgroup2 directory. A new
 * deny list attaches its program first and detaches the old ones after, so
 * the slot is never without a filter in between; "" detaches them all. The
 * kernel keeps an attached program when the daemon exits, and the next
 * write finds it again by its name (BPF_PROG_QUERY), so nothing about a
 * filter lives in the daemon.
 *
 * The program (ctx is struct bpf_cgroup_dev_ctx):
 *   r2 = ctx->access_type & 0xffff   device type: BPF_DEVCG_DEV_BLOCK / _CHAR
 *   r3 = ctx->major, r4 = ctx->minor
 *   per rule: if r2 != type goto next; if r3 != major goto next;
 *             if r4 < lo goto next; if r4 > hi goto next; return 0
 *   return 1 */
#include "config.h"

#include "cg_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define PROG_NAME "cgpool_devices"
#define MAX_RULES 64
#define MAX_INSNS (5 + 6 * MAX_RULES + 2)
#define MAX_ATTACHED 64

struct dev_rule {
	unsigned type; /* BPF_DEVCG_DEV_CHAR or _BLOCK */
	unsigned major;
	unsigned lo, hi; /* minors, inclusive */
};

static int sys_bpf(enum bpf_cmd cmd, union bpf_attr *attr)
{
	long r = syscall(SYS_bpf, cmd, attr, sizeof(*attr));

	return r < 0 ? -errno : (int)r;
}

/* the rules of a list conf_res_parse normalised ("c 195:0,c 195:2-3,b 8:*") */
static int parse_rules(const char *v, struct dev_rule *rules, size_t *n)
{
	*n = 0;
	while (*v) {
		char type;
		unsigned major, lo, hi;
		int used = 0;
		if (*n == MAX_RULES)
			return -E2BIG;
		if (sscanf(v, "%c %u:*%n", &type, &major, &used) == 2 && used) {
			lo = 0;
			hi = UINT32_MAX;
		} else if (sscanf(v, "%c %u:%u-%u%n", &type, &major, &lo, &hi, &used) == 4 && used) {
		} else if (sscanf(v, "%c %u:%u%n", &type, &major, &lo, &used) == 3 && used) {
			hi = lo;
		} else
			return -EINVAL;
		if ((type != 'c' && type != 'b') || lo > hi)
			return -EINVAL;
		rules[(*n)++] = (struct dev_rule){ type == 'c' ? BPF_DEVCG_DEV_CHAR : BPF_DEVCG_DEV_BLOCK, major, lo, hi };
		v += used;
		if (*v == ',')
			v++;
		else if (*v)
			return -EINVAL;
	}
	return 0;
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })

static size_t build(const struct dev_rule *rules, size_t n, struct bpf_insn *p)
{
	size_t k = 0;

	p[k++] = INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_2, BPF_REG_1, 0, 0);
	p[k++] = INSN(BPF_ALU64 | BPF_AND | BPF_K, BPF_REG_2, 0, 0, 0xffff);
	p[k++] = INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_3, BPF_REG_1, 4, 0);
	p[k++] = INSN(BPF_LDX | BPF_W | BPF_MEM, BPF_REG_4, BPF_REG_1, 8, 0);
	for (size_t i = 0; i < n; i++) {
		/* the jumps skip to the next rule: 5 instructions after the first */
		p[k++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_2, 0, 5, (int)rules[i].type);
		p[k++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_3, 0, 4, (int)rules[i].major);
		/* the minor was loaded zero-extended; "*" is hi = -1, which no
		 * minor passes */
		p[k++] = INSN(BPF_JMP | BPF_JLT | BPF_K, BPF_REG_4, 0, 3, (int)rules[i].lo);
		p[k++] = INSN(BPF_JMP | BPF_JGT | BPF_K, BPF_REG_4, 0, 2, (int)rules[i].hi);
		p[k++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 0);
		p[k++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	}
	p[k++] = INSN(BPF_ALU64 | BPF_MOV | BPF_K, BPF_REG_0, 0, 0, 1);
	p[k++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return k;
}

static int load(const struct dev_rule *rules, size_t n)
{
	struct bpf_insn insns[MAX_INSNS];
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
	a.insns = (uint64_t)(uintptr_t)insns;
	a.insn_cnt = (uint32_t)build(rules, n, insns);
	a.license = (uint64_t)(uintptr_t) "GPL";
	snprintf(a.prog_name, sizeof(a.prog_name), "%s", PROG_NAME);
	return sys_bpf(BPF_PROG_LOAD, &a);
}

/* the ids of the programs attached to the cgroup dfd, at most max */
static int attached(int dfd, uint32_t *ids, uint32_t max, uint32_t *n)
{
	union bpf_attr a;
	int r;

	memset(&a, 0, sizeof(a));
	a.query.target_fd = (uint32_t)dfd;
	a.query.attach_type = BPF_CGROUP_DEVICE;
	a.query.prog_ids = (uint64_t)(uintptr_t)ids;
	a.query.prog_cnt = max;
	r = sys_bpf(BPF_PROG_QUERY, &a);
	if (r < 0)
		return r;
	*n = a.query.prog_cnt < max ? a.query.prog_cnt : max;
	return 0;
}

/* an fd of program id when it is a slot filter, -ENOENT when it is another */
static int ours(uint32_t id)
{
	struct bpf_prog_info info;
	union bpf_attr a;
	int fd, r;

	memset(&a, 0, sizeof(a));
	a.prog_id = id;
	fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
	if (fd < 0)
		return fd;
	memset(&info, 0, sizeof(info));
	memset(&a, 0, sizeof(a));
	a.info.bpf_fd = (uint32_t)fd;
	a.info.info_len = sizeof(info);
	a.info.info = (uint64_t)(uintptr_t)&info;
	r = sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a);
	if (r == 0 && strncmp(info.name, PROG_NAME, sizeof(info.name)) == 0)
		return fd;
	close(fd);
	return r < 0 ? r : -ENOENT;
}

static int attach(int dfd, int pfd, enum bpf_cmd cmd)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.target_fd = (uint32_t)dfd;
	a.attach_bpf_fd = (uint32_t)pfd;
	a.attach_type = BPF_CGROUP_DEVICE;
	a.attach_flags = cmd == BPF_PROG_ATTACH ? BPF_F_ALLOW_MULTI : 0;
	return sys_bpf(cmd, &a);
}

int cg_bpf_devices(const char *dir, const char *deny)
{
	struct dev_rule rules[MAX_RULES];
	uint32_t old[MAX_ATTACHED], nold = 0;
	size_t n;
	int dfd, pfd = -1, r;

	r = parse_rules(deny, rules, &n);
	if (r < 0)
		return r;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	r = attached(dfd, old, MAX_ATTACHED, &nold);
	if (r == 0 && n > 0) {
		pfd = load(rules, n);
		r = pfd < 0 ? pfd : attach(dfd, pfd, BPF_PROG_ATTACH);
	}
	for (uint32_t i = 0; r == 0 && i < nold; i++) {
		int fd = ours(old[i]);
		if (fd == -ENOENT)
			continue; /* someone else's program, or gone */
		r = fd < 0 ? fd : attach(dfd, fd, BPF_PROG_DETACH);
		if (fd >= 0)
			close(fd);
	}
	/* the old filter may still be there: take the new one away, so the
	 * slot keeps what it had */
	if (r < 0 && pfd >= 0)
		attach(dfd, pfd, BPF_PROG_DETACH);
	if (pfd >= 0)
		close(pfd);
	close(dfd);
	return r;
}
