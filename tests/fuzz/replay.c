/* replay.c - run a fuzz target over every file of its corpus (make check).
 * Usage: replay [DIR...]; without arguments $top_srcdir/tests/fuzz/corpus/NAME,
 * NAME being compiled in as FUZZ_CORPUS. */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "fuzz.h"
#include "util.h"

#define REPLAY_MAX_INPUT (1024 * 1024)

static int replay_dir(const char *dir, unsigned *n)
{
	static char buf[REPLAY_MAX_INPUT];
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d) {
		perror(dir);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		ssize_t len;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		len = file_read(path, buf, sizeof(buf));
		if (len < 0)
			continue;
		LLVMFuzzerTestOneInput((const uint8_t *)buf, (size_t)len);
		(*n)++;
	}
	closedir(d);
	return 0;
}

int main(int argc, char **argv)
{
	const char *top = getenv("top_srcdir");
	char dir[PATH_MAX];
	unsigned n = 0;

	if (argc > 1) {
		for (int i = 1; i < argc; i++)
			if (replay_dir(argv[i], &n) < 0)
				return 99;
	} else {
		snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top ? top : ".", FUZZ_CORPUS);
		if (replay_dir(dir, &n) < 0)
			return 99;
	}
	printf("%s: %u inputs replayed, none crashed\n", argv[0], n);
	return n ? 0 : 99;
}
