/* cg_files.h - open cgroup files kept for the next access.
 *
 * A restart touches the same few files of its slot each time (cgroup.procs
 * in every hierarchy, cgroup.events, the memory counters); opening one walks
 * the whole path and costs more than the read or write itself. This keeps a
 * bounded set of them open, used least recently first out, with reads and
 * writes at offset 0 so every access sees the kernel's current text.
 *
 * Any thread: a lock guards the table, and an entry in use by one thread is
 * closed by the last user once another thread forgets it. A directory about
 * to be removed or made has its entries forgotten first, so no descriptor
 * outlives its cgroup for long and none points at an older cgroup of the
 * same name; a descriptor whose cgroup went away behind our back (ENODEV) is
 * dropped and the path opened again once. */
#ifndef CGPOOL_CG_FILES_H
#define CGPOOL_CG_FILES_H

#include <stddef.h>
#include <sys/types.h>

struct cg_files;

/* the number of descriptors kept open at most */
#define CG_FILES_MAX 512

int cg_files_new(struct cg_files **out);
void cg_files_free(struct cg_files *f);

/* one read of up to len-1 bytes at offset 0, NUL-terminated: the byte count
 * or -errno (like file_read). Whole for files the kernel prints whole at
 * each read (cgroup.events, the memory counters); of a longer seq_file (a
 * pid list) it may be the first part only. */
ssize_t cg_files_read(struct cg_files *f, const char *path, char *buf, size_t len);
/* one write of s at offset 0: 0 or -errno (like file_write_str) */
int cg_files_write(struct cg_files *f, const char *path, const char *s);
/* the files opened so far (each access the table did not hold, the open
 * succeeding) */
unsigned long cg_files_opened(struct cg_files *f);
/* close (or have the last user close) every file below dir */
void cg_files_forget(struct cg_files *f, const char *dir);

#endif
