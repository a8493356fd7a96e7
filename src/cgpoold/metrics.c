/* metrics.c - the Prometheus text exposition of the daemon's counters */
#include "config.h"

#include "metrics.h"

#include <stdio.h>
#include <stdlib.h>

static void metric(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static int sum_runs(struct slot *s, void *ud)
{
	*(uint64_t *)ud += s->runs;
	return 0;
}

static void pool_metrics(FILE *f, const struct metrics_in *in)
{
	unsigned n[SLOT_NSTATES];
	uint64_t runs = 0;

	pool_counts(in->pool, n);
	pool_foreach(in->pool, sum_runs, &runs);
	metric(f, "cgpool_slots", "gauge", "Slots in the pool by state.");
	for (int i = 0; i < SLOT_NSTATES; i++)
		fprintf(f, "cgpool_slots{state=\"%s\"} %u\n", slot_state_name((enum slot_state)i), n[i]);
	metric(f, "cgpool_runs", "gauge", "Runs counted in the slots bound to their keys now.");
	fprintf(f, "cgpool_runs %llu\n", (unsigned long long)runs);
	metric(f, "cgpool_attach_total", "counter", "Successful Attach calls since start.");
	fprintf(f, "cgpool_attach_total %llu\n", (unsigned long long)in->attaches);
	metric(f, "cgpool_refused_total", "counter", "Calls refused with an error since start.");
	fprintf(f, "cgpool_refused_total %llu\n", (unsigned long long)in->refusals);
	metric(f, "cgpool_attach_waits_total", "counter",
	       "Attach calls that waited for what a job left in the key's slot to be killed, since start.");
	fprintf(f, "cgpool_attach_waits_total %llu\n", (unsigned long long)in->attach_waits);
	metric(f, "cgpool_slots_set_aside_total", "counter",
	       "Slots not recycled since start: still charged over recycle_max_memory after the scrub.");
	fprintf(f, "cgpool_slots_set_aside_total %llu\n", (unsigned long long)pool_set_aside_count(in->pool));
	metric(f, "cgpool_loop_stall_max_seconds", "gauge", "Longest event loop iteration since start.");
	fprintf(f, "cgpool_loop_stall_max_seconds %.6f\n", in->max_stall_ms / 1000);
}

static void stall_metrics(FILE *f, const struct stall_hist *h)
{
	uint64_t cum = 0;

	metric(f, "cgpool_loop_stall_seconds", "histogram",
	       "Event loop iterations that ran callbacks, by how long they ran.");
	for (unsigned i = 0; i < STALL_NBOUNDS; i++) {
		cum += h->bucket[i];
		fprintf(f, "cgpool_loop_stall_seconds_bucket{le=\"%g\"} %llu\n", stall_bounds[i], (unsigned long long)cum);
	}
	fprintf(f, "cgpool_loop_stall_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)h->count);
	fprintf(f, "cgpool_loop_stall_seconds_sum %.6f\n", h->sum);
	fprintf(f, "cgpool_loop_stall_seconds_count %llu\n", (unsigned long long)h->count);
}

static void work_metrics(FILE *f, struct work *w)
{
	struct work_stats st;

	work_get_stats(w, &st);
	metric(f, "cgpool_kernel_writes_in_flight", "gauge",
	       "Kernel writes (rmdir, reclaim, mkdir) handed to the worker threads, queued or running.");
	fprintf(f, "cgpool_kernel_writes_in_flight %llu\n", (unsigned long long)(st.queued + st.running));
	metric(f, "cgpool_worker_queue_depth", "gauge", "Kernel writes waiting for a worker thread.");
	fprintf(f, "cgpool_worker_queue_depth %llu\n", (unsigned long long)st.queued);
	metric(f, "cgpool_worker_writes_total", "counter", "Kernel writes the worker threads carried out.");
	fprintf(f, "cgpool_worker_writes_total %llu\n", (unsigned long long)st.completed);
}

static void retire_metrics(FILE *f, const struct metrics_in *in)
{
	struct retire_stats st;
	struct cg_dying d;
	double age = 0;
	const char *why;
	enum lru_reparenting lru = retire_lru_reparenting(in->retire, &why);

	retire_get_stats(in->retire, &st);
	metric(f, "cgpool_retirements_total", "counter", "Slots retired, by verified outcome.");
	for (int o = 0; o < OUTCOME_N; o++)
		fprintf(f, "cgpool_retirements_total{outcome=\"%s\"} %llu\n", retire_outcome_name((enum retire_outcome)o),
			(unsigned long long)st.outcomes[o]);
	metric(f, "cgpool_retirements_resumed_total", "counter",
	       "Retirements a previous daemon left unfinished (killed), resumed or verified again at start.");
	fprintf(f, "cgpool_retirements_resumed_total %llu\n", (unsigned long long)st.resumed);
	metric(f, "cgpool_retirements_in_flight", "gauge", "Retirements queued, draining or being verified.");
	fprintf(f, "cgpool_retirements_in_flight %llu\n", (unsigned long long)st.in_flight);
	metric(f, "cgpool_pinned_bytes_total", "counter", "LRU bytes held by retired slots found pinned.");
	fprintf(f, "cgpool_pinned_bytes_total %llu\n", (unsigned long long)st.pinned_bytes);
	metric(f, "cgpool_kernel_write_max_seconds", "gauge", "Slowest single reclaim or rmdir write.");
	fprintf(f, "cgpool_kernel_write_max_seconds %.6f\n", st.max_write_ms / 1000);
	if ((in->dying ? dying_cache_get(in->dying, &d, &age) : cg_dying(pool_cg(in->pool), &d)) == 0) {
		metric(f, "cgpool_dying_memcgs", "gauge",
		       "Dying memory cgroups under the pool root (v1: machine-wide), at most about a second old.");
		fprintf(f, "cgpool_dying_memcgs %llu\n", (unsigned long long)d.count);
		metric(f, "cgpool_dying_memcgs_age_seconds", "gauge", "Age of that reading.");
		fprintf(f, "cgpool_dying_memcgs_age_seconds %.3f\n", age);
	}
	metric(f, "cgpool_lru_reparenting", "gauge", "The LRU reparenting verdict of the probe (value label).");
	fprintf(f, "cgpool_lru_reparenting{value=\"%s\"} 1\n", lru_reparenting_name(lru));
}

/* a label value: \\, \" and \n escaped */
static void label(FILE *f, const char *name, const char *v)
{
	fprintf(f, "{%s=\"", name);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
	fputs("\"}", f);
}

static void subtree_series(FILE *f, json_t *census)
{
	json_t *e;
	size_t i;

	metric(f, "cgpool_node_dying_memcgs", "gauge",
	       "The machine's dying memory cgroups by the subtree they were removed from (the largest, then "
	       "\"other\"; cgroup v1: \"unattributed\"); the sum is the machine's total.");
	if (json_is_string(json_object_get(census, "subtrees_note"))) {
		fputs("cgpool_node_dying_memcgs{subtree=\"unattributed\"}", f);
		fprintf(f, " %lld\n", (long long)json_integer_value(json_object_get(census, "total")));
		return;
	}
	json_array_foreach(json_object_get(census, "subtrees"), i, e) {
		fputs("cgpool_node_dying_memcgs", f);
		label(f, "subtree", json_string_value(json_object_get(e, "path")));
		fprintf(f, " %lld\n", (long long)json_integer_value(json_object_get(e, "dying")));
	}
	fprintf(f, "cgpool_node_dying_memcgs{subtree=\"other\"} %lld\n",
		(long long)json_integer_value(json_object_get(census, "subtrees_other")));
	metric(f, "cgpool_node_dying_memory_bytes", "gauge",
	       "Memory charged below a subtree outside its live children: its dying memory cgroups' (cgroup v2).");
	json_array_foreach(json_object_get(census, "subtrees"), i, e) {
		if (!json_is_integer(json_object_get(e, "memory_bytes")))
			continue;
		fputs("cgpool_node_dying_memory_bytes", f);
		label(f, "subtree", json_string_value(json_object_get(e, "path")));
		fprintf(f, " %lld\n", (long long)json_integer_value(json_object_get(e, "memory_bytes")));
	}
}

/* what cgpool saved, and the machine's census of dying memcgs */
static void node_metrics(FILE *f, const struct metrics_in *in)
{
	struct state_totals t;
	double age = 0;
	json_t *c = in->census ? census_cache_get(in->census, &age) : NULL;

	pool_totals(in->pool, &t);
	metric(f, "cgpool_runs_placed_total", "counter", "Runs started in slots over the node's history (kept across restarts).");
	fprintf(f, "cgpool_runs_placed_total %llu\n", (unsigned long long)t.runs_placed);
	metric(f, "cgpool_slot_cgroups_created_total", "counter",
	       "Slot cgroups made over the node's history; runs placed beyond them made no memory cgroup.");
	fprintf(f, "cgpool_slot_cgroups_created_total %llu\n", (unsigned long long)t.slot_cgroups);
	if (!c || !json_is_integer(json_object_get(c, "total")))
		return;
	subtree_series(f, c);
	if (json_is_integer(json_object_get(c, "memcg_ids_left"))) {
		metric(f, "cgpool_node_memcg_ids_left", "gauge", "Memory cgroup IDs left of 65535 (cgpoolctl dying says how counted).");
		fprintf(f, "cgpool_node_memcg_ids_left %lld\n", (long long)json_integer_value(json_object_get(c, "memcg_ids_left")));
	}
	if (json_is_integer(json_object_get(c, "percpu_bytes"))) {
		metric(f, "cgpool_node_percpu_bytes", "gauge", "The machine's per-CPU memory (/proc/meminfo Percpu).");
		fprintf(f, "cgpool_node_percpu_bytes %lld\n", (long long)json_integer_value(json_object_get(c, "percpu_bytes")));
	}
	metric(f, "cgpool_node_census_age_seconds", "gauge", "Age of the census the cgpool_node_ series come from.");
	fprintf(f, "cgpool_node_census_age_seconds %.3f\n", age);
	metric(f, "cgpool_node_census_complete", "gauge", "1 when the census could read every cgroup it looked at.");
	fprintf(f, "cgpool_node_census_complete %d\n", json_is_true(json_object_get(c, "complete")) ? 1 : 0);
}

char *metrics_text(const struct metrics_in *in)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	pool_metrics(f, in);
	if (in->stall)
		stall_metrics(f, in->stall);
	if (in->work)
		work_metrics(f, in->work);
	if (in->retire)
		retire_metrics(f, in);
	node_metrics(f, in);
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}
