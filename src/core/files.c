/* Directories for a command's outputs. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "fedc/core.h"

/* One directory: made, or already there as a directory. */
static fedc_status make_one(const char *path) {
    struct stat st;
    if (mkdir(path, 0777) == 0) return FEDC_OK;
    int err = errno;
    if (err == EEXIST && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return FEDC_OK;
    return fedc_error(FEDC_EIO, "%s: cannot create the directory: %s", path,
                      err == EEXIST ? "a file of that name is in the way" : strerror(err));
}

fedc_status fedc_make_dirs(const char *dir) {
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0) return fedc_error(FEDC_EINVAL, "make_dirs: the directory's name is empty");
    if (n >= sizeof path) return fedc_error(FEDC_EINVAL, "make_dirs: a path of %zu bytes is too long", n);
    memcpy(path, dir, n + 1);
    for (char *s = path + 1; *s; s++) { /* each parent in turn, as mkdir -p */
        if (*s != '/') continue;
        *s = '\0';
        fedc_status st = make_one(path);
        *s = '/';
        if (st) return st;
    }
    return make_one(path);
}
