//go:build ignore

// (The constraint above keeps the go command from treating this file as a
// cgo source of package fakenvml, which embeds it and compiles it with gcc.)

/*
 * fakenvml.c: a stand-in for libnvidia-ml.so.1, so that the tests of
 * instrument/gpumem and of the packages that read GPU memory through it
 * (run/decodebench, outside) run on a machine with no GPU and no
 * driver. Build and use it through package memprobe/internal/fakenvml
 * (fakenvml.Build, fakenvml.Use), which compiles it with gcc once per set
 * of defines; by hand:
 *
 *   gcc -shared -fPIC -o libnvidia-ml.so.1 fakenvml.c
 *
 * It exports exactly the entry points gpumem resolves (the versioned
 * names a current driver has):
 *
 *   nvmlInit_v2, nvmlShutdown, nvmlErrorString,
 *   nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2,
 *   nvmlDeviceGetName, nvmlDeviceGetMemoryInfo,
 *   nvmlDeviceGetComputeRunningProcesses_v3,
 *   nvmlDeviceGetUtilizationRates (unless FAKENVML_OMIT_UTILIZATION),
 *   nvmlDeviceGetProcessUtilization (unless
 *   FAKENVML_OMIT_PROCESS_UTILIZATION)
 *
 * Behaviour comes from the environment, read at nvmlInit_v2 (so set it
 * before gpumem.Open; a later Open re-reads it only once every earlier
 * one is closed, as NVML's init is reference counted):
 *
 *   FAKENVML_INIT_ERROR=code   nvmlInit_v2 fails with this nvmlReturn_t.
 *   FAKENVML_DEVICES=n         number of GPUs (default 1, at most 8).
 *   FAKENVML_TOTAL_BYTES=n     memory of each GPU (default 80 GiB).
 *   FAKENVML_PROC_ERROR=code   nvmlDeviceGetComputeRunningProcesses_v3
 *                              fails with this code.
 *   FAKENVML_PROC_BYTES_FILE=path
 *       the compute processes, re-read on every process query so a test
 *       can change them over time (replace the file by rename to keep each
 *       read whole). One process per line: "pid bytes [gpu]", gpu 0 if
 *       left out; bytes "na" means NVML_VALUE_NOT_AVAILABLE. A missing
 *       file means no processes.
 *   FAKENVML_UTIL_FILE=path
 *       each GPU's utilization, re-read on every nvmlDeviceGetUtilizationRates
 *       (replace it by rename, as the process file). One GPU per line:
 *       "index gpuPct memPct". A GPU with no line, or no file at all,
 *       gives NVML_ERROR_NOT_SUPPORTED, as a MIG instance or a product
 *       without the counters does.
 *   FAKENVML_PROC_UTIL_FILE=path
 *       the driver's buffer of per-process utilization samples, re-read on
 *       every nvmlDeviceGetProcessUtilization (replace it by rename). One
 *       sample per line: "gpu pid timeStampUs smUtil memUtil [encUtil
 *       decUtil]". The call returns the GPU's samples stamped after its
 *       lastSeenTimeStamp, in file order, and NVML_ERROR_NOT_FOUND when
 *       there is none (no file, or nothing new). The test chooses the
 *       timestamps (NVML's are CPU time in microseconds) and so which
 *       reading sees which sample. The driver keeps a sample only for a
 *       process with some non-zero utilization in its period; the fake
 *       returns what the file says, zeros included, so a test that models
 *       an idle process writes no line for it.
 *   FAKENVML_PROC_UTIL_ERROR=code
 *       nvmlDeviceGetProcessUtilization fails with this code (3,
 *       NVML_ERROR_NOT_SUPPORTED, as on a MIG instance).
 *   FAKENVML_FAKECUDA=path
 *       internal/fakecuda's library, if this process has loaded it: the
 *       process is listed on GPU 0 with fakecuda_process_bytes(0).
 *   FAKENVML_PID_OFFSET=n
 *       list that process under its PID plus n, as NVML lists a process
 *       in a container with its own PID namespace (by its host PID).
 *
 * Compile with -DFAKENVML_OMIT_UTILIZATION to leave
 * nvmlDeviceGetUtilizationRates out, and with
 * -DFAKENVML_OMIT_PROCESS_UTILIZATION to leave
 * nvmlDeviceGetProcessUtilization out, so a test can check that the
 * binding resolves each optionally.
 *
 * Each GPU's used memory (nvmlDeviceGetMemoryInfo) is a fixed 256 MiB
 * driver reservation plus its processes' bytes. Error strings end in
 * "(fakenvml)" so tests can tell them from any built-in text.
 * Not thread-safe: gpumem serialises its NVML calls.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_UNINITIALIZED = 1,
	NVML_ERROR_INVALID_ARGUMENT = 2,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NO_PERMISSION = 4,
	NVML_ERROR_ALREADY_INITIALIZED = 5,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_DRIVER_NOT_LOADED = 9,
	NVML_ERROR_GPU_IS_LOST = 15,
	NVML_ERROR_UNKNOWN = 999,
};

#define MAX_DEVICES 8
#define MAX_PROCS 64
#define MAX_UTIL_SAMPLES 256
#define RESERVED_BYTES (256ULL << 20)
#define NOT_AVAILABLE (~0ULL)

/* The layouts of nvml.h's nvmlMemory_t and nvmlProcessInfo_t (v2/v3). */
typedef struct {
	unsigned long long total;
	unsigned long long free;
	unsigned long long used;
} nvmlMemory_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

/* nvml.h's nvmlUtilization_t: percent of the past sample period during
 * which a kernel ran, and during which device memory was read or written. */
typedef struct {
	unsigned int gpu;
	unsigned int memory;
} nvmlUtilization_t;

/* nvml.h's nvmlProcessUtilizationSample_t (32 bytes on LP64: pid, 4
 * bytes of padding, then timeStamp at offset 8): one process's
 * utilization over one of the driver's sample periods, in percent, stamped
 * with the CPU time in microseconds. */
typedef struct {
	unsigned int pid;
	unsigned long long timeStamp;
	unsigned int smUtil;
	unsigned int memUtil;
	unsigned int encUtil;
	unsigned int decUtil;
} nvmlProcessUtilizationSample_t;
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "nvmlProcessUtilizationSample_t is not nvml.h's layout");

struct fake_device {
	unsigned int index;
};
typedef struct fake_device *nvmlDevice_t;

static struct fake_device devices[MAX_DEVICES];
static int init_count;
static unsigned int device_count;
static unsigned long long total_bytes;
static nvmlReturn_t proc_error;
static char proc_file[4096];
static char util_file[4096];
static char proc_util_file[4096];
static nvmlReturn_t proc_util_error;

struct proc {
	unsigned int pid;
	unsigned long long bytes;
	unsigned int gpu;
};

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	return (v && *v) ? strtol(v, NULL, 0) : def;
}

/* from_fakecuda is fakecuda_process_bytes of the stand-in CUDA driver
 * named by FAKENVML_FAKECUDA, when that library is loaded in this process:
 * this process is then listed on GPU 0 with the memory the stand-in
 * driver has handed it, as NVML lists a process with a CUDA context. */
static unsigned long long (*from_fakecuda)(int);

/* uncharged_fakecuda is fakecuda_uncharged_bytes of the same library:
 * memory its context holds that no process is charged, used all the same. */
static unsigned long long (*uncharged_fakecuda)(int);

/* read_procs fills out (at most MAX_PROCS) from FAKENVML_PROC_BYTES_FILE
 * and FAKENVML_FAKECUDA. */
static int read_procs(struct proc *out)
{
	FILE *f;
	char line[256], bytes[64];
	int n = 0;

	if (from_fakecuda) {
		unsigned long long b = from_fakecuda(0);
		if (b > 0) {
			const char *off = getenv("FAKENVML_PID_OFFSET");
			out[n].pid = (unsigned int)getpid() + (off ? (unsigned int)atoi(off) : 0);
			out[n].bytes = b;
			out[n].gpu = 0;
			n++;
		}
	}
	if (!proc_file[0] || !(f = fopen(proc_file, "r")))
		return n;
	while (n < MAX_PROCS && fgets(line, sizeof line, f)) {
		struct proc p = {0};
		int k = sscanf(line, "%u %63s %u", &p.pid, bytes, &p.gpu);
		if (k < 2)
			continue;
		p.bytes = strcmp(bytes, "na") == 0 ? NOT_AVAILABLE : strtoull(bytes, NULL, 0);
		out[n++] = p;
	}
	fclose(f);
	return n;
}

static int valid(nvmlDevice_t d)
{
	return d >= devices && d < devices + device_count;
}

const char *nvmlErrorString(nvmlReturn_t r)
{
	switch (r) {
	case NVML_SUCCESS: return "Success (fakenvml)";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized (fakenvml)";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument (fakenvml)";
	case NVML_ERROR_NOT_SUPPORTED: return "Not Supported (fakenvml)";
	case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions (fakenvml)";
	case NVML_ERROR_NOT_FOUND: return "Not Found (fakenvml)";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size (fakenvml)";
	case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded (fakenvml)";
	case NVML_ERROR_GPU_IS_LOST: return "GPU is lost (fakenvml)";
	default: return "Unknown Error (fakenvml)";
	}
}

nvmlReturn_t nvmlInit_v2(void)
{
	nvmlReturn_t e = (nvmlReturn_t)env_long("FAKENVML_INIT_ERROR", 0);
	const char *pf;
	long n;
	unsigned int i;

	if (e != NVML_SUCCESS)
		return e;
	if (init_count++ > 0) /* NVML's init is reference counted */
		return NVML_SUCCESS;
	n = env_long("FAKENVML_DEVICES", 1);
	device_count = n < 0 ? 0 : n > MAX_DEVICES ? MAX_DEVICES : (unsigned int)n;
	for (i = 0; i < MAX_DEVICES; i++)
		devices[i].index = i;
	total_bytes = (unsigned long long)env_long("FAKENVML_TOTAL_BYTES", 80L << 30);
	proc_error = (nvmlReturn_t)env_long("FAKENVML_PROC_ERROR", 0);
	pf = getenv("FAKENVML_PROC_BYTES_FILE");
	snprintf(proc_file, sizeof proc_file, "%s", pf ? pf : "");
	pf = getenv("FAKENVML_UTIL_FILE");
	snprintf(util_file, sizeof util_file, "%s", pf ? pf : "");
	pf = getenv("FAKENVML_PROC_UTIL_FILE");
	snprintf(proc_util_file, sizeof proc_util_file, "%s", pf ? pf : "");
	proc_util_error = (nvmlReturn_t)env_long("FAKENVML_PROC_UTIL_ERROR", 0);
	from_fakecuda = NULL;
	uncharged_fakecuda = NULL;
	pf = getenv("FAKENVML_FAKECUDA");
	if (pf && *pf) {
		void *h = dlopen(pf, RTLD_NOW | RTLD_NOLOAD);
		if (h) {
			from_fakecuda = (unsigned long long (*)(int))dlsym(h, "fakecuda_process_bytes");
			uncharged_fakecuda = (unsigned long long (*)(int))dlsym(h, "fakecuda_uncharged_bytes");
		}
	}
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlShutdown(void)
{
	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	init_count--;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = device_count;
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || index >= device_count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &devices[index];
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
	char buf[96];
	int n;

	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!valid(device) || !name)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = snprintf(buf, sizeof buf, "FakeNVML GPU %u", device->index);
	if ((unsigned int)n + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	memcpy(name, buf, (size_t)n + 1);
	return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *memory)
{
	struct proc procs[MAX_PROCS];
	int i, n;
	unsigned long long used = RESERVED_BYTES;

	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!valid(device) || !memory)
		return NVML_ERROR_INVALID_ARGUMENT;
	n = read_procs(procs);
	for (i = 0; i < n; i++)
		if (procs[i].gpu == device->index && procs[i].bytes != NOT_AVAILABLE)
			used += procs[i].bytes;
	if (uncharged_fakecuda && device->index == 0)
		used += uncharged_fakecuda(0);
	memory->total = total_bytes;
	memory->used = used < total_bytes ? used : total_bytes;
	memory->free = total_bytes - memory->used;
	return NVML_SUCCESS;
}

/*
 * Like NVML: if *infoCount is too small for the list (or infos is NULL and
 * there are processes), set *infoCount to the size needed and return
 * NVML_ERROR_INSUFFICIENT_SIZE; gpumem retries with a larger buffer.
 */
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos)
{
	struct proc procs[MAX_PROCS];
	unsigned int i, k = 0, mine = 0;
	int n;

	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!valid(device) || !infoCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (proc_error != NVML_SUCCESS)
		return proc_error;
	n = read_procs(procs);
	for (i = 0; i < (unsigned int)n; i++)
		if (procs[i].gpu == device->index)
			mine++;
	if (mine > *infoCount || (mine > 0 && !infos)) {
		*infoCount = mine;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	for (i = 0; i < (unsigned int)n; i++) {
		if (procs[i].gpu != device->index)
			continue;
		infos[k].pid = procs[i].pid;
		infos[k].usedGpuMemory = procs[i].bytes;
		infos[k].gpuInstanceId = 0xFFFFFFFFu;
		infos[k].computeInstanceId = 0xFFFFFFFFu;
		k++;
	}
	*infoCount = k;
	return NVML_SUCCESS;
}

#ifndef FAKENVML_OMIT_UTILIZATION
/*
 * The GPU's line in FAKENVML_UTIL_FILE, re-read on each call; no file, or
 * no line for the GPU, is NVML_ERROR_NOT_SUPPORTED (what NVML returns on a
 * MIG instance or a product without the counters). A later line for the
 * same GPU wins.
 */
nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *utilization)
{
	FILE *f;
	char line[256];
	unsigned int index, gpu, mem;
	nvmlReturn_t ret = NVML_ERROR_NOT_SUPPORTED;

	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!valid(device) || !utilization)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!util_file[0] || !(f = fopen(util_file, "r")))
		return NVML_ERROR_NOT_SUPPORTED;
	while (fgets(line, sizeof line, f)) {
		if (sscanf(line, "%u %u %u", &index, &gpu, &mem) != 3 || index != device->index)
			continue;
		utilization->gpu = gpu;
		utilization->memory = mem;
		ret = NVML_SUCCESS;
	}
	fclose(f);
	return ret;
}
#endif

#ifndef FAKENVML_OMIT_PROCESS_UTILIZATION
/*
 * read_proc_util fills out (at most MAX_UTIL_SAMPLES) with GPU gpu's
 * samples in FAKENVML_PROC_UTIL_FILE stamped after last_seen.
 */
static unsigned int read_proc_util(unsigned int gpu, unsigned long long last_seen, nvmlProcessUtilizationSample_t *out)
{
	FILE *f;
	char line[256];
	unsigned int n = 0;

	if (!proc_util_file[0] || !(f = fopen(proc_util_file, "r")))
		return 0;
	while (n < MAX_UTIL_SAMPLES && fgets(line, sizeof line, f)) {
		nvmlProcessUtilizationSample_t s = {0};
		unsigned int g;
		int k = sscanf(line, "%u %u %llu %u %u %u %u", &g, &s.pid, &s.timeStamp, &s.smUtil, &s.memUtil, &s.encUtil, &s.decUtil);
		if (k < 5 || g != gpu || s.timeStamp <= last_seen)
			continue;
		out[n++] = s;
	}
	fclose(f);
	return n;
}

/*
 * As nvml.h documents it: called with a NULL buffer, it sets
 * *processSamplesCount to the number of samples newer than
 * lastSeenTimeStamp and returns NVML_ERROR_INSUFFICIENT_SIZE; called with
 * a buffer of *processSamplesCount entries, it writes them and sets the
 * count written, or, if they do not fit (samples arrived between the
 * calls), sets the count needed and returns NVML_ERROR_INSUFFICIENT_SIZE.
 * No sample newer than lastSeenTimeStamp is NVML_ERROR_NOT_FOUND, whatever
 * the buffer.
 */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device, nvmlProcessUtilizationSample_t *utilization,
					     unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp)
{
	static nvmlProcessUtilizationSample_t samples[MAX_UTIL_SAMPLES];
	unsigned int n;

	if (init_count == 0)
		return NVML_ERROR_UNINITIALIZED;
	if (!valid(device) || !processSamplesCount)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (proc_util_error != NVML_SUCCESS)
		return proc_util_error;
	n = read_proc_util(device->index, lastSeenTimeStamp, samples);
	if (n == 0)
		return NVML_ERROR_NOT_FOUND;
	if (!utilization || *processSamplesCount < n) {
		*processSamplesCount = n;
		return NVML_ERROR_INSUFFICIENT_SIZE;
	}
	memcpy(utilization, samples, n * sizeof samples[0]);
	*processSamplesCount = n;
	return NVML_SUCCESS;
}
#endif
