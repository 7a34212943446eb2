/*
 * fi_shm.c: the counters' shared mapping (fi_shm.h).
 */
#include "fi_shm.h"

#include <errno.h>
#include <sys/mman.h>

int fi_shm_attach(int fd)
{
	struct fi_shm *shm = mmap(NULL, sizeof(*shm), PROT_READ | PROT_WRITE,
				  MAP_SHARED, fd, 0);

	if (shm == MAP_FAILED)
		return -errno;
	shm->magic = FI_SHM_MAGIC;
	shm->version = FI_SHM_VERSION;
	fi_counters_attach(&shm->counters);
	return 0;
}
