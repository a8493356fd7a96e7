/* fuzz_conf.c - the config parser on arbitrary bytes: errors, never crashes,
 * and whatever loads prints back to something that loads again */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "conf.h"
#include "fuzz.h"

static int load_fd(int fd, struct conf **c, struct conf_errors *errs)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return conf_load(path, true, c, errs);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conf_errors errs = { 0 }, errs2 = { 0 };
	struct conf *c = NULL, *c2 = NULL;
	int fd = memfd_create("cgpool-fuzz-conf", MFD_CLOEXEC), fd2;
	FILE *f;

	if (fd < 0 || write(fd, data, size) != (ssize_t)size)
		abort();
	if (load_fd(fd, &c, &errs) == 0) {
		fd2 = memfd_create("cgpool-fuzz-conf2", MFD_CLOEXEC);
		f = fdopen(dup(fd2), "w");
		if (!f || conf_print(c, f) < 0)
			abort();
		fclose(f);
		if (load_fd(fd2, &c2, &errs2) != 0)
			abort(); /* printed config that does not load again */
		conf_free(c2);
		close(fd2);
	}
	conf_free(c);
	conf_errors_free(&errs);
	conf_errors_free(&errs2);
	close(fd);
	return 0;
}
